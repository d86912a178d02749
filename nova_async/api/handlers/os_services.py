"""Admin views of the deployment: `os-services` (is each compute service up? enable,
disable, force down, delete) and `os-hypervisors` (the compute nodes behind them).

A disabled or forced-down compute service gets no new instances (the scheduler's
ComputeFilter); its instances keep running. Two URL styles, as in Nova: from 2.53 a service
is changed by its uuid (`PUT /os-services/{id}`, all fields in one body); before, by host and
binary through `PUT /os-services/{enable,disable,disable-log-reason,force-down}`."""

from __future__ import annotations

import json

from typing import Any

from aiohttp import web

from nova_async.api import microversion, service_store
from nova_async.api.host_uptime import host_uptime
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.web import parse_uuid
from nova_async.common.timeutil import iso_micro
from nova_async.notifications import payloads
from nova_async.notifications.emitter import Emitter


def _service(row, version) -> dict[str, Any]:
    out = {"id": str(row["id"]) if version >= (2, 53) else row["id"].int % 2**31,
           "binary": row["binary_name"], "host": row["host"], "zone": row["zone"],
           "status": "disabled" if row["disabled"] else "enabled",
           "state": "up" if row["up"] and not row["forced_down"] else "down",
           "updated_at": iso_micro(row["last_seen_up"] or row["updated_at"]),
           "disabled_reason": row["disabled_reason"]}
    if version >= (2, 11):
        out["forced_down"] = row["forced_down"]
    return out


async def list_services(request: web.Request) -> web.Response:
    require_admin(request)
    state = request.app[STATE]
    rows = await service_store.services(state.pool, state.settings.scheduler.service_down_time,
                                        request.query.get("host"), request.query.get("binary"))
    version = microversion.of(request)
    return w.dump({"services": [_service(r, version) for r in rows]})


def _hypervisor_id(row, version):
    return str(row["uuid"]) if version >= (2, 53) else row["uuid"].int % 2**31


def _hypervisor(row, version, detail: bool, usage=None, servers=None) -> dict[str, Any]:
    """A hypervisor as Nova shows it at `version`: its summary, or (`detail`) everything, with
    what its instances take (`usage`, a node_usage row or None) and, when asked for, its
    servers."""
    out: dict[str, Any] = {"id": _hypervisor_id(row, version),
                           "hypervisor_hostname": row["hypervisor_hostname"],
                           "state": "up" if row["up"] else "down",
                           "status": "disabled" if row["disabled"] else "enabled"}
    if detail:
        out.update({"hypervisor_type": row["hypervisor_type"], "hypervisor_version": row["hypervisor_version"],
                    "host_ip": row["host_ip"],
                    "service": {"host": row["service_host"], "id": _service_id(row, version),
                                "disabled_reason": row["disabled_reason"]}})
        if version < (2, 88):
            out.update(_resources(row, usage))
            # The host CPU as libvirt describes it: an object from 2.28, a JSON string before.
            cpu_info = row["cpu_info"] or {}
            out["cpu_info"] = cpu_info if version >= (2, 28) else json.dumps(cpu_info)
        else:
            out["uptime"] = None
    if servers is not None and (servers or version >= (2, 75)):
        out["servers"] = [{"uuid": str(s["uuid"]), "name": s["display_name"]} for s in servers]
    return out


def _service_id(row, version):
    if row["service_uuid"] is None:
        return None
    return str(row["service_uuid"]) if version >= (2, 53) else row["service_uuid"].int % 2**31


_USAGE = ("vcpus_used", "memory_mb_used", "local_gb_used", "running_vms", "current_workload")


def _resources(row, usage) -> dict[str, int]:
    used = {k: (usage[k] if usage else 0) for k in _USAGE}
    free_disk = row["local_gb"] - used["local_gb_used"]
    return {"vcpus": row["vcpus"], "memory_mb": row["memory_mb"], "local_gb": row["local_gb"], **used,
            "free_ram_mb": row["memory_mb"] - used["memory_mb_used"], "free_disk_gb": free_disk,
            "disk_available_least": free_disk}


def _bool_param(request: web.Request, name: str) -> bool:
    raw = request.query.get(name, "")
    value = w.oslo_bool(raw) if raw.strip() else False
    if value is None:
        raise errors.InvalidInput(f"Invalid input for query parameters {name}. Value: {raw}. "
                                  f"{raw!r} is not a valid boolean")
    return value


async def _hypervisors(request: web.Request, detail: bool) -> web.Response:
    require_admin(request)
    state = request.app[STATE]
    version = microversion.of(request)
    rows = await service_store.hypervisors(state.pool, state.settings.scheduler.service_down_time)
    pattern = request.query.get("hypervisor_hostname_pattern") if version >= (2, 53) else None
    with_servers = _bool_param(request, "with_servers") if version >= (2, 53) else False
    paging = version >= (2, 33) and ("limit" in request.query or "marker" in request.query)
    if pattern is not None:
        if paging:
            raise errors.InvalidInput("Paging over hypervisors with the hypervisor_hostname_pattern query "
                                      "parameter is not supported.")
        rows = [r for r in rows if pattern in r["hypervisor_hostname"]]
        if not rows:
            raise errors.NotFound(f"No hypervisor matching '{pattern}' could be found.")
    elif paging:
        rows = _page(rows, request, version)
    return w.dump({"hypervisors": await _shown(state, rows, version, detail, with_servers)})


def _page(rows, request: web.Request, version):
    marker = request.query.get("marker")
    if marker is not None:
        at = next((i for i, r in enumerate(rows) if str(_hypervisor_id(r, version)) == marker), None)
        if at is None:
            raise errors.InvalidInput(f"marker [{marker}] not found")
        rows = rows[at + 1:]
    limit = w.query_int(request, "limit", 1000)
    return rows if limit is None else rows[:limit]


async def _shown(state, rows, version, detail: bool, with_servers: bool) -> list[dict[str, Any]]:
    usage = await service_store.usage(state.cells) if detail and version < (2, 88) else {}
    servers = (await service_store.servers_on(state.cells, [r["hypervisor_hostname"] for r in rows])
               if with_servers else None)
    return [_hypervisor(r, version, detail, usage.get(r["hypervisor_hostname"]),
                        servers.get(r["hypervisor_hostname"], []) if servers is not None else None)
            for r in rows]


async def list_hypervisors(request: web.Request) -> web.Response:
    return await _hypervisors(request, detail=False)


async def list_hypervisors_detail(request: web.Request) -> web.Response:
    return await _hypervisors(request, detail=True)


async def _one(request: web.Request):
    """The hypervisor the path names (a uuid from 2.53, an integer id before), or 404."""
    require_admin(request)
    state = request.app[STATE]
    version = microversion.of(request)
    wanted = request.match_info["hypervisor_id"]
    if version >= (2, 53) and parse_uuid(wanted) is None:
        raise errors.InvalidInput(f"Invalid uuid {wanted}")
    rows = await service_store.hypervisors(state.pool, state.settings.scheduler.service_down_time)
    row = next((r for r in rows if str(_hypervisor_id(r, version)) == (parse_uuid(wanted) or wanted)), None)
    if row is None:
        raise errors.NotFound(f"Hypervisor with ID '{wanted}' could not be found.")
    return state, version, row


async def show_hypervisor(request: web.Request) -> web.Response:
    state, version, row = await _one(request)
    with_servers = _bool_param(request, "with_servers") if version >= (2, 53) else False
    [shown] = await _shown(state, [row], version, True, with_servers)
    if version >= (2, 88):
        shown["uptime"] = host_uptime()
    return w.dump({"hypervisor": shown})


async def hypervisor_uptime(request: web.Request) -> web.Response:
    """How long the host has been up (before 2.88; from then on show has it). Every compute
    host this service runs is this machine, so it answers for this machine."""
    if microversion.of(request) >= (2, 88):
        raise errors.NotFound("The uptime of a hypervisor is part of its show from microversion 2.88.")
    _, version, row = await _one(request)
    return w.dump({"hypervisor": {**_hypervisor(row, version, False), "uptime": host_uptime()}})


async def hypervisor_statistics(request: web.Request) -> web.Response:
    """The sums over every hypervisor (before 2.88)."""
    require_admin(request)
    if microversion.of(request) >= (2, 88):
        raise errors.NotFound("Hypervisor statistics are not available from microversion 2.88.")
    state = request.app[STATE]
    rows = await service_store.hypervisors(state.pool, state.settings.scheduler.service_down_time)
    usage = await service_store.usage(state.cells)
    totals: dict[str, int] = {"count": len(rows)}
    for row in rows:
        for key, value in _resources(row, usage.get(row["hypervisor_hostname"])).items():
            totals[key] = totals.get(key, 0) + value
    for key in ("vcpus", "memory_mb", "local_gb", *_USAGE, "free_ram_mb", "free_disk_gb", "disk_available_least"):
        totals.setdefault(key, 0)
    return w.dump({"hypervisor_statistics": totals})


async def _matching(request: web.Request, with_servers: bool) -> web.Response:
    """`/os-hypervisors/{pattern}/search` and `/servers` (before 2.53, when the list's query
    parameters took their place): the hypervisors whose name holds the pattern, or 404."""
    require_admin(request)
    version = microversion.of(request)
    if version >= (2, 53):
        raise errors.NotFound("Use GET /os-hypervisors?hypervisor_hostname_pattern= from microversion 2.53.")
    state = request.app[STATE]
    pattern = request.match_info["pattern"]
    rows = [r for r in await service_store.hypervisors(state.pool, state.settings.scheduler.service_down_time)
            if pattern in r["hypervisor_hostname"]]
    if not rows:
        raise errors.NotFound(f"No hypervisor matching '{pattern}' could be found.")
    return w.dump({"hypervisors": await _shown(state, rows, version, False, with_servers)})


async def search_hypervisors(request: web.Request) -> web.Response:
    return await _matching(request, with_servers=False)


async def hypervisor_servers(request: web.Request) -> web.Response:
    return await _matching(request, with_servers=True)


_REASON = {"type": "string", "minLength": 1, "maxLength": 255}
UPDATE = w.validator({
    "type": "object",
    "properties": {"status": {"enum": ["enabled", "disabled"]}, "disabled_reason": _REASON,
                   "forced_down": {"type": "boolean"}},
    "additionalProperties": False,
    "minProperties": 1,
})
_HOST_BINARY = {"host": {"type": "string", "minLength": 1, "maxLength": 255},
                "binary": {"type": "string", "minLength": 1, "maxLength": 255}}
LEGACY = {
    "enable": w.validator({"type": "object", "properties": _HOST_BINARY, "required": ["host", "binary"],
                           "additionalProperties": False}),
    "disable": w.validator({"type": "object", "properties": _HOST_BINARY, "required": ["host", "binary"],
                            "additionalProperties": False}),
    "disable-log-reason": w.validator({
        "type": "object", "properties": {**_HOST_BINARY, "disabled_reason": _REASON},
        "required": ["host", "binary", "disabled_reason"], "additionalProperties": False}),
    "force-down": w.validator({
        "type": "object", "properties": {**_HOST_BINARY, "forced_down": {"type": "boolean"}},
        "required": ["host", "binary", "forced_down"], "additionalProperties": False}),
}


async def _update(request: web.Request, **changes):
    state = request.app[STATE]
    row = await service_store.update(state.pool, state.settings.scheduler.service_down_time, **changes)
    await _tell(state, "service.update", row)
    return row


async def _tell(state, event_type: str, row) -> None:
    """service.update/delete, published as the service itself, as Nova does (whoever changed it)."""
    await Emitter(state.compute.bus, row["binary_name"], row["host"],
                  enabled=state.settings.notifications.enabled).emit(event_type, payloads.service(row))


async def update_service(request: web.Request) -> web.Response:
    """`PUT /os-services/{service_id}` (2.53+), or the older `PUT /os-services/<action>`."""
    require_admin(request)
    version = microversion.of(request)
    target = request.match_info["service_id"]
    if version < (2, 53):
        return await _legacy_update(request, target, version)
    service_id = parse_uuid(target)
    if service_id is None:
        raise errors.NotFound(f"Service {target} could not be found.")
    body = await w.read_json(request, UPDATE)
    if "disabled_reason" in body and body.get("status") != "disabled":
        raise errors.InvalidInput("disabled_reason is only accepted with status 'disabled'.")
    disabled = None if "status" not in body else body["status"] == "disabled"
    state = request.app[STATE]
    found = await service_store.get(state.pool, state.settings.scheduler.service_down_time, service_id)
    if found is not None and found["binary_name"] != service_store.COMPUTE:
        raise errors.InvalidInput(f"Updating a {found['binary_name']} service is not supported. Only "
                                  "nova-compute services can be updated.")
    row = await _update(request, service_id=service_id, disabled=disabled,
                        reason=body.get("disabled_reason"), forced_down=body.get("forced_down"))
    return w.dump({"service": _service(row, version)})


async def delete_service(request: web.Request) -> web.Response:
    """`DELETE /os-services/{service_id}`: a compute service taken out for good (its host is
    gone or renamed); by uuid from 2.53, before by the integer id GET showed then."""
    require_admin(request)
    state = request.app[STATE]
    version = microversion.of(request)
    target = request.match_info["service_id"]
    down_time = state.settings.scheduler.service_down_time
    if version >= (2, 53):
        service_id = parse_uuid(target)
        if service_id is None:
            raise errors.InvalidInput(f"Invalid uuid {target}.")
    else:
        if not target.isdigit():
            raise errors.InvalidInput(f"Invalid ID {target}.")
        service_id = next((str(r["id"]) for r in await service_store.services(state.pool, down_time, None, None)
                           if _service(r, version)["id"] == int(target)), None)
        if service_id is None:
            raise errors.NotFound(f"Service {target} not found.")
    row = await service_store.delete(state.pool, state.cells, state.placement, down_time, service_id)
    await _tell(state, "service.delete", row)
    return web.Response(status=204)


async def _legacy_update(request: web.Request, action: str, version) -> web.Response:
    if action not in LEGACY or (action == "force-down" and version < (2, 11)):
        raise errors.NotFound(f"Unknown action {action!r}.")
    body = await w.read_json(request, LEGACY[action])
    host, binary = body["host"], body["binary"]
    if action == "force-down":
        row = await _update(request, host=host, binary=binary, forced_down=body["forced_down"])
        return w.dump({"service": {"host": host, "binary": binary, "forced_down": row["forced_down"]}})
    row = await _update(request, host=host, binary=binary, disabled=action != "enable",
                        reason=body.get("disabled_reason"))
    shown = {"host": host, "binary": binary, "status": "disabled" if row["disabled"] else "enabled"}
    if action == "disable-log-reason":
        shown["disabled_reason"] = row["disabled_reason"]
    return w.dump({"service": shown})
