"""What every role is: a named class with `async def run(self)`, given its dependencies.

The supervisor (service.py) builds each configured role with the same `Deps`, mounts the
HTTP sub-application a role offers, runs every `run()` in one TaskGroup, waits for all
`ready` events, and on shutdown sets `stopping` and lets each role drain."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import structlog
from aiohttp import web

from nova_async.bus import Bus, Message
from nova_async.common import errors
from nova_async.common.context import RequestContext, admin_context
from nova_async.common.flags import Flag, first_set, set_within
from nova_async.common.tokens import TokenCodec
from nova_async.config import Settings
from nova_async.db.cells import Cells
from nova_async.db.pool import Pool
from nova_async.db.session_locks import SessionLocks
from nova_async.hooks.runner import NO_HOOKS, Hooks
from nova_async.notifications.feed import Feed

log = structlog.get_logger("role")


@dataclass(frozen=True)
class Deps:
    settings: Settings
    pool: Pool          # the API database
    bus: Bus
    tokens: TokenCodec
    cells: Cells                # the cell databases, where instances live
    hooks: Hooks = NO_HOOKS     # the enabled hook plugins' ([hooks] enabled)
    # what this process does with the notifications it hears: subscribe() to observe them
    feed: Feed | None = None
    # locks that end with this process (db/session_locks.py): work one copy of a role does at
    # a time, when several copies run on several machines
    locks: SessionLocks | None = None

    @property
    def state_dir(self) -> Path:
        return self.settings.state_path


MessageHandler = Callable[[Message, RequestContext], Awaitable[Message | None]]


class Role:
    name: str = "role"
    # The bus topic this role answers on, if any; `handlers` maps message types to methods.
    topic: str = ""
    # Shutdown order: lower tiers stop first. Roles that take work (api, conductor, compute)
    # stop before the services that work calls (scheduler, then placement/network/image).
    stop_tier: int = 2

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.settings = deps.settings
        self.pool = deps.pool
        self.cells = deps.cells
        self.bus = deps.bus
        self.ready = asyncio.Event()
        self.stopping = Flag()
        self.handlers: dict[type[Message], MessageHandler] = {}

    def http(self) -> tuple[str, web.Application] | None:
        """The (path prefix, sub-application) this role serves on the shared port, if any."""
        return None

    def root_routes(self) -> list[web.RouteDef]:
        """Routes this role answers on the port's root application, outside its prefix: no
        token, no fault format of its own: identity's `/`, the compute API's dashboard files."""
        return []

    async def run(self) -> None:
        """Serve until `stopping` is set, then finish in-flight work and return."""
        self.ready.set()
        if self.topic:
            await self.serve(self.topic, self.dispatch)
        else:
            await self.stopping.wait()

    async def dispatch(self, msg: Message, context: RequestContext | None) -> Message | None:
        """Hand one bus message to the method registered for its type."""
        handler = self.handlers.get(type(msg))
        if handler is None:
            raise errors.InvalidInput(f"{self.name} does not handle {type(msg).__name__}")
        ctx = context or admin_context()
        if ctx.request_id:  # each message runs in its own task, so this stays with it
            structlog.contextvars.bind_contextvars(request_id=ctx.request_id)
        return await handler(msg, ctx)

    async def serve(self, topic: str, handler, *, concurrency: int = 64) -> None:
        """Consume `topic` until this role is told to stop, then finish what is in flight."""
        await self.bus.consume(topic, handler, concurrency=concurrency, until=self.stopping)

    async def after_each_return(self, resume: Callable[[], Awaitable[None]]) -> None:
        """Run `resume` each time the database or the bus's broker comes back after an outage,
        until the role stops. Work an outage cut off failed where it was (nothing retries a
        statement whose connection broke, nor a message the broker never took); `resume` is
        what the role does at start to pick up work a crash interrupted, and the same pick-up
        serves here."""
        health, bus = self.pool.health, self.bus
        back = [health.next_return(), bus.next_return()]
        while True:
            await first_set([*back, self.stopping])
            if self.stopping.is_set():
                return
            what = "database" if back[0].is_set() else "message broker"
            # taken before the work: a return during it is not missed
            back = [health.next_return(), bus.next_return()]
            log.info(f"the {what} is back; resuming work it interrupted", role=self.name)
            try:
                await resume()
            except Exception:
                log.exception(f"resuming work after the {what} came back failed; trying again at the "
                              "next return", role=self.name)

    async def sleep_unless_stopping(self, seconds: float) -> bool:
        """Wait up to `seconds`; True when the role is stopping (for periodic loops)."""
        return await set_within(self.stopping, seconds)
