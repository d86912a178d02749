"""The network role: the Neutron v2.0 API on /network, and ports for instances on the bus
(the API validates requested networks before accepting a boot; compute allocates ports
while it builds and deallocates them when it deletes or reschedules), and the security
groups of instances as Nova's API asks for them (by name at boot, on a server's ports, and
the deprecated os-security-groups proxy)."""

from __future__ import annotations

import asyncio
import functools

from aiohttp import web

from nova_async.common.context import RequestContext
from nova_async.network import dhcp_ports, instance_ports, providers, proxy, routes, security_groups
from nova_async.network import floatingip_proxy, instance_addresses
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
            m.ResolveSecurityGroups: self._resolve_groups,
            m.InstanceSecurityGroups: self._instance_groups,
            m.ChangeInstanceSecurityGroup: self._change_instance_group,
            m.SecurityGroupRequest: self._security_group_request,
            m.NetworkRequest: self._network_request,
            m.FloatingIpRequest: self._floating_ip_request,
        }

    async def run(self) -> None:
        self.ready.set()
        # floating IPs a crash left out of (or in) servers' addresses: shown right again
        await instance_addresses.reconcile(self.pool, self.cells)
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.after_each_return(functools.partial(instance_addresses.reconcile, self.pool,
                                                                    self.cells)), name="network:addresses")
            await self.serve(self.topic, self.dispatch)

    def http(self) -> tuple[str, web.Application]:
        return "/network", routes.build_app(NetworkApi(
            pool=self.pool, cells=self.cells, base_url=self.settings.base_url,
            physical_networks=providers.physical_networks(self.settings.network)))

    async def _validate(self, msg: m.ValidateNetworks, ctx: RequestContext) -> None:
        await instance_ports.validate(self.pool, msg.project_id, msg.requested)

    async def _allocate(self, msg: m.AllocatePorts, ctx: RequestContext) -> m.PortList:
        return m.PortList(vifs=await instance_ports.allocate(self.pool, msg))

    async def _deallocate(self, msg: m.DeallocatePorts, ctx: RequestContext) -> None:
        await instance_ports.deallocate(self.pool, msg.instance_uuid)

    async def _ensure_dhcp_port(self, msg: m.EnsureDhcpPort, ctx: RequestContext) -> m.PortList:
        return m.PortList(vifs=await dhcp_ports.ensure(self.pool, msg.network_id, msg.host))
    async def _resolve_groups(self, msg: m.ResolveSecurityGroups, ctx: RequestContext) -> m.SecurityGroupIds:
        return m.SecurityGroupIds(ids=await security_groups.resolve(self.pool, msg.project_id, msg.names))

    async def _instance_groups(self, msg: m.InstanceSecurityGroups, ctx: RequestContext
                               ) -> m.SecurityGroupsByInstance:
        found = await security_groups.instance_groups(self.pool, msg.instance_uuids)
        return m.SecurityGroupsByInstance(names={k: [g["name"] for g in v] for k, v in found.items()},
                                          ids={k: [str(g["id"]) for g in v] for k, v in found.items()})

    async def _change_instance_group(self, msg: m.ChangeInstanceSecurityGroup, ctx: RequestContext) -> None:
        await security_groups.change_instance(self.pool, ctx, msg.project_id, msg.instance_uuid, msg.group, msg.add)

    async def _network_request(self, msg: m.NetworkRequest, ctx: RequestContext) -> m.NetworkReply:
        return await proxy.answer_networks(self.pool, ctx, msg)

    async def _security_group_request(self, msg: m.SecurityGroupRequest, ctx: RequestContext
                                      ) -> m.SecurityGroupReply:
        return await proxy.answer(self.pool, ctx, msg)

    async def _floating_ip_request(self, msg: m.FloatingIpRequest, ctx: RequestContext) -> m.FloatingIpReply:
        return await floatingip_proxy.answer(self.pool, self.cells, ctx, msg, self.settings.network.external_network)
