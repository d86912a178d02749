"""The compute API role (nova-api): the `/compute` HTTP surface. It validates and records
requests, then hands work to the conductor or a compute host over the bus."""

from __future__ import annotations

import asyncio

from aiohttp import web

from nova_async.api import routes
from nova_async.api.event_stream import EventHub
from nova_async.api.state import ApiState
from nova_async.compute.client import ComputeClient
from nova_async.conductor.client import ConductorClient
from nova_async.dashboard import serve as dashboard
from nova_async.image.client import ImageClient
from nova_async.network.client import NetworkClient
from nova_async.placement.client import PlacementClient
from nova_async.role import Deps, Role
from nova_async.volume.client import VolumeClient


class ComputeApiRole(Role):
    name = "api"
    stop_tier = 0

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.events = EventHub(self.cells, self.settings.api, deps.feed)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.events.run(self.stopping), name="api:events")
            await self.events.started.wait()
            self.ready.set()
            # Boots the database's going away failed leave rows behind (server_create): they go
            # as soon as it is back.
            await self.after_each_return(self.cells.forget_pending)

    def http(self) -> tuple[str, web.Application]:
        bus = self.bus
        state = ApiState(settings=self.settings, pool=self.pool, cells=self.cells, images=ImageClient(bus),
                         networks=NetworkClient(bus), conductor=ConductorClient(bus),
                         compute=ComputeClient(bus), placement=PlacementClient(bus),
                         volumes=VolumeClient(bus), events=self.events,
                         hooks=self.deps.hooks)
        return "/compute", routes.build_app(state)

    def root_routes(self) -> list[web.RouteDef]:
        """The dashboard, under /dashboard/: served wherever the compute API is."""
        return dashboard.routes()
