"""`os-quota-sets` and `limits`: a project's quotas as Nova shows them.

Members read their own project's; admins read and change any project's. The fields follow
the microversion: the nova-network resources left at 2.36, the personality-file ones at
2.57 (see quotas.py for what is enforced)."""

from __future__ import annotations

import functools
from typing import Any

from aiohttp import web

from nova_async.api import microversion, quotas, schemas
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

_MAX = 2**31 - 1
# As Nova: an integer, or a string of one ("10"); the range is checked once it is a number.
_LIMIT = {"type": ["integer", "string"], "pattern": "^-?[0-9]+$", "minimum": -1, "maximum": _MAX}


@functools.cache   # one validator per microversion, not one per request
def _update_schema(version) -> Any:
    names = list(quotas.RESOURCES)
    if version < (2, 57):
        names += list(quotas.FILES)
    if version < (2, 36):
        names += list(quotas.NETWORK)
    props: dict[str, Any] = {n: _LIMIT for n in names}
    props["force"] = schemas.BOOLEAN
    return w.validator({"type": "object", "required": ["quota_set"], "additionalProperties": False,
                        "properties": {"quota_set": {"type": "object", "properties": props,
                                                     "additionalProperties": False}}})


def _limit(name: str, value: int | str) -> int:
    number = int(value)
    if not -1 <= number <= _MAX:
        raise errors.InvalidInput(f"Invalid input for field/attribute {name}. Value: {value}. "
                                  f"It must be between -1 and {_MAX}.")
    return number


def _shown(values: dict[str, Any], version, filler) -> dict[str, Any]:
    """The resources a client of `version` expects; `filler(name, default)` for the extras."""
    out = dict(values)
    if version < (2, 57):
        out.update({k: filler(k, v) for k, v in quotas.FILES.items()})
    if version < (2, 36):
        out.update({k: filler(k, v) for k, v in quotas.NETWORK.items()})
    return out


def _project(request: web.Request) -> str:
    project_id = request.match_info["project_id"]
    ctx = w.context(request)
    if not ctx.is_admin and project_id != ctx.project_id:
        raise errors.Forbidden(f"Policy does not allow showing the quotas of project {project_id}.")
    return project_id


async def show_quota_set(request: web.Request) -> web.Response:
    project_id = _project(request)
    state = request.app[STATE]
    limit = await quotas.limits(state.pool, state.settings.quota, project_id)
    shown = _shown(limit, microversion.of(request), lambda _k, v: v)
    return w.dump({"quota_set": {"id": project_id, **shown}})


async def show_defaults(request: web.Request) -> web.Response:
    project_id = _project(request)
    state = request.app[STATE]
    shown = _shown(await quotas.default_limits(state.pool, state.settings.quota), microversion.of(request),
                   lambda _k, v: v)
    return w.dump({"quota_set": {"id": project_id, **shown}})


async def show_detail(request: web.Request) -> web.Response:
    project_id = _project(request)
    state = request.app[STATE]
    limit, used = await quotas.limits_and_usage(state.pool, state.cells, state.settings.quota, project_id)
    detail = {r: {"limit": limit[r], "in_use": used[r], "reserved": 0} for r in quotas.RESOURCES}
    shown = _shown(detail, microversion.of(request), lambda _k, v: {"limit": v, "in_use": 0, "reserved": 0})
    return w.dump({"quota_set": {"id": project_id, **shown}})


async def update_quota_set(request: web.Request) -> web.Response:
    require_admin(request)
    project_id = request.match_info["project_id"]
    version = microversion.of(request)
    body = (await w.read_json(request, _update_schema(version)))["quota_set"]
    force = str(body.pop("force", False)).lower() in schemas.TRUE_SPELLINGS
    body = {name: _limit(name, value) for name, value in body.items()}
    state = request.app[STATE]
    limit = await quotas.set_limits(state.pool, state.cells, state.settings.quota, project_id, body, force=force)
    return w.dump({"quota_set": _shown(limit, version, lambda _k, v: v)})


async def delete_quota_set(request: web.Request) -> web.Response:
    require_admin(request)
    await quotas.clear_limits(request.app[STATE].pool, request.match_info["project_id"])
    return web.Response(status=202)


async def show_limits(request: web.Request) -> web.Response:
    ctx = w.context(request)
    project_id = request.query.get("tenant_id") if ctx.is_admin and request.query.get("tenant_id") \
        else ctx.project_id
    state = request.app[STATE]
    limit, used = await quotas.limits_and_usage(state.pool, state.cells, state.settings.quota, project_id)
    version = microversion.of(request)
    absolute = {"maxTotalInstances": limit["instances"], "maxTotalCores": limit["cores"],
                "maxTotalRAMSize": limit["ram"], "maxServerMeta": limit["metadata_items"],
                "maxImageMeta": limit["metadata_items"], "maxTotalKeypairs": limit["key_pairs"],
                "maxServerGroups": limit["server_groups"],
                "maxServerGroupMembers": limit["server_group_members"],
                "totalInstancesUsed": used["instances"], "totalCoresUsed": used["cores"],
                "totalRAMUsed": used["ram"], "totalServerGroupsUsed": used["server_groups"]}
    if version < (2, 57):
        absolute.update({"maxPersonality": quotas.FILES["injected_files"],
                         "maxPersonalitySize": quotas.FILES["injected_file_content_bytes"]})
    if version < (2, 36):
        absolute.update({"maxSecurityGroups": -1, "maxSecurityGroupRules": -1, "maxTotalFloatingIps": -1,
                         "totalSecurityGroupsUsed": 0, "totalFloatingIpsUsed": 0})
    return w.dump({"limits": {"rate": [], "absolute": absolute}})
