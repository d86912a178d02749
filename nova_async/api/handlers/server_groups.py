"""`os-server-groups`: named policies servers join at boot (`os:scheduler_hints.group`).

Up to 2.63 a group is created with `policies` (a list of exactly one); from 2.64 with
`policy` and, for anti-affinity, `rules.max_server_per_host`. The soft policies exist from
2.15. Members see and manage their project's groups; admins every project's
(`all_projects`). How the scheduler honours a policy: scheduler/server_groups.py."""

from __future__ import annotations

import functools
from typing import Any

import asyncpg
from aiohttp import web

from nova_async.api import microversion, server_group_store
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

_NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[^\\x00-\\x1f]*$"}
_HARD = ["affinity", "anti-affinity"]
_ALL = _HARD + ["soft-affinity", "soft-anti-affinity"]


@functools.cache   # one validator per microversion, not one per request
def _create_schema(version) -> Any:
    if version >= (2, 64):
        group = {"type": "object", "required": ["name", "policy"], "additionalProperties": False,
                 "properties": {"name": _NAME, "policy": {"enum": _ALL},
                                "rules": {"type": "object", "additionalProperties": False,
                                          "properties": {"max_server_per_host": {
                                              "type": "integer", "minimum": 1, "maximum": 2**31 - 1}}}}}
    else:
        allowed = _ALL if version >= (2, 15) else _HARD
        group = {"type": "object", "required": ["name", "policies"], "additionalProperties": False,
                 "properties": {"name": _NAME, "policies": {"type": "array", "minItems": 1, "maxItems": 1,
                                                            "items": {"enum": allowed}}}}
    return w.validator({"type": "object", "required": ["server_group"], "additionalProperties": False,
                        "properties": {"server_group": group}})


def _view(row: asyncpg.Record, members: list[str], version) -> dict[str, Any]:
    out: dict[str, Any] = {"id": str(row["uuid"]), "name": row["name"], "members": members}
    if version >= (2, 64):
        out["policy"] = row["policy"]
        out["rules"] = ({"max_server_per_host": row["max_server_per_host"]}
                        if row["max_server_per_host"] else {})
    else:
        out["policies"] = [row["policy"]]
        out["metadata"] = {}
    if version >= (2, 13):
        out["project_id"], out["user_id"] = row["project_id"], row["user_id"]
    return out


async def create_server_group(request: web.Request) -> web.Response:
    ctx = w.context(request)
    version = microversion.of(request)
    body = (await w.read_json(request, _create_schema(version)))["server_group"]
    policy = body["policy"] if version >= (2, 64) else body["policies"][0]
    per_host = body.get("rules", {}).get("max_server_per_host")
    if per_host is not None and policy != "anti-affinity":
        raise errors.InvalidInput("Only the anti-affinity policy takes the rule max_server_per_host.")
    state = request.app[STATE]
    row = await server_group_store.create(state.pool, state.settings.quota, ctx, body["name"], policy, per_host)
    return w.dump({"server_group": _view(row, [], version)})


async def list_server_groups(request: web.Request) -> web.Response:
    ctx = w.context(request)
    everyone = ctx.is_admin and w.query_flag(request, "all_projects")
    limit = w.query_int(request, "limit")
    offset = w.query_int(request, "offset", 0)
    found = await server_group_store.listing(request.app[STATE].pool, None if everyone else ctx.project_id,
                                             limit, offset)
    version = microversion.of(request)
    return w.dump({"server_groups": [_view(g.row, g.members, version) for g in found]})


async def show_server_group(request: web.Request) -> web.Response:
    found = await server_group_store.get(request.app[STATE].pool, w.context(request), request.match_info["group_id"])
    return w.dump({"server_group": _view(found.row, found.members, microversion.of(request))})


async def delete_server_group(request: web.Request) -> web.Response:
    await server_group_store.delete(request.app[STATE].pool, w.context(request), request.match_info["group_id"])
    return web.Response(status=204)
