"""`os-availability-zone`: the zones servers can be booted into, and (admins, `/detail`)
which hosts and services make them up.

A zone is available while at least one of its compute services is enabled; one whose
services are all disabled is listed as unavailable, as Nova does. Zones come from the
services' `zone` (the default zone, `nova`, until host aggregates can set others); the
conductors and schedulers are in the zone `internal`, which only `/detail` shows, as Nova."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import service_store
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import web as w
from nova_async.common.timeutil import iso_micro

INTERNAL = "internal"   # Nova's internal_service_availability_zone: conductors', schedulers'


async def _zones(request: web.Request) -> dict[str, list]:
    state = request.app[STATE]
    return await service_store.zones(state.pool, state.settings.scheduler.service_down_time)


def _available(rows: list) -> bool:
    return any(not r["disabled"] for r in rows)


async def list_zones(request: web.Request) -> web.Response:
    w.context(request)  # any authenticated user
    zones = await _zones(request)
    zones.pop(INTERNAL, None)   # the control services' zone: no server is booted into it
    return w.dump({"availabilityZoneInfo": [
        {"zoneName": name, "zoneState": {"available": _available(rows)}, "hosts": None}
        for name, rows in sorted(zones.items(), key=lambda z: (not _available(z[1]), z[0]))]})


async def list_zones_detail(request: web.Request) -> web.Response:
    require_admin(request)
    zones = await _zones(request)
    info = []
    for name, rows in sorted(zones.items(), key=lambda z: (not _available(z[1]), z[0])):
        hosts: dict[str, dict[str, Any]] = {}
        for r in rows:
            hosts.setdefault(r["host"], {})[r["binary_name"]] = {
                "available": r["up"] and not r["forced_down"] and not r["disabled"],
                "active": not r["disabled"],
                "updated_at": iso_micro(r["last_seen_up"] or r["updated_at"])}
        info.append({"zoneName": name, "zoneState": {"available": _available(rows)}, "hosts": hosts})
    return w.dump({"availabilityZoneInfo": info})
