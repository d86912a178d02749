"""The /v2.0/networks resource."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump
from nova_async.network import networks, schemas, views
from nova_async.network.handlers.common import create_items, fields, flag, many, update_body
from nova_async.network.state import STATE


async def list_networks(request: web.Request) -> web.Response:
    filters = networks.NetworkFilters(
        ids=many(request, "id"), names=many(request, "name"), shared=flag(request, "shared"),
        project_ids=many(request, "project_id") or many(request, "tenant_id"),
        admin_state_up=flag(request, "admin_state_up"), external=flag(request, "router:external"))
    ctx = context(request)
    rows = await networks.list_networks(request.app[STATE].pool, ctx, filters)
    wanted = fields(request)
    return dump({"networks": [views.only(views.network(r, ctx.is_admin), wanted) for r in rows]})


async def show_network(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await networks.get_network(request.app[STATE].pool, ctx, request.match_info["network_id"])
    return dump({"network": views.only(views.network(row, ctx.is_admin), fields(request))})


async def create_network(request: web.Request) -> web.Response:
    """One network, or a bulk list (`{"networks": [...]}`) made all together or not at all."""
    ctx = context(request)
    items, bulk = await create_items(request, "network", schemas.NETWORK)
    state = request.app[STATE]
    made = [views.network(r, ctx.is_admin)
            for r in await networks.create_networks(state.pool, ctx, items, state.physical_networks)]
    return dump({"networks": made} if bulk else {"network": made[0]}, status=201)


async def update_network(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await update_body(request, "network", schemas.NETWORK_UPDATE)
    row = await networks.update_network(request.app[STATE].pool, ctx, request.match_info["network_id"], body)
    return dump({"network": views.network(row, ctx.is_admin)})


async def delete_network(request: web.Request) -> web.Response:
    await networks.delete_network(request.app[STATE].pool, context(request), request.match_info["network_id"])
    return web.Response(status=204)
