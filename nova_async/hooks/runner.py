"""Loading the enabled hook plugins at start-up and running their hooks at each hook point.

Loading is where a site's mistakes show, so each is a start-up error of one line naming the
plugin and why (HookLoadError, which the command prints without a traceback): an enabled
name no installed package offers, a plugin that fails to import, one written for another
hook API version, a hook point that is not an `async def`.

Running costs nothing while no enabled plugin defines the point: a call site hands over the
row (or a function that reads it, and a function for any detail that costs something to
make) and the payload is built only when some hook wants it. Pre hooks run in the order `[hooks] enabled` names their plugins and the first
veto wins; a pre hook that fails (anything but a veto), or does not answer within
`[hooks] pre_timeout`, refuses the step too, as a site's rule that cannot be checked must
not be taken as passed. Post hooks each get
`[hooks] post_timeout` seconds; what they raise, or their running late, is logged and
changes nothing. Hooks are awaited where they are called (no task of their own), so a
post hook delays what follows it by at most that bound."""

from __future__ import annotations

import asyncio
import importlib.metadata
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import msgspec
import structlog

from nova_async.bus import Notification
from nova_async.common import errors
from nova_async.hooks import HOOK_API_VERSION, HOOK_POINTS, HookVeto
from nova_async.notifications import payloads
from nova_async.notifications.feed import Feed

log = structlog.get_logger("hooks")

GROUP = "nova_async.hooks"
Hook = Callable[..., Awaitable[None]]
# What a call site hands over: an instance row (or rows), or a function (async or not)
# giving them.
Rows = Mapping[str, Any] | Sequence[Mapping[str, Any]]
RowSource = Rows | Callable[[], Rows | None | Awaitable[Rows | None]]


class HookLoadError(errors.NovaAsyncError):
    """An enabled hook plugin that cannot be used; the service does not start."""

    code = "hook_load_error"


class Hooks:
    """The enabled plugins' hooks by point, and how each point's hooks are run."""

    def __init__(self, by_point: dict[str, list[tuple[str, Hook]]] | None = None,
                 post_timeout: float = 5.0, pre_timeout: float = 30.0) -> None:
        self.by_point = by_point or {}
        self.post_timeout = post_timeout
        self.pre_timeout = pre_timeout

    async def pre(self, point: str, rows: RowSource, **details: Any) -> None:
        """Run the point's hooks; HookVeto when one refuses."""
        hooks = self.by_point.get(point)
        if not hooks:
            return
        details = _made(details)
        for payload in await _payloads(rows):
            for plugin, hook in hooks:
                try:
                    async with asyncio.timeout(self.pre_timeout):
                        await hook(payload, **details)
                except HookVeto as veto:
                    log.info("hook vetoed", plugin=plugin, point=point, reason=veto.reason)
                    raise
                except TimeoutError:
                    log.error("hook did not answer in time; refusing the step", plugin=plugin, point=point,
                              seconds=self.pre_timeout)
                    raise HookVeto(f"hook {plugin}.{point} did not answer within {self.pre_timeout:g} s") from None
                except Exception as exc:
                    log.exception("hook failed; refusing the step", plugin=plugin, point=point)
                    raise HookVeto(f"hook {plugin}.{point} failed: {type(exc).__name__}: {exc}") from exc

    async def post(self, point: str, rows: RowSource, **details: Any) -> None:
        """Run the point's hooks, each within post_timeout; nothing they do propagates."""
        hooks = self.by_point.get(point)
        if not hooks:
            return
        try:
            built, details = await _payloads(rows), _made(details)
        except Exception:
            log.exception("could not read what post hooks were to be given", point=point)
            return
        for payload in built:
            for plugin, hook in hooks:
                await self._observe(plugin, point, hook(payload, **details))


    async def notified(self, note: Notification) -> None:
        """The `notification` hooks, given a notification's envelope: observers, as post hooks."""
        envelope = note.envelope()
        for plugin, hook in self.by_point.get("notification", ()):
            await self._observe(plugin, "notification", hook(envelope), event_type=note.event_type)

    async def _observe(self, plugin: str, point: str, call: Awaitable[None], **about: Any) -> None:
        """An observing hook's call, within post_timeout; what it raises, or its lateness, is
        logged and goes no further."""
        try:
            async with asyncio.timeout(self.post_timeout):
                await call
        except TimeoutError:
            log.warning("post hook did not finish in time; abandoned", plugin=plugin, point=point,
                        seconds=self.post_timeout, **about)
        except Exception:
            log.exception("post hook failed; ignored", plugin=plugin, point=point, **about)

    def follow(self, feed: Feed | None) -> None:
        """Hand the `notification` hooks every notification `feed` hears; nothing to do (and
        nothing built) when no enabled plugin has one."""
        if feed is not None and self.by_point.get("notification"):
            feed.subscribe(self.notified)


NO_HOOKS = Hooks()


async def _payloads(rows: RowSource) -> list[dict[str, Any]]:
    if callable(rows):
        rows = rows()
        if inspect.isawaitable(rows):
            rows = await rows
    if rows is None:
        return []
    if not isinstance(rows, (list, tuple)):  # one row (an asyncpg Record is no Mapping)
        rows = [rows]
    return [payloads.instance(row) for row in rows]


def _made(details: dict[str, Any]) -> dict[str, Any]:
    return {k: v() if callable(v) else v for k, v in details.items()}


class _Planned(dict):
    """A row not written yet: the columns known, None for any other a payload reads."""

    def __missing__(self, key: str) -> None:
        return None


def planned(**columns: Any) -> Mapping[str, Any]:
    """An instance that does not exist yet (pre_create's), as a row of `instances`, so that its
    payload has the shape every other hook's has."""
    return _Planned(columns)


def flavor(f: Any) -> dict[str, Any]:
    """A flavor (an instance's copy, scheduler.messages.Flavor) as Nova's FlavorPayload."""
    return payloads.flavor_payload(msgspec.to_builtins(f))


def load(enabled: Sequence[str], post_timeout: float = 5.0, pre_timeout: float = 30.0) -> Hooks:
    """The plugins `enabled` names, from the installed packages' entry points."""
    if not enabled:
        return NO_HOOKS
    offered: dict[str, list[importlib.metadata.EntryPoint]] = {}
    for ep in importlib.metadata.entry_points(group=GROUP):
        offered.setdefault(ep.name, []).append(ep)
    by_point: dict[str, list[tuple[str, Hook]]] = {}
    for name in dict.fromkeys(enabled):
        for point, hook in _plugin_hooks(name, offered.get(name, [])).items():
            by_point.setdefault(point, []).append((name, hook))
    log.info("hook plugins loaded", plugins=",".join(dict.fromkeys(enabled)),
             points=",".join(p for p in HOOK_POINTS if p in by_point))
    return Hooks(by_point, post_timeout, pre_timeout)


def _plugin_hooks(name: str, found: list[importlib.metadata.EntryPoint]) -> dict[str, Hook]:
    def refuse(why: str) -> HookLoadError:
        return HookLoadError(f"hook plugin {name!r}: {why}")

    if not found:
        raise refuse(f"no installed package offers it (entry-point group {GROUP}); "
                     "install it or take it out of [hooks] enabled")
    if len({ep.value for ep in found}) > 1:
        raise refuse("more than one installed package offers it: " + ", ".join(ep.value for ep in found))
    try:
        plugin = found[0].load()
    except Exception as exc:
        raise refuse(f"cannot import {found[0].value}: {type(exc).__name__}: {exc}") from None
    version = getattr(plugin, "hook_api_version", None)
    if version is None:
        raise refuse(f"it does not say which hook API version it was written for (hook_api_version; "
                     f"this nova-async speaks {HOOK_API_VERSION})")
    if version != HOOK_API_VERSION:
        raise refuse(f"written for hook API version {version}; this nova-async speaks {HOOK_API_VERSION}")
    hooks = {point: getattr(plugin, point) for point in HOOK_POINTS if hasattr(plugin, point)}
    for point, hook in hooks.items():
        if not inspect.iscoroutinefunction(hook):
            raise refuse(f"{point} must be an async function")
    if not hooks:
        raise refuse("it defines none of the hook points (" + ", ".join(HOOK_POINTS) + ")")
    return hooks
