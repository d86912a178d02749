"""The typed client other roles use to reach placement over the bus."""

from __future__ import annotations

from nova_async.bus import Bus
from nova_async.placement import messages as m

TOPIC = "placement"


class PlacementClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def ensure_provider(self, uuid: str, name: str, inventories: dict[str, m.InventoryRecord]) -> None:
        await self.bus.call(TOPIC, m.EnsureProvider(uuid=uuid, name=name, inventories=inventories))

    async def candidates(self, resources: dict[str, int], limit: int | None = None) -> list[m.ProviderSummary]:
        return (await self.find_candidates(resources, limit)).providers

    async def find_candidates(self, resources: dict[str, int], limit: int | None = None) -> m.Candidates:
        """The whole answer, with placement's per-class explanation when nothing fits."""
        reply = await self.bus.call(TOPIC, m.GetCandidates(resources=resources, limit=limit))
        assert isinstance(reply, m.Candidates)
        return reply

    async def claim(self, consumer_uuid: str, provider_uuid: str, resources: dict[str, int],
                    project_id: str, user_id: str) -> m.ClaimResult:
        reply = await self.bus.call(TOPIC, m.Claim(consumer_uuid=consumer_uuid, provider_uuid=provider_uuid,
                                                   resources=resources, project_id=project_id,
                                                   user_id=user_id))
        assert isinstance(reply, m.ClaimResult)
        return reply

    async def delete_allocations(self, consumer_uuid: str) -> None:
        await self.bus.call(TOPIC, m.DeleteAllocations(consumer_uuid=consumer_uuid))

    async def allocations(self, consumer_uuid: str) -> dict[str, dict[str, int]]:
        reply = await self.bus.call(TOPIC, m.GetAllocations(consumer_uuid=consumer_uuid))
        assert isinstance(reply, m.Allocations)
        return reply.allocations
