"""Server handlers: create, list, detail, show, delete."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg
from aiohttp import web

from nova_async.api import lookup, microversion, schemas, server_create, server_delete, server_views
from nova_async.api.links import links
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.timeutil import parse_iso
from nova_async.db.queries import queries

Q = queries("servers")
_MAX_LIMIT = 1000
# A summary list reads three columns, not whole rows: a request spec, user data and network
# info are most of a row's bytes, and a poller listing a thousand servers reads them all.
_LIST_SUMMARY = Q.list.format(columns="i.uuid, i.display_name, i.created_at")
_LIST_DETAIL = Q.list.format(columns="i.*, f.message AS fault_message, f.code AS fault_code, "
                                     "f.details AS fault_details, f.created_at AS fault_created_at")


async def create_server(request: web.Request) -> web.Response:
    state, ctx = request.app[STATE], w.context(request)
    body = await w.read_json(request, schemas.CREATE_SERVER)
    accepted = await server_create.create(state, ctx, body, microversion.of(request))
    if body["server"].get("return_reservation_id") in (True, "True", "true"):
        return w.dump({"reservation_id": accepted.reservation_id}, 202)
    first = accepted.uuids[0]
    return w.dump({"server": {"id": first, "links": links(state.base_url, "servers", first),
                              "OS-DCF:diskConfig": "MANUAL", "security_groups": [{"name": "default"}],
                              "adminPass": accepted.admin_pass}}, 202,
                  {"Location": f"{state.base_url}/compute/v2.1/servers/{first}"})


async def _query(request: web.Request, query: str) -> list[asyncpg.Record]:
    state, ctx = request.app[STATE], w.context(request)
    q = request.query
    all_projects = q.get("all_tenants", "false").lower() not in ("false", "0", "no", "off")
    if all_projects and not ctx.is_admin:
        raise errors.Forbidden("Policy does not allow listing the servers of all projects (all_tenants).")
    project = None if all_projects else (q.get("project_id") if ctx.is_admin and q.get("project_id")
                                         else ctx.project_id)
    vm_states = None
    if "status" in q:
        vm_states = server_views.STATUS_FILTER.get(q["status"].upper())
        if vm_states is None:
            raise errors.InvalidInput(f"Invalid status value {q['status']!r}.")
    since, before = _changed(request, "changes-since"), None
    if microversion.of(request) >= (2, 66):
        before = _changed(request, "changes-before")
        if since and before and before < since:
            raise errors.InvalidInput("The value of changes-since must be earlier than or equal to "
                                      "the value of changes-before.")
    limit = min(w.query_int(request, "limit", _MAX_LIMIT) or 0, _MAX_LIMIT)
    marker_at = marker_uuid = None
    if "marker" in q:
        marker_id = w.parse_uuid(q["marker"])
        cell = await state.cells.of_instance(marker_id) if marker_id else None
        marker = await cell.pool.fetchrow(Q.marker, marker_id) if cell else None
        if marker is None:
            raise errors.InvalidInput(f"marker [{q['marker']}] not found")
        marker_at, marker_uuid = marker["created_at"], marker["uuid"]
    try:
        # Every cell's first page, merged newest first: the same order each cell sorts by.
        rows = await state.cells.gather(query, project, q.get("name") or None, vm_states,
                                        q.get("reservation_id"), q.get("host") if ctx.is_admin else None,
                                        limit, marker_at, marker_uuid, since, before)
    except asyncpg.InvalidRegularExpressionError:
        raise errors.InvalidInput(f"Invalid regular expression for name: {q.get('name')!r}") from None
    rows.sort(key=lambda r: (r["created_at"], r["uuid"]), reverse=True)
    # A server being moved between cells is in both for a moment: listed once.
    unique = list({r["uuid"]: r for r in rows}.values())
    return unique[:limit]


async def list_servers(request: web.Request) -> web.Response:
    base = request.app[STATE].base_url
    return w.dump({"servers": [server_views.summary(r, base) for r in await _query(request, _LIST_SUMMARY)]})


async def list_servers_detail(request: web.Request) -> web.Response:
    base, ctx, version = request.app[STATE].base_url, w.context(request), microversion.of(request)
    return w.dump({"servers": [server_views.detail(r, base, version, ctx)
                                  for r in await _query(request, _LIST_DETAIL)]})


def _changed(request: web.Request, name: str) -> datetime | None:
    raw = request.query.get(name)
    if raw is None:
        return None
    when = parse_iso(raw)
    if when is None:
        raise errors.InvalidInput(f"Invalid filter field: {name}: {raw!r} is not an ISO 8601 time "
                                  "(e.g. 2025-01-24T17:08:00Z).")
    return when


async def show_server(request: web.Request) -> web.Response:
    state, ctx = request.app[STATE], w.context(request)
    _, row = await lookup.visible_instance(state, ctx, request.match_info["server_id"], Q.get_with_fault)
    row = await lookup.with_groups(state, row)
    return w.dump({"server": server_views.detail(row, state.base_url, microversion.of(request), ctx)})


def _update_schema(version) -> Any:
    props: dict[str, Any] = {"name": {"type": "string", "minLength": 1, "maxLength": 255,
                                      "pattern": "^[^\\x00-\\x1f]*$"},
                             "accessIPv4": {"type": "string", "format": "ipv4"},
                             "accessIPv6": {"type": "string", "format": "ipv6"}}
    if version >= (2, 19):
        props["description"] = {"type": ["string", "null"], "maxLength": 255}
    if version >= (2, 90):
        props["hostname"] = {"type": "string", "minLength": 1, "maxLength": 63,
                             "pattern": "^[a-zA-Z0-9][a-zA-Z0-9.-]*$"}
    return w.validator({"type": "object", "required": ["server"], "additionalProperties": False,
                        "properties": {"server": {"type": "object", "properties": props,
                                                  "additionalProperties": False}}})


async def update_server(request: web.Request) -> web.Response:
    """`PUT /servers/{id}`: rename, describe, or set access addresses; answers the server."""
    state, ctx, version = request.app[STATE], w.context(request), microversion.of(request)
    server_id = request.match_info["server_id"]
    pool, row = await lookup.visible_instance(state, ctx, server_id)
    uuid = row["uuid"]
    if row["locked"] and not ctx.is_admin:
        raise errors.Conflict(f"Instance {server_id} is locked.")
    body = (await w.read_json(request, _update_schema(version)))["server"]
    keys = ("name", "hostname", "description", "accessIPv4", "accessIPv6")
    await pool.execute(Q.update, uuid, *(body.get(k) for k in keys), *(k in body for k in keys))
    row = await lookup.shown(state, pool, uuid)
    if row is None:
        raise lookup.not_found(server_id)
    return w.dump({"server": server_views.detail(row, state.base_url, version, ctx)})


async def delete_server(request: web.Request) -> web.Response:
    server_id = request.match_info["server_id"]
    uuid = w.parse_uuid(server_id)
    if uuid is None:
        raise lookup.not_found(server_id)
    await server_delete.delete(request.app[STATE], w.context(request), uuid)
    return web.Response(status=204)
