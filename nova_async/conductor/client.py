"""The typed client the API uses to reach the conductor."""

from __future__ import annotations

from nova_async.bus import Bus
from nova_async.common.context import RequestContext
from nova_async.conductor import messages as m

TOPIC = "conductor"


class ConductorClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def schedule_and_build(self, instance_uuids: list[str], context: RequestContext,
                                 cell_uuid: str | None = None) -> None:
        await self.bus.cast(TOPIC, m.ScheduleAndBuildInstances(instance_uuids=instance_uuids, cell_uuid=cell_uuid),
                            context=context)

    async def reschedule(self, msg: m.RescheduleInstance, context: RequestContext) -> None:
        await self.bus.cast(TOPIC, msg, context=context)

    async def resize(self, instance_uuid: str, migration_uuid: str, context: RequestContext) -> None:
        await self.bus.cast(TOPIC, m.ResizeInstance(instance_uuid=instance_uuid, migration_uuid=migration_uuid),
                            context=context)

    async def unshelve(self, instance_uuid: str, context: RequestContext) -> None:
        await self.bus.cast(TOPIC, m.UnshelveRequest(instance_uuid=instance_uuid), context=context)
