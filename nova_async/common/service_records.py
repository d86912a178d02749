"""The service records of a process's control roles: `nova-conductor` and `nova-scheduler`,
one per process that runs them, with a heartbeat, so that `openstack compute service list`
shows every copy of every role with its host and whether it is up (seen within
`scheduler.service_down_time`), as Nova does. Compute hosts keep their own records
(compute/registration.py); the API, like Nova's, has none shown.

The host a record names is this process's: `compute.host`, else the machine's name. Two
processes on one machine are two copies only when each is given its own `--host`; otherwise
they share, and both keep up, one record per role. Nova puts these services in the zone
`internal` (os-availability-zone lists it for admins only)."""

from __future__ import annotations

import asyncio
import socket
import uuid as uuidlib

import structlog

from nova_async.bus import Bus
from nova_async.bus import caps as version_caps
from nova_async.config import Settings
from nova_async.db import migrate
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.notifications import payloads
from nova_async.notifications.emitter import Emitter

log = structlog.get_logger("service.records")
Q = queries("os_services")

# The roles with a record of their own, and the binary and topic Nova names them by.
RECORDED = {"conductor": ("nova-conductor", "conductor"), "scheduler": ("nova-scheduler", "scheduler")}


def process_host(settings: Settings) -> str:
    return settings.compute.host or socket.gethostname()


class ServiceRecords:
    def __init__(self, pool: Pool, bus: Bus, settings: Settings) -> None:
        self.pool = pool
        self.bus = bus
        self.settings = settings
        self.host = process_host(settings)
        self.roles = [r for r in settings.service.roles if r in RECORDED]
        self.ids: list[str] = []

    async def register(self) -> None:
        """Write (or take over) this process's records, up as of now."""
        ids = []
        for role in self.roles:
            binary, topic = RECORDED[role]
            row = await self.pool.fetchrow(Q.upsert_control_service, uuidlib.uuid4(), self.host, binary, topic,
                                           version_caps.RELEASE, migrate.shipped_level())
            ids.append(str(row["id"]))
            await Emitter(self.bus, binary, self.host, enabled=self.settings.notifications.enabled).emit(
                "service.create" if row["created"] else "service.update", payloads.service(row))
        self.ids = ids
        if ids:
            log.info("service records written", host=self.host, binaries=",".join(RECORDED[r][0] for r in self.roles))

    async def keep_up(self) -> None:
        """Until cancelled: a heartbeat every `compute.report_interval` seconds. The records
        are written first if they were not (the database was away at start)."""
        while True:
            await asyncio.sleep(self.settings.compute.report_interval)
            try:
                # Written again when they were not (the database was away at start) or one
                # is gone (an admin deleted it while this process was thought down).
                if len(self.ids) < len(self.roles) or len(await self.pool.fetch(Q.heartbeat, self.ids)) < len(self.ids):
                    await self.register()
            except Exception as exc:   # a database blip: the next beat tries again
                log.warning("service heartbeat failed", error=str(exc))
