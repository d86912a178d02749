"""The /v2.0/ports resource."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump, read_json
from nova_async.network import ports, schemas, security_groups, views
from nova_async.network.handlers.common import fields, many
from nova_async.network.state import STATE


async def list_ports(request: web.Request) -> web.Response:
    filters = ports.PortFilters(
        ids=many(request, "id"), network_ids=many(request, "network_id"),
        device_ids=many(request, "device_id"), device_owners=many(request, "device_owner"),
        names=many(request, "name"), macs=many(request, "mac_address"),
        project_ids=many(request, "project_id") or many(request, "tenant_id"),
        security_group_ids=many(request, "security_groups"))
    pool = request.app[STATE].pool
    rows = await ports.list_ports(pool, context(request), filters)
    ips = await ports.fixed_ips(pool, rows)
    groups = await security_groups.port_groups(pool, rows)
    wanted = fields(request)
    return dump({"ports": [views.only(views.port(r, ips[str(r["id"])], groups[str(r["id"])]), wanted)
                           for r in rows]})


async def show_port(request: web.Request) -> web.Response:
    pool = request.app[STATE].pool
    row = await ports.get_port(pool, context(request), request.match_info["port_id"])
    ips = await ports.fixed_ips(pool, [row])
    groups = await security_groups.port_groups(pool, [row])
    return dump({"port": views.only(views.port(row, ips[str(row["id"])], groups[str(row["id"])]),
                                    fields(request))})


async def create_port(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, schemas.PORT)
    pool = request.app[STATE].pool
    row = await ports.create_port(pool, ctx, body["port"])
    ips = await ports.fixed_ips(pool, [row])
    groups = await security_groups.port_groups(pool, [row])
    return dump({"port": views.port(row, ips[str(row["id"])], groups[str(row["id"])])}, status=201)


async def delete_port(request: web.Request) -> web.Response:
    await ports.delete_port(request.app[STATE].pool, context(request), request.match_info["port_id"])
    return web.Response(status=204)
