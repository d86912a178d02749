"""What the volume API's handlers and the role's bus handlers share: the pool, the backend
that holds the bits, the bus (images, compute, notifications), the role's background work,
and the settings (quota defaults, the URL clients reach us at)."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass

from aiohttp import web

from nova_async.bus import Bus
from nova_async.config import Settings
from nova_async.db.pool import Pool
from nova_async.volume.backends.base import Backend
from nova_async.common.work import Work


@dataclass
class VolumeApi:
    pool: Pool
    settings: Settings
    bus: Bus
    work: Work
    backend: Backend | None = None     # opened at start (role._start), before any request
    # This process's incarnation (db/session_locks.py), recorded as the `worker` of every
    # volume and snapshot change it starts; None without session locks.
    worker: uuid.UUID | None = None

    @property
    def store(self) -> Backend:
        assert self.backend is not None, "the volume backend is opened before the API serves"
        return self.backend

    @property
    def host(self) -> str:
        """os-vol-host-attr:host, Cinder's "<host>@<backend>#<pool>"."""
        host = self.settings.compute.host or socket.gethostname()
        return f"{host}@{self.settings.volume.backend}#{self.settings.volume.backend}"


STATE = web.AppKey("volume_api", VolumeApi)
