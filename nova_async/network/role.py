"""The network role: the Neutron v2.0 API on /network, and ports for instances on the bus
(the API validates requested networks before accepting a boot; compute allocates ports
while it builds and deallocates them when it deletes or reschedules)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from nova_async.bus import Message
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.network import http, instance_ports
from nova_async.network import messages as m
from nova_async.network.api import NetworkApi
from nova_async.network.client import TOPIC
from nova_async.role import Deps, Role


class NetworkRole(Role):
    name = "network"

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self._handlers: dict[type[Message], Callable[[Message], Awaitable[Message | None]]] = {
            m.ValidateNetworks: self._validate,  # type: ignore[dict-item]
            m.AllocatePorts: self._allocate,  # type: ignore[dict-item]
            m.DeallocatePorts: self._deallocate,  # type: ignore[dict-item]
        }

    def http(self) -> tuple[str, web.Application]:
        return "/network", http.build_app(NetworkApi(pool=self.pool, base_url=self.settings.base_url))

    async def run(self) -> None:
        self.ready.set()
        await self.serve(TOPIC, self._handle)

    async def _handle(self, msg: Message, context: RequestContext | None) -> Message | None:
        handler = self._handlers.get(type(msg))
        if handler is None:
            raise errors.InvalidInput(f"the network service does not handle {type(msg).__name__}")
        return await handler(msg)

    async def _validate(self, msg: m.ValidateNetworks) -> None:
        await instance_ports.validate(self.pool, msg.project_id, msg.requested)

    async def _allocate(self, msg: m.AllocatePorts) -> m.PortList:
        return m.PortList(vifs=await instance_ports.allocate(self.pool, msg))

    async def _deallocate(self, msg: m.DeallocatePorts) -> None:
        await instance_ports.deallocate(self.pool, msg.instance_uuid)
