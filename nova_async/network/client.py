"""The typed client other roles use to reach the network service over the bus."""

from __future__ import annotations

from nova_async.bus import Bus
from nova_async.bus.shared import SharedCalls
from nova_async.common.context import RequestContext
from nova_async.network import messages as m

TOPIC = "network"


class NetworkClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self._shared = SharedCalls(bus)   # a burst of boots checks the same networks and groups

    async def validate(self, context: RequestContext, requested: list[m.RequestedNetwork]) -> None:
        await self._shared.call(TOPIC, m.ValidateNetworks(project_id=context.project_id, requested=requested),
                                context=context)

    async def allocate(self, instance_uuid: str, project_id: str, host: str,
                       requested: list[m.RequestedNetwork], security_groups: list[str] | None = None
                       ) -> list[m.Vif]:
        reply = await self.bus.call(TOPIC, m.AllocatePorts(instance_uuid=instance_uuid, project_id=project_id,
                                                           host=host, requested=requested,
                                                           security_groups=security_groups))
        assert isinstance(reply, m.PortList)
        return reply.vifs

    async def deallocate(self, instance_uuid: str) -> None:
        await self.bus.call(TOPIC, m.DeallocatePorts(instance_uuid=instance_uuid))

    async def ensure_dhcp_port(self, network_id: str, host: str) -> m.Vif | None:
        reply = await self.bus.call(TOPIC, m.EnsureDhcpPort(network_id=network_id, host=host))
        assert isinstance(reply, m.PortList)
        return reply.vifs[0] if reply.vifs else None

    async def resolve_security_groups(self, context: RequestContext, names: list[str]) -> list[str]:
        reply = await self._shared.call(TOPIC, m.ResolveSecurityGroups(project_id=context.project_id, names=names),
                                        context=context)
        assert isinstance(reply, m.SecurityGroupIds)
        return reply.ids

    async def instance_security_groups(self, context: RequestContext,
                                       instance_uuids: list[str]) -> m.SecurityGroupsByInstance:
        reply = await self.bus.call(TOPIC, m.InstanceSecurityGroups(instance_uuids=instance_uuids), context=context)
        assert isinstance(reply, m.SecurityGroupsByInstance)
        return reply

    async def change_instance_security_group(self, context: RequestContext, instance_uuid: str, project_id: str,
                                             group: str, add: bool) -> None:
        await self.bus.call(TOPIC, m.ChangeInstanceSecurityGroup(instance_uuid=instance_uuid, project_id=project_id,
                                                                 group=group, add=add), context=context)

    async def security_groups(self, context: RequestContext, action: str, id: str | None = None,
                              ids: list[str] | None = None, body: dict | None = None) -> m.SecurityGroupReply:
        reply = await self.bus.call(TOPIC, m.SecurityGroupRequest(action=action, id=id, ids=ids, body=body or {}),
                                    context=context)
        assert isinstance(reply, m.SecurityGroupReply)
        return reply

    async def networks(self, context: RequestContext, id: str = "") -> list[dict]:
        """What Neutron's API shows the caller: its networks, or the one `id` names (404)."""
        reply = await self.bus.call(TOPIC, m.NetworkRequest(id=id), context=context)
        assert isinstance(reply, m.NetworkReply)
        return reply.networks

    async def floating_ips(self, context: RequestContext, action: str, **fields: str) -> m.FloatingIpReply:
        """Nova's floating IP proxy (messages.FloatingIpRequest), as the caller `context`."""
        reply = await self.bus.call(TOPIC, m.FloatingIpRequest(action=action, **fields), context=context)
        assert isinstance(reply, m.FloatingIpReply)
        return reply
