"""The typed client the conductor uses to reach the scheduler."""

from __future__ import annotations

from nova_async.bus import Bus
from nova_async.common.context import RequestContext
from nova_async.scheduler import messages as m

TOPIC = "scheduler"


class SchedulerClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def select_destinations(self, instance_uuids: list[str], spec: m.RequestSpec,
                                  context: RequestContext | None = None, *,
                                  cell_uuid: str | None = None) -> list[m.Selection]:
        """Claimed hosts for every instance, or NoValidHost saying why not (all or nothing);
        `cell_uuid` as SelectDestinations has it."""
        reply = await self.bus.call(TOPIC, m.SelectDestinations(instance_uuids=instance_uuids, spec=spec,
                                                                cell_uuid=cell_uuid),
                                    context=context, timeout=120)
        assert isinstance(reply, m.Selections)
        return reply.selections
