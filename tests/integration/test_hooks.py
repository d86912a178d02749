"""Hook plugins around a server's life, through every role in one event loop: the example
plugins (examples/site_hooks, installed by `make test`) and plugins a test installs the same
way (tests/hook_plugins.py), enabled by name in [hooks] as a site enables them.

A veto in the API is a 400 with the hook's reason and nothing written; a veto on the compute
host is ERROR with the reason as the fault, its claim and ports given back, never another
host tried; post hooks see what happened, and one that fails or hangs changes nothing."""

from __future__ import annotations

import json

from tests import hook_plugins
from tests.integration.test_server_lifecycle import V, boot_body, ok, settled, show_server, sim_cloud, wait_status
from tests.waiting import until

NAMING_REASON = "Server name 'Bad_Name' does not follow this site's naming rule: it must match [a-z][a-z0-9-]{0,62}"

RECORDER = """
    from nova_async.hooks import HOOK_API_VERSION, HookVeto
    hook_api_version = HOOK_API_VERSION
    seen = []

    def frozen(payload):
        return payload["nova_object.data"]["metadata"].get("frozen") == "yes"

    async def pre_delete(payload):
        if frozen(payload):
            raise HookVeto("frozen servers are kept")

    async def pre_resize(payload, flavor):
        if frozen(payload):
            raise HookVeto(f"frozen servers stay {payload['nova_object.data']['display_name']}'s size, "
                           f"not {flavor['nova_object.data']['name']}")

    async def pre_action(payload, action):
        if frozen(payload):
            raise HookVeto(f"frozen servers may not {action}")

    async def pre_build(payload):
        if payload["nova_object.data"]["display_name"] == "no-build":
            raise HookVeto("no-build: this site builds no such server")

    async def network_info(payload, network_info):
        seen.append(("network_info", payload["nova_object.data"]["uuid"], network_info))
        if payload["nova_object.data"]["display_name"] == "no-net":
            raise HookVeto("no-net: its ports are not allowed here")

    async def post_create(payload): seen.append(("post_create", payload["nova_object.data"]["uuid"], None))
    async def post_build(payload): seen.append(("post_build", payload["nova_object.data"]["uuid"],
                                                payload["nova_object.data"]["state"]))
    async def post_action(payload, action): seen.append(("post_action", payload["nova_object.data"]["uuid"], action))
    async def post_delete(payload): seen.append(("post_delete", payload["nova_object.data"]["uuid"], None))
    """

FAULTY = """
    import asyncio
    hook_api_version = 1
    async def post_create(payload): raise RuntimeError("the CMDB is down")
    async def post_build(payload): await asyncio.Event().wait()   # never returns
    async def post_delete(payload): raise RuntimeError("the CMDB is still down")
    """


async def boot(h, name: str, headers=None, **extra) -> str:
    created = await ok(await h.http.post(V + "/servers", headers=headers or h.alice,
                                         json=boot_body(h, name=name, **extra)), 202)
    return created["server"]["id"]


async def instances_used(h) -> int:
    limits = await ok(await h.http.get(V + "/limits", headers=h.alice), 200)
    return limits["limits"]["absolute"]["totalInstancesUsed"]


async def test_an_api_veto_is_a_400_with_the_reason_and_nothing_written(pool, tmp_path):
    async with sim_cloud(pool, tmp_path, hooks={"enabled": "site_naming"}) as h:
        resp = await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name="Bad_Name"))
        assert resp.status == 400
        assert await resp.json() == {"badRequest": {"code": 400, "message": NAMING_REASON}}
        assert await h.cell1.fetchval("SELECT count(*) FROM instances") == 0
        assert await h.pool.fetchval("SELECT count(*) FROM instance_mappings") == 0
        assert await instances_used(h) == 0
        # A name that keeps the rule boots as ever.
        server = await wait_status(h, await boot(h, "web-1"), "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
        assert await instances_used(h) == 1


async def test_a_compute_veto_is_error_with_the_reason_and_everything_given_back(pool, tmp_path, monkeypatch):
    recorder = hook_plugins.install(monkeypatch, tmp_path / "plugins", "recorder", RECORDER)
    async with sim_cloud(pool, tmp_path / "cloud", hooks={"enabled": "recorder"}) as h:
        for name, reason in (("no-build", "no-build: this site builds no such server"),
                             ("no-net", "no-net: its ports are not allowed here")):
            sid = await boot(h, name)
            server = await wait_status(h, sid, "ERROR", "ACTIVE")
            assert server["status"] == "ERROR" and server["fault"]["message"] == reason
            assert (await ok(await h.http.get(f"/placement/allocations/{sid}", headers=h.admin), 200)) \
                ["allocations"] == {}
            ports = await ok(await h.http.get(f"/network/v2.0/ports?device_id={sid}", headers=h.admin), 200)
            assert ports["ports"] == []
            # One host tried: a site's rule would refuse the build on any other.
            actions = await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice), 200)
            [create] = actions["instanceActions"]
            detail = await ok(await h.http.get(
                f"{V}/servers/{sid}/os-instance-actions/{create['request_id']}", headers={
                    **h.alice, "OpenStack-API-Version": "compute 2.51"}), 200)
            builds = [e for e in detail["instanceAction"]["events"] if e["event"] == "compute_build_and_run_instance"]
            assert [e["result"] for e in builds] == ["Error"]
        seen = hook_plugins.module(recorder).seen
        # network_info saw the ports it was given before they went: the no-net server's one port.
        [(_, _, network_info)] = [s for s in seen if s[0] == "network_info"]
        assert [sorted(vif) for vif in network_info] == [
            sorted(["port_id", "network_id", "network_name", "mac_address", "ips", "bridge", "tap", "mtu"])]
        assert not [s for s in seen if s[0] == "post_build"]
        all_ports = await ok(await h.http.get("/network/v2.0/ports", headers=h.admin), 200)
        assert all_ports["ports"] == []


async def test_post_hooks_observe_and_a_failing_or_hung_one_changes_nothing(pool, tmp_path, monkeypatch):
    recorder = hook_plugins.install(monkeypatch, tmp_path / "plugins", "recorder", RECORDER)
    hook_plugins.install(monkeypatch, tmp_path / "plugins", "faulty", FAULTY)
    build_log = tmp_path / "builds.jsonl"
    monkeypatch.setenv("SITE_HOOKS_BUILD_LOG", str(build_log))
    async with sim_cloud(pool, tmp_path / "cloud", hooks={
            "enabled": "faulty,recorder,site_build_log", "post_timeout": 0.5}) as h:
        sid = await boot(h, "web-1")
        server = await wait_status(h, sid, "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
        # The build's post hooks run once it is ACTIVE, the hung one for its post_timeout
        # first (enabled order); the example's, named last, writes the line.
        await until(lambda: build_log.exists() and build_log.read_text(), what="the build logged")
        assert (await show_server(h, sid))["status"] == "ACTIVE"
        await ok(await h.http.post(f"{V}/servers/{sid}/action", headers=h.alice, json={"os-stop": None}), 202)
        await wait_status(h, sid, "SHUTOFF")
        assert (await h.http.delete(f"{V}/servers/{sid}", headers=h.alice)).status == 204
        await wait_status(h, sid, "GONE")
        # post_action and post_delete run on the host once it has finished, after the
        # server shows the outcome.
        recorded = hook_plugins.module(recorder).seen
        await until(lambda: any(point == "post_delete" for point, _, _ in recorded), what="post_delete run")

        seen = [(point, uuid, detail) for point, uuid, detail in hook_plugins.module(recorder).seen
                if point != "network_info"]
        assert seen == [("post_create", sid, None), ("post_build", sid, "active"), ("post_action", sid, "stop"),
                        ("post_delete", sid, None)]
        [line] = build_log.read_text().splitlines()
        logged = json.loads(line)["payload"]
        assert logged["nova_object.name"] == "InstanceActionPayload"
        assert (logged["nova_object.data"]["uuid"], logged["nova_object.data"]["display_name"],
                logged["nova_object.data"]["state"]) == (sid, "web-1", "active")
        assert logged["nova_object.data"]["host"] in ("sim-1", "sim-2")


async def test_delete_resize_and_power_vetoes_leave_the_server_as_it_was(pool, tmp_path, monkeypatch):
    hook_plugins.install(monkeypatch, tmp_path / "plugins", "recorder", RECORDER)
    async with sim_cloud(pool, tmp_path / "cloud", hooks={"enabled": "recorder"}) as h:
        bigger = (await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": "m1.medium", "ram": 2048, "vcpus": 2, "disk": 2}}), 200))["flavor"]["id"]
        sid = await boot(h, "keeper", metadata={"frozen": "yes"})
        assert (await wait_status(h, sid, "ACTIVE", "ERROR"))["status"] == "ACTIVE"

        async def refused(method: str, path: str, body: dict | None, reason: str) -> None:
            resp = await h.http.request(method, V + path, headers=h.alice, json=body)
            assert resp.status == 400
            assert await resp.json() == {"badRequest": {"code": 400, "message": reason}}

        await refused("DELETE", f"/servers/{sid}", None, "frozen servers are kept")
        await refused("POST", f"/servers/{sid}/action", {"resize": {"flavorRef": bigger}},
                      "frozen servers stay keeper's size, not m1.medium")
        for action, op in (({"os-stop": None}, "stop"), ({"reboot": {"type": "HARD"}}, "reboot"),
                           ({"pause": None}, "pause"), ({"suspend": None}, "suspend")):
            await refused("POST", f"/servers/{sid}/action", action, f"frozen servers may not {op}")
        server = await settled(h, sid)
        assert (server["status"], server["flavor"]["original_name"]) == ("ACTIVE", "m1.small")
        actions = await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice), 200)
        assert [a["action"] for a in actions["instanceActions"]] == ["create"]

        # The same requests for a server the rule does not hold pass through.
        other = await boot(h, "mover")
        assert (await wait_status(h, other, "ACTIVE", "ERROR"))["status"] == "ACTIVE"
        await ok(await h.http.post(f"{V}/servers/{other}/action", headers=h.alice,
                                   json={"resize": {"flavorRef": bigger}}), 202)
        assert (await settled(h, other))["status"] == "VERIFY_RESIZE"
        assert (await h.http.delete(f"{V}/servers/{other}", headers=h.alice)).status == 204
        await wait_status(h, other, "GONE")
