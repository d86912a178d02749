"""Server handlers: create, list, detail, show, delete."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from aiohttp import web

from nova_async.api import (lookup, microversion, policy, schemas, security_groups, server_create, server_delete,
                            server_store, server_views, volume_attachments)
from nova_async.api.links import links, next_page
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.timeutil import parse_iso

_MAX_LIMIT = 1000


async def create_server(request: web.Request) -> web.Response:
    state, ctx = request.app[STATE], w.context(request)
    body = await w.read_json(request, schemas.CREATE_SERVER)
    accepted = await server_create.create(state, ctx, body, microversion.of(request))
    if body["server"].get("return_reservation_id") in (True, "True", "true"):
        return w.dump({"reservation_id": accepted.reservation_id}, 202)
    first = accepted.uuids[0]
    return w.dump({"server": {"id": first, "links": links(state.base_url, "servers", first),
                              "OS-DCF:diskConfig": body["server"].get("OS-DCF:diskConfig", "MANUAL"),
                              "security_groups": body["server"].get("security_groups") or [{"name": "default"}],
                              "adminPass": accepted.admin_pass}}, 202,
                  {"Location": f"{state.base_url}/compute/v2.1/servers/{first}"})


def _filter(request: web.Request) -> server_store.ListFilter:
    ctx = w.context(request)
    q = request.query
    all_projects = policy.all_tenants(request)
    # As Nova: without all_tenants a list is the caller's project's, whatever project_id or
    # tenant_id say; with it, either one narrows the list to that project.
    project = (q.get("project_id") or q.get("tenant_id") or None) if all_projects else ctx.project_id
    version = microversion.of(request)
    vm_states = task_states = None
    if "status" in q:
        # Each status given (it may repeat) adds its vm_states (and task_states). None known:
        # an empty list before 2.38 (no vm_state is in []), a 400 from 2.38, as Nova.
        vm_states, task_states = server_views.status_filter(q.getall("status"))
        if not vm_states and version >= (2, 38):
            raise errors.InvalidInput(f"Invalid status value {q['status']!r}.")
    since, before = _changed(request, "changes-since"), None
    if version >= (2, 66):
        before = _changed(request, "changes-before")
        if since and before and before < since:
            raise errors.InvalidInput("The value of changes-since must be earlier than or equal to "
                                      "the value of changes-before.")
    limit = min(w.query_int(request, "limit", _MAX_LIMIT) or 0, _MAX_LIMIT)
    return server_store.ListFilter(project_id=project, name=q.get("name") or None, vm_states=vm_states,
                                   reservation_id=q.get("reservation_id"),
                                   host=q.get("host") if ctx.is_admin else None, limit=limit,
                                   marker=q.get("marker"), since=since, before=before,
                                   flavor=q.get("flavor"), image=q.get("image"),
                                   ip=q.get("ip") or (q.get("ip6") if version >= (2, 5) or ctx.is_admin else None),
                                   task_states=task_states)


async def list_servers(request: web.Request) -> web.Response:
    state, f = request.app[STATE], _filter(request)
    rows = await server_store.listing(state, f, detail=False)
    return w.dump({"servers": [server_views.summary(r, state.base_url) for r in rows],
                   **next_page(state.base_url, "servers", "servers", request.query, [str(r["uuid"]) for r in rows],
                               f.limit)})


async def list_servers_detail(request: web.Request) -> web.Response:
    state, ctx, version, f = request.app[STATE], w.context(request), microversion.of(request), _filter(request)
    rows = await server_store.listing(state, f, detail=True)
    groups = await security_groups.of_servers(state, ctx, rows)
    volumes = await volume_attachments.volumes_attached(state, rows)
    return w.dump({"servers": [server_views.detail(r, state.base_url, version, ctx, groups.get(str(r["uuid"])),
                                                   volumes.get(str(r["uuid"])))
                               for r in rows],
                   **next_page(state.base_url, "servers", "servers/detail", request.query,
                               [str(r["uuid"]) for r in rows], f.limit)})


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
    row = await server_store.show(state, ctx, request.match_info["server_id"])
    groups = await security_groups.of_servers(state, ctx, [row])
    volumes = await volume_attachments.volumes_attached(state, [row])
    return w.dump({"server": server_views.detail(row, state.base_url, microversion.of(request), ctx,
                                                 groups.get(str(row["uuid"])), volumes.get(str(row["uuid"])))})


@functools.cache   # one validator per microversion, not one per request
def _update_schema(version) -> Any:
    props: dict[str, Any] = {"name": {"type": "string", "minLength": 1, "maxLength": 255,
                                      "pattern": "^[^\\x00-\\x1f]*$"},
                             "accessIPv4": {"type": "string", "format": "ipv4"},
                             "accessIPv6": {"type": "string", "format": "ipv6"},
                             "OS-DCF:diskConfig": {"enum": ["AUTO", "MANUAL"]}}
    if version >= (2, 19):
        props["description"] = {"type": ["string", "null"], "maxLength": 255}
    if version >= (2, 90):
        props["hostname"] = {"type": "string", "minLength": 1, "maxLength": 63,
                             "pattern": "^[a-zA-Z0-9][a-zA-Z0-9.-]*$"}
    if version >= (2, 104):
        props["pinned_availability_zone"] = {"type": ["string", "null"], "minLength": 1, "maxLength": 255,
                                             "pattern": "^(?! )[^\\x00-\\x1f]*(?<! )$"}
    return w.validator({"type": "object", "required": ["server"], "additionalProperties": False,
                        "properties": {"server": {"type": "object", "properties": props,
                                                  "additionalProperties": False}}})


async def update_server(request: web.Request) -> web.Response:
    """`PUT /servers/{id}`: rename, describe, or set access addresses; answers the server."""
    state, ctx, version = request.app[STATE], w.context(request), microversion.of(request)
    server_id = request.match_info["server_id"]
    # The server is found (404) and checked unlocked (409) before the body is read (400).
    pool, row = await server_store.changeable(state, ctx, server_id)
    body = (await w.read_json(request, _update_schema(version)))["server"]
    row = await server_store.update(state, pool, server_id, row["uuid"], body)
    volumes = await volume_attachments.volumes_attached(state, [row])
    groups = await security_groups.of_servers(state, ctx, [row]) if version >= (2, 75) else {}
    return w.dump({"server": server_views.detail(row, state.base_url, version, ctx, groups.get(str(row["uuid"])),
                                                 volumes.get(str(row["uuid"])), view=server_views.View.UPDATE)})


async def delete_server(request: web.Request) -> web.Response:
    server_id = request.match_info["server_id"]
    uuid = w.parse_uuid(server_id)
    if uuid is None:
        raise lookup.not_found(server_id)
    await server_delete.delete(request.app[STATE], w.context(request), uuid)
    return web.Response(status=204)
