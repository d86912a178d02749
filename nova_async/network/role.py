"""The network role: the Neutron v2.0 API on /network, and ports for instances on the bus
(the API validates requested networks before accepting a boot; compute allocates ports
while it builds and deallocates them when it deletes or reschedules)."""

from __future__ import annotations


from aiohttp import web

from nova_async.common.context import RequestContext
from nova_async.network import dhcp_ports, instance_ports, providers, routes
from nova_async.network import messages as m
from nova_async.network.client import TOPIC
from nova_async.network.state import NetworkApi
from nova_async.role import Deps, Role


class NetworkRole(Role):
    name = "network"
    topic = TOPIC

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.handlers = {
            m.ValidateNetworks: self._validate,
            m.AllocatePorts: self._allocate,
            m.DeallocatePorts: self._deallocate,
            m.EnsureDhcpPort: self._ensure_dhcp_port,
        }

    def http(self) -> tuple[str, web.Application]:
        return "/network", routes.build_app(NetworkApi(
            pool=self.pool, base_url=self.settings.base_url,
            physical_networks=providers.physical_networks(self.settings.network)))



    async def _validate(self, msg: m.ValidateNetworks, ctx: RequestContext) -> None:
        await instance_ports.validate(self.pool, msg.project_id, msg.requested)

    async def _allocate(self, msg: m.AllocatePorts, ctx: RequestContext) -> m.PortList:
        return m.PortList(vifs=await instance_ports.allocate(self.pool, msg))

    async def _deallocate(self, msg: m.DeallocatePorts, ctx: RequestContext) -> None:
        await instance_ports.deallocate(self.pool, msg.instance_uuid)

    async def _ensure_dhcp_port(self, msg: m.EnsureDhcpPort, ctx: RequestContext) -> m.PortList:
        return m.PortList(vifs=await dhcp_ports.ensure(self.pool, msg.network_id, msg.host))
