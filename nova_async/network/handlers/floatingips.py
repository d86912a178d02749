"""The /v2.0/floatingips resource."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump, read_json
from nova_async.network import floatingips, schemas, views
from nova_async.network.handlers.common import fields, many
from nova_async.network.state import STATE


async def list_floatingips(request: web.Request) -> web.Response:
    filters = floatingips.FloatingIpFilters(
        ids=many(request, "id"), addresses=many(request, "floating_ip_address"),
        network_ids=many(request, "floating_network_id"), port_ids=many(request, "port_id"),
        router_ids=many(request, "router_id"), statuses=many(request, "status"),
        project_ids=many(request, "project_id") or many(request, "tenant_id"),
        fixed_addresses=many(request, "fixed_ip_address"))
    rows = await floatingips.list_floatingips(request.app[STATE].pool, context(request), filters)
    wanted = fields(request)
    return dump({"floatingips": [views.only(views.floatingip(r), wanted) for r in rows]})


async def show_floatingip(request: web.Request) -> web.Response:
    row = await floatingips.get_floatingip(request.app[STATE].pool, context(request),
                                           request.match_info["floatingip_id"])
    return dump({"floatingip": views.only(views.floatingip(row), fields(request))})


async def create_floatingip(request: web.Request) -> web.Response:
    body = await read_json(request, schemas.FLOATINGIP_CREATE)
    row = await floatingips.create_floatingip(request.app[STATE].pool, context(request), body["floatingip"])
    return dump({"floatingip": views.floatingip(row)}, status=201)


async def update_floatingip(request: web.Request) -> web.Response:
    body = await read_json(request, schemas.FLOATINGIP_UPDATE)
    api = request.app[STATE]
    row = await floatingips.update_floatingip(api.pool, api.cells, context(request),
                                              request.match_info["floatingip_id"], body["floatingip"])
    return dump({"floatingip": views.floatingip(row)})


async def delete_floatingip(request: web.Request) -> web.Response:
    api = request.app[STATE]
    await floatingips.delete_floatingip(api.pool, api.cells, context(request), request.match_info["floatingip_id"])
    return web.Response(status=204)
