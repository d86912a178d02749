"""What the compute API's handlers share: settings, the pool, and typed clients of the
roles it talks to."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from nova_async.api.event_stream import EventHub
from nova_async.compute.client import ComputeClient
from nova_async.conductor.client import ConductorClient
from nova_async.config import Settings
from nova_async.db.cells import Cells
from nova_async.db.pool import Pool
from nova_async.hooks.runner import Hooks
from nova_async.image.client import ImageClient
from nova_async.network.client import NetworkClient
from nova_async.placement.client import PlacementClient
from nova_async.volume.client import VolumeClient


@dataclass(frozen=True)
class ApiState:
    settings: Settings
    pool: Pool          # the API database
    cells: Cells                # where instances live
    images: ImageClient
    networks: NetworkClient
    conductor: ConductorClient
    compute: ComputeClient
    placement: PlacementClient
    volumes: VolumeClient
    events: EventHub    # the server event stream's feeds (GET /events)
    hooks: Hooks        # the enabled hook plugins' (nova_async/hooks)

    @property
    def base_url(self) -> str:
        return self.settings.base_url


STATE = web.AppKey("compute_api_state", ApiState)
