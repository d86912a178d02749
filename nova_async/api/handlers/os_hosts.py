"""`os-hosts` (until microversion 2.42, 404 from 2.43, as Nova): the hosts of every service
with their zones, what a compute host has and what its instances take per project, and
enabling or disabling its compute service. Maintenance mode and host power actions are
not something this service's hypervisors do: 501, as Nova answers for a driver without them."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import microversion, service_store
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

UPDATE = w.validator({
    "type": "object", "additionalProperties": False, "minProperties": 1,
    "properties": {"status": {"enum": ["enable", "disable", "Enable", "Disable", "ENABLE", "DISABLE"]},
                   "maintenance_mode": {"enum": ["enable", "disable", "Enable", "Disable", "ENABLE", "DISABLE"]}},
})


def _allowed(request: web.Request):
    require_admin(request)
    if microversion.of(request) >= (2, 43):
        raise errors.NotFound("os-hosts is gone from microversion 2.43; use os-hypervisors and os-services.")
    state = request.app[STATE]
    return state, state.settings.scheduler.service_down_time


async def list_hosts(request: web.Request) -> web.Response:
    state, down_time = _allowed(request)
    zone = request.query.get("zone")
    rows = await service_store.services(state.pool, down_time, None, None)
    hosts = [{"host_name": r["host"], "service": r["binary_name"].removeprefix("nova-"), "zone": r["zone"]}
             for r in rows if not zone or r["zone"] == zone]  # Nova: an empty zone is no filter
    return w.dump({"hosts": hosts})


async def show_host(request: web.Request) -> web.Response:
    state, down_time = _allowed(request)
    host = request.match_info["host_name"]
    nodes = [r for r in await service_store.hypervisors(state.pool, down_time) if r["host"] == host]
    if not nodes:
        raise errors.NotFound(f"Compute host {host} could not be found.")
    projects = await service_store.host_usage_by_project(state.cells, host)
    total = {"cpu": sum(n["vcpus"] for n in nodes), "memory_mb": sum(n["memory_mb"] for n in nodes),
             "disk_gb": sum(n["local_gb"] for n in nodes)}
    used = {k: sum(p[k] for p in projects) for k in ("cpu", "memory_mb", "disk_gb")}
    by_project: dict[str, dict[str, int]] = {}
    for p in projects:
        mine = by_project.setdefault(p["project_id"], {"cpu": 0, "memory_mb": 0, "disk_gb": 0})
        for k in mine:
            mine[k] += p[k]

    def resource(project: str, amounts: dict[str, int]) -> dict[str, Any]:
        return {"resource": {"host": host, "project": project, **amounts}}
    return w.dump({"host": [resource("(total)", total), resource("(used_now)", used), resource("(used_max)", used),
                            *(resource(p, a) for p, a in sorted(by_project.items()))]})


async def update_host(request: web.Request) -> web.Response:
    state, down_time = _allowed(request)
    host = request.match_info["host_name"]
    body = await w.read_json(request, UPDATE)
    if "maintenance_mode" in body:
        await _existing(state, down_time, host)  # an unknown host is a 404 before the 501
        raise errors.NotImplementedHere("Virt driver does not implement host maintenance mode.")
    disabled = body["status"].lower() == "disable"
    try:
        await service_store.update(state.pool, down_time, host=host, binary="nova-compute", disabled=disabled)
    except errors.NotFound:
        raise errors.NotFound(f"Compute host {host} could not be found.") from None
    return w.dump({"host": host, "status": "disabled" if disabled else "enabled"})


async def host_power_action(request: web.Request) -> web.Response:
    """reboot, shutdown and startup of a whole host."""
    state, down_time = _allowed(request)
    await _existing(state, down_time, request.match_info["host_name"])
    raise errors.NotImplementedHere("Virt driver does not implement host power management.")


async def _existing(state, down_time, host: str) -> None:
    if not [r for r in await service_store.hypervisors(state.pool, down_time) if r["host"] == host]:
        raise errors.NotFound(f"Compute host {host} could not be found.")
