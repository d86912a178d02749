"""Admin views of the deployment: `os-services` (is each compute service up? enable,
disable, force down) and `os-hypervisors` (the compute nodes behind them).

A disabled or forced-down compute service gets no new instances (the scheduler's
ComputeFilter); its instances keep running. Two URL styles, as in Nova: from 2.53 a service
is changed by its uuid (`PUT /os-services/{id}`, all fields in one body); before, by host and
binary through `PUT /os-services/{enable,disable,disable-log-reason,force-down}`."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import microversion, service_store
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.web import parse_uuid
from nova_async.common.timeutil import iso_micro


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
    rows = await service_store.hypervisors(state.pool, state.settings.scheduler.service_down_time)
    version = microversion.of(request)
    return w.dump({"hypervisors": [_hypervisor(r, version, detail) for r in rows]})


async def list_hypervisors(request: web.Request) -> web.Response:
    return await _hypervisors(request, detail=False)


async def list_hypervisors_detail(request: web.Request) -> web.Response:
    return await _hypervisors(request, detail=True)


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
    return await service_store.update(state.pool, state.settings.scheduler.service_down_time, **changes)


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
    row = await _update(request, service_id=service_id, disabled=disabled,
                        reason=body.get("disabled_reason"), forced_down=body.get("forced_down"))
    return w.dump({"service": _service(row, version)})


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
