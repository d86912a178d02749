"""The scheduler role: answers SelectDestinations on the "scheduler" bus topic.

It has no HTTP API and no state of its own between requests; placement holds the truth about
capacity and Nova's tables the truth about hosts, and both are read fresh for every request."""

from __future__ import annotations



from nova_async.common.context import RequestContext
from nova_async.placement.client import PlacementClient
from nova_async.role import Deps, Role
from nova_async.scheduler import messages as m
from nova_async.scheduler.client import TOPIC
from nova_async.scheduler.manager import Scheduler


class SchedulerRole(Role):
    name = "scheduler"
    topic = TOPIC
    stop_tier = 1  # after the roles that ask it (conductor), before placement which it asks

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.scheduler = Scheduler(self.pool, PlacementClient(self.bus), self.settings.scheduler)
        self.handlers = {
            m.SelectDestinations: self._select_destinations,
        }



    async def _select_destinations(self, msg: m.SelectDestinations, ctx: RequestContext) -> m.Selections:
        return m.Selections(selections=await self.scheduler.select_destinations(msg.instance_uuids, msg.spec))
