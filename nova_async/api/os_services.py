"""Admin views of the deployment: `os-services` (is each compute service up?) and
`os-hypervisors` (the compute nodes behind them). Read-only for now; enabling, disabling
and forcing down come with the scheduling work."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import microversion
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import web as w
from nova_async.common.timeutil import iso_micro
from nova_async.db.queries import queries

Q = queries("os_services")


def _service(row, version) -> dict[str, Any]:
    out = {"id": str(row["id"]) if version >= (2, 53) else row["id"].int % 2**31,
           "binary": row["binary_name"], "host": row["host"], "zone": row["zone"],
           "status": "disabled" if row["disabled"] else "enabled",
           "state": "up" if row["up"] else "down",
           "updated_at": iso_micro(row["last_seen_up"] or row["updated_at"]),
           "disabled_reason": row["disabled_reason"]}
    if version >= (2, 11):
        out["forced_down"] = row["forced_down"]
    return out


async def list_services(request: web.Request) -> web.Response:
    require_admin(request)
    state = request.app[STATE]
    rows = await state.pool.fetch(Q.services, state.settings.scheduler.service_down_time,
                                  request.query.get("host"), request.query.get("binary"))
    version = microversion.of(request)
    return w.dump({"services": [_service(r, version) for r in rows]})


def _hypervisor(row, version, detail: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"id": str(row["uuid"]) if version >= (2, 53) else row["uuid"].int % 2**31,
                           "hypervisor_hostname": row["hypervisor_hostname"],
                           "state": "up" if row["up"] else "down",
                           "status": "disabled" if row["disabled"] else "enabled"}
    if not detail:
        return out
    out.update({"hypervisor_type": row["hypervisor_type"], "hypervisor_version": row["hypervisor_version"],
                "host_ip": row["host_ip"],
                "service": {"host": row["service_host"], "id": str(row["service_uuid"]),
                            "disabled_reason": row["disabled_reason"]}})
    if version < (2, 88):
        out.update({"vcpus": row["vcpus"], "memory_mb": row["memory_mb"], "local_gb": row["local_gb"]})
    else:
        out["uptime"] = None
    return out


async def _hypervisors(request: web.Request, detail: bool) -> web.Response:
    require_admin(request)
    state = request.app[STATE]
    rows = await state.pool.fetch(Q.hypervisors, state.settings.scheduler.service_down_time)
    version = microversion.of(request)
    return w.dump({"hypervisors": [_hypervisor(r, version, detail) for r in rows]})


async def list_hypervisors(request: web.Request) -> web.Response:
    return await _hypervisors(request, detail=False)


async def list_hypervisors_detail(request: web.Request) -> web.Response:
    return await _hypervisors(request, detail=True)
