"""The scheduler role: answers SelectDestinations on the "scheduler" bus topic.

It has no HTTP API and no state of its own between requests; placement holds the truth about
capacity and Nova's tables the truth about hosts, and both are read fresh for every request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from nova_async.bus import Message
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.placement.client import PlacementClient
from nova_async.role import Deps, Role
from nova_async.scheduler import messages as m
from nova_async.scheduler.client import TOPIC
from nova_async.scheduler.manager import Scheduler


class SchedulerRole(Role):
    name = "scheduler"
    stop_tier = 1  # after the roles that ask it (conductor), before placement which it asks

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.scheduler = Scheduler(self.pool, PlacementClient(self.bus), self.settings.scheduler)
        self._handlers: dict[type[Message], Callable[[Message], Awaitable[Message | None]]] = {
            m.SelectDestinations: self._select_destinations,
        }

    async def run(self) -> None:
        self.ready.set()
        await self.serve(TOPIC, self._handle)

    async def _handle(self, msg: Message, context: RequestContext | None) -> Message | None:
        handler = self._handlers.get(type(msg))
        if handler is None:
            raise errors.InvalidInput(f"scheduler does not handle {type(msg).__name__}")
        if context is not None and context.request_id:
            # each message is handled in its own task, so this binding stays with this request
            structlog.contextvars.bind_contextvars(request_id=context.request_id)
        return await handler(msg)

    async def _select_destinations(self, msg: m.SelectDestinations) -> m.Selections:
        return m.Selections(selections=await self.scheduler.select_destinations(msg.instance_uuids, msg.spec))
