"""The typed client other roles use to reach the network service over the bus."""

from __future__ import annotations

from nova_async.bus import Bus
from nova_async.common.context import RequestContext
from nova_async.network import messages as m

TOPIC = "network"


class NetworkClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def validate(self, context: RequestContext, requested: list[m.RequestedNetwork]) -> None:
        await self.bus.call(TOPIC, m.ValidateNetworks(project_id=context.project_id, requested=requested),
                            context=context)

    async def allocate(self, instance_uuid: str, project_id: str, host: str,
                       requested: list[m.RequestedNetwork]) -> list[m.Vif]:
        reply = await self.bus.call(TOPIC, m.AllocatePorts(instance_uuid=instance_uuid, project_id=project_id,
                                                           host=host, requested=requested))
        assert isinstance(reply, m.PortList)
        return reply.vifs

    async def deallocate(self, instance_uuid: str) -> None:
        await self.bus.call(TOPIC, m.DeallocatePorts(instance_uuid=instance_uuid))

    async def ensure_dhcp_port(self, network_id: str, host: str) -> m.Vif | None:
        reply = await self.bus.call(TOPIC, m.EnsureDhcpPort(network_id=network_id, host=host))
        assert isinstance(reply, m.PortList)
        return reply.vifs[0] if reply.vifs else None
