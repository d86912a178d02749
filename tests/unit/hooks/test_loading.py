"""Which hook plugins load, and the one-line start-up errors for those that cannot: found
through the installed packages' entry points (the example plugins `make test` installs, and
plugins a test installs the same way), never through a registry of our own."""

from __future__ import annotations

import asyncio
import importlib.metadata

import pytest

from nova_async.hooks import HOOK_API_VERSION, HookVeto
from nova_async.hooks.runner import NO_HOOKS, HookLoadError, Hooks, load
from tests import hook_plugins
from tests.waiting import until


def test_an_installed_plugin_loads_only_when_enabled():
    installed = {ep.name for ep in importlib.metadata.entry_points(group="nova_async.hooks")}
    assert {"site_naming", "site_build_log"} <= installed
    assert load(()).by_point == {}
    assert set(load(["site_naming"]).by_point) == {"pre_create"}
    both = load(["site_naming", "site_build_log"])
    assert {point: [name for name, _ in hooks] for point, hooks in both.by_point.items()} == {
        "pre_create": ["site_naming"], "post_build": ["site_build_log"]}


def refusal(enabled: list[str]) -> str:
    with pytest.raises(HookLoadError) as caught:
        load(enabled)
    assert "\n" not in caught.value.message
    return caught.value.message


def test_an_enabled_name_no_package_offers_is_refused():
    assert refusal(["site_naming", "no_such_plugin"]) == (
        "hook plugin 'no_such_plugin': no installed package offers it (entry-point group nova_async.hooks); "
        "install it or take it out of [hooks] enabled")


def test_a_plugin_written_for_another_version_is_refused(monkeypatch, tmp_path):
    hook_plugins.install(monkeypatch, tmp_path, "future", f"""
        hook_api_version = {HOOK_API_VERSION + 1}
        async def pre_create(payload): pass
        """)
    assert refusal(["future"]) == (f"hook plugin 'future': written for hook API version {HOOK_API_VERSION + 1}; "
                                   f"this nova-async speaks {HOOK_API_VERSION}")


def test_a_plugin_that_does_not_say_its_version_is_refused(monkeypatch, tmp_path):
    hook_plugins.install(monkeypatch, tmp_path, "unversioned", "async def pre_create(payload): pass\n")
    assert "does not say which hook API version" in refusal(["unversioned"])


def test_a_plugin_that_fails_to_import_is_refused(monkeypatch, tmp_path):
    module = hook_plugins.install(monkeypatch, tmp_path, "broken", "import no_such_module_anywhere\n")
    assert refusal(["broken"]) == (f"hook plugin 'broken': cannot import {module}: ModuleNotFoundError: "
                                   "No module named 'no_such_module_anywhere'")


def test_a_hook_that_is_not_async_is_refused(monkeypatch, tmp_path):
    hook_plugins.install(monkeypatch, tmp_path, "blocking", """
        hook_api_version = 1
        def pre_delete(payload): pass
        """)
    assert refusal(["blocking"]) == "hook plugin 'blocking': pre_delete must be an async function"


def test_a_plugin_with_no_hook_point_is_refused(monkeypatch, tmp_path):
    hook_plugins.install(monkeypatch, tmp_path, "empty", "hook_api_version = 1\nasync def pre_boot(payload): pass\n")
    assert "defines none of the hook points" in refusal(["empty"])


ROW = {"uuid": "5b1c5c40-6c50-4b5c-9d1b-0c1f3a5e7d11", "display_name": "Bad_Name", "project_id": "p",
       "user_id": "u", "vm_state": "building", "metadata": {}}


async def test_no_hook_for_a_point_reads_nothing():
    def unread():
        raise AssertionError("the row was read with no hook to give it to")

    await NO_HOOKS.pre("pre_create", unread)
    await load(["site_naming"]).post("post_build", unread, flavor=unread)


async def test_the_example_naming_rule_vetoes_with_its_reason(monkeypatch):
    hooks = load(["site_naming"])
    with pytest.raises(HookVeto) as caught:
        await hooks.pre("pre_create", ROW)
    assert caught.value.reason == ("Server name 'Bad_Name' does not follow this site's naming rule: "
                                   "it must match [a-z][a-z0-9-]{0,62}")
    assert caught.value.status == 400
    await hooks.pre("pre_create", {**ROW, "display_name": "web-1"})
    monkeypatch.setenv("SITE_HOOKS_NAME_PATTERN", "[A-Z][a-z_A-Z]+")
    await hooks.pre("pre_create", ROW)


async def test_a_failing_pre_hook_refuses_and_post_hooks_never_propagate(monkeypatch, tmp_path):
    hook_plugins.install(monkeypatch, tmp_path, "faulty", """
        import asyncio
        hook_api_version = 1
        async def pre_delete(payload): raise RuntimeError("rule store unreachable")
        async def pre_action(payload, action): await asyncio.Event().wait()  # never answers
        async def post_delete(payload): raise RuntimeError("audit store unreachable")
        async def post_build(payload): await asyncio.Event().wait()  # never returns
        """)
    hooks: Hooks = load(["faulty"], post_timeout=0.05, pre_timeout=0.05)
    with pytest.raises(HookVeto) as caught:
        await hooks.pre("pre_delete", ROW)
    assert caught.value.reason == "hook faulty.pre_delete failed: RuntimeError: rule store unreachable"
    with pytest.raises(HookVeto) as caught:
        await hooks.pre("pre_action", ROW, action="stop")
    assert caught.value.reason == "hook faulty.pre_action did not answer within 0.05 s"
    await hooks.post("post_delete", ROW)
    await hooks.post("post_build", ROW)


async def test_notification_hooks_follow_the_feed_and_a_failing_one_changes_nothing(monkeypatch, tmp_path):
    from nova_async.bus import Notification
    from nova_async.bus.memory import MemoryBus
    from nova_async.notifications.feed import Feed

    watcher = hook_plugins.install(monkeypatch, tmp_path, "watcher", f"""
        hook_api_version = {HOOK_API_VERSION}
        heard = []
        async def notification(envelope): heard.append((envelope["event_type"], envelope["publisher_id"]))
        """)
    hook_plugins.install(monkeypatch, tmp_path, "grumpy", f"""
        hook_api_version = {HOOK_API_VERSION}
        async def notification(envelope): raise RuntimeError("not today")
        """)
    hooks = load(["grumpy", "watcher"])
    bus = MemoryBus()
    feed = Feed(bus)
    hooks.follow(feed)
    stopping = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(feed.run(stopping))
        await until(bus.heard, what="the feed listening")
        await bus.publish(Notification(event_type="instance.create.end", publisher_id="nova-compute:edge-1"))
        stopping.set()
    assert hook_plugins.module(watcher).heard == [("instance.create.end", "nova-compute:edge-1")]
