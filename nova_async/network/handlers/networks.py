"""The /v2.0/networks resource."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump, read_json
from nova_async.network import networks, schemas, views
from nova_async.network.handlers.common import fields, flag, many
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
    ctx = context(request)
    body = await read_json(request, schemas.NETWORK)
    state = request.app[STATE]
    row = await networks.create_network(state.pool, ctx, body["network"], state.physical_networks)
    return dump({"network": views.network(row, ctx.is_admin)}, status=201)


async def delete_network(request: web.Request) -> web.Response:
    await networks.delete_network(request.app[STATE].pool, context(request), request.match_info["network_id"])
    return web.Response(status=204)
