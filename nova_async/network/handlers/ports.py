"""The /v2.0/ports resource."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump
from nova_async.network import port_update, ports, schemas, security_groups, views
from nova_async.network.handlers.common import create_items, fields, many, update_body
from nova_async.network.state import STATE


async def _render(pool, rows) -> list[dict]:
    ips = await ports.fixed_ips(pool, rows)
    groups = await security_groups.port_groups(pool, rows)
    return [views.port(r, ips[str(r["id"])], groups[str(r["id"])]) for r in rows]


async def list_ports(request: web.Request) -> web.Response:
    filters = ports.PortFilters(
        ids=many(request, "id"), network_ids=many(request, "network_id"),
        device_ids=many(request, "device_id"), device_owners=many(request, "device_owner"),
        names=many(request, "name"), macs=many(request, "mac_address"),
        project_ids=many(request, "project_id") or many(request, "tenant_id"),
        security_group_ids=many(request, "security_groups"), fixed_ips=many(request, "fixed_ips"))
    pool = request.app[STATE].pool
    rows = await ports.list_ports(pool, context(request), filters)
    wanted = fields(request)
    return dump({"ports": [views.only(p, wanted) for p in await _render(pool, rows)]})


async def show_port(request: web.Request) -> web.Response:
    pool = request.app[STATE].pool
    row = await ports.get_port(pool, context(request), request.match_info["port_id"])
    return dump({"port": views.only((await _render(pool, [row]))[0], fields(request))})


async def create_port(request: web.Request) -> web.Response:
    """One port, or a bulk list (`{"ports": [...]}`) made all together or not at all."""
    ctx = context(request)
    items, bulk = await create_items(request, "port", schemas.PORT)
    pool = request.app[STATE].pool
    made = await _render(pool, await ports.create_ports(pool, ctx, items))
    return dump({"ports": made} if bulk else {"port": made[0]}, status=201)


async def update_port(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await update_body(request, "port", schemas.PORT_UPDATE)
    pool = request.app[STATE].pool
    row = await port_update.update_port(pool, ctx, request.match_info["port_id"], body)
    return dump({"port": (await _render(pool, [row]))[0]})


async def delete_port(request: web.Request) -> web.Response:
    await ports.delete_port(request.app[STATE].pool, context(request), request.match_info["port_id"])
    return web.Response(status=204)
