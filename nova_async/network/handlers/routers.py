"""The /v2.0/routers resource, with its add_router_interface and remove_router_interface actions."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump, read_json
from nova_async.network import routers, schemas, views
from nova_async.network.handlers.common import fields, flag, many
from nova_async.network.state import STATE


async def list_routers(request: web.Request) -> web.Response:
    ctx = context(request)
    filters = routers.RouterFilters(
        ids=many(request, "id"), names=many(request, "name"),
        project_ids=many(request, "project_id") or many(request, "tenant_id"),
        admin_state_up=flag(request, "admin_state_up"))
    rows = await routers.list_routers(request.app[STATE].pool, ctx, filters)
    wanted = fields(request)
    return dump({"routers": [views.only(views.router(r, ctx.is_admin), wanted) for r in rows]})


async def show_router(request: web.Request) -> web.Response:
    ctx = context(request)
    row = await routers.get_router(request.app[STATE].pool, ctx, request.match_info["router_id"])
    return dump({"router": views.only(views.router(row, ctx.is_admin), fields(request))})


async def create_router(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, schemas.ROUTER_CREATE)
    row = await routers.create_router(request.app[STATE].pool, ctx, body["router"])
    return dump({"router": views.router(row, ctx.is_admin)}, status=201)


async def update_router(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, schemas.ROUTER_UPDATE)
    row = await routers.update_router(request.app[STATE].pool, ctx, request.match_info["router_id"], body["router"])
    return dump({"router": views.router(row, ctx.is_admin)})


async def delete_router(request: web.Request) -> web.Response:
    await routers.delete_router(request.app[STATE].pool, context(request), request.match_info["router_id"])
    return web.Response(status=204)


async def add_router_interface(request: web.Request) -> web.Response:
    body = await read_json(request, schemas.ROUTER_INTERFACE)
    info = await routers.add_interface(request.app[STATE].pool, context(request), request.match_info["router_id"],
                                       body)
    return dump(views.router_interface(info))


async def remove_router_interface(request: web.Request) -> web.Response:
    body = await read_json(request, schemas.ROUTER_INTERFACE)
    info = await routers.remove_interface(request.app[STATE].pool, context(request),
                                          request.match_info["router_id"], body)
    return dump(views.router_interface(info))
