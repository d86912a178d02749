"""`os-server-groups`: named policies servers join at boot (`os:scheduler_hints.group`).

Up to 2.63 a group is created with `policies` (a list of exactly one); from 2.64 with
`policy` and, for anti-affinity, `rules.max_server_per_host`. The soft policies exist from
2.15. Members see and manage their project's groups; admins every project's
(`all_projects`). How the scheduler honours a policy: scheduler/server_groups.py."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
from aiohttp import web

from nova_async.api import microversion, quotas, server_group_store
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.context import RequestContext
from nova_async.db.queries import queries

Q = queries("server_groups")

_NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[^\\x00-\\x1f]*$"}
_HARD = ["affinity", "anti-affinity"]
_ALL = _HARD + ["soft-affinity", "soft-anti-affinity"]


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


def _scope(ctx: RequestContext) -> str | None:
    return None if ctx.is_admin else ctx.project_id


async def _get(db, ctx: RequestContext, raw: str) -> asyncpg.Record:
    group_id = w.parse_uuid(raw)
    row = await db.fetchrow(Q.get, group_id, _scope(ctx)) if group_id else None
    if row is None:
        raise errors.NotFound(f"Instance group {raw} could not be found.")
    return row


async def create_server_group(request: web.Request) -> web.Response:
    ctx = w.context(request)
    version = microversion.of(request)
    body = (await w.read_json(request, _create_schema(version)))["server_group"]
    policy = body["policy"] if version >= (2, 64) else body["policies"][0]
    per_host = body.get("rules", {}).get("max_server_per_host")
    if per_host is not None and policy != "anti-affinity":
        raise errors.InvalidInput("Only the anti-affinity policy takes the rule max_server_per_host.")
    state = request.app[STATE]
    async with state.pool.acquire() as conn, conn.transaction():
        limit = (await quotas.lock_and_limits(conn, state.settings.quota, ctx.project_id))["server_groups"]
        used = await conn.fetchval(Q.count_in_project, ctx.project_id)
        if 0 <= limit <= used:
            raise quotas.QuotaExceeded(f"Quota exceeded, too many server groups (limit {limit}).")
        row = await conn.fetchrow(Q.insert, uuid.uuid4(), body["name"], ctx.project_id, ctx.user_id,
                                  policy, per_host)
    return w.dump({"server_group": _view(row, [], version)})


async def list_server_groups(request: web.Request) -> web.Response:
    ctx = w.context(request)
    everyone = ctx.is_admin and w.query_flag(request, "all_projects")
    limit = w.query_int(request, "limit")
    offset = w.query_int(request, "offset", 0)
    pool = request.app[STATE].pool
    rows = await pool.fetch(Q.list, None if everyone else ctx.project_id, limit, offset)
    members = await server_group_store.members_of(pool, [r["uuid"] for r in rows])
    version = microversion.of(request)
    return w.dump({"server_groups": [_view(r, members[str(r["uuid"])], version) for r in rows]})


async def show_server_group(request: web.Request) -> web.Response:
    pool = request.app[STATE].pool
    row = await _get(pool, w.context(request), request.match_info["group_id"])
    members = await server_group_store.members_of(pool, [row["uuid"]])
    return w.dump({"server_group": _view(row, members[str(row["uuid"])], microversion.of(request))})


async def delete_server_group(request: web.Request) -> web.Response:
    pool = request.app[STATE].pool
    row = await _get(pool, w.context(request), request.match_info["group_id"])
    await pool.execute(Q.delete, row["uuid"])
    return web.Response(status=204)

