"""The scheduler role: answers SelectDestinations on the "scheduler" bus topic.

It has no HTTP API and no state of its own between requests; placement holds the truth about
capacity and Nova's tables the truth about hosts, and both are read fresh for every request."""

from __future__ import annotations

import time

from nova_async.common import errors, metrics
from nova_async.common.context import RequestContext
from nova_async.db import instances
from nova_async.placement.client import PlacementClient
from nova_async.role import Deps, Role
from nova_async.scheduler import messages as m
from nova_async.scheduler.answers import Answers
from nova_async.scheduler.client import TOPIC
from nova_async.scheduler.manager import Scheduler


class SchedulerRole(Role):
    name = "scheduler"
    topic = TOPIC
    stop_tier = 1  # after the roles that ask it (conductor), before placement which it asks

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.scheduler = Scheduler(self.cells, PlacementClient(self.bus), self.settings.scheduler)
        # Only a broker delivers one call twice (an in-memory bus hands each call over once).
        self.answers = Answers(self.pool, deps.locks if self.bus.delivers_calls_twice else None, self.bus)
        self.handlers = {
            m.SelectDestinations: self._select_destinations,
        }

    async def run(self) -> None:
        # The batches' deciders are this role's: they end (the batches queued decided) before it does.
        async with self.scheduler.batches.lines:
            await super().run()

    async def _select_destinations(self, msg: m.SelectDestinations, ctx: RequestContext) -> m.Selections:
        # Filtering, weighing and the placement claims, as one recorded step per instance.
        started, result = time.perf_counter(), "failed"
        try:
            # Every instance of one decision is in one cell: the one its boot request was written to.
            if msg.cell_uuid is not None:
                cell = await self.cells.get(msg.cell_uuid)
            else:
                cell = await self.cells.of_instance(msg.instance_uuids[0]) if msg.instance_uuids else None
            db = cell.pool if cell else self.cells.default.pool

            async def decide() -> m.Selections:
                # Recorded when it has ended: the conductor's step around it is seen from its start.
                steps = instances.Steps(db, msg.instance_uuids, ctx.request_id)
                try:
                    async with steps.step(m.SELECT_EVENT):
                        return m.Selections(selections=await self.scheduler.select_destinations(
                            msg.instance_uuids, msg.spec, msg.holders))
                finally:
                    await steps.record()

            answer = await self.answers.once(msg.question_id, decide)
            result = "placed"
        except errors.NoValidHost:
            result = "no_valid_host"
            raise
        finally:
            metrics.scheduling_decided(result, time.perf_counter() - started)
        return answer
