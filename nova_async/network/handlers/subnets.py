"""The /v2.0/subnets resource."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import context, dump
from nova_async.network import schemas, subnets, views
from nova_async.network.handlers.common import create_items, fields, many, number, update_body
from nova_async.network.state import STATE


async def list_subnets(request: web.Request) -> web.Response:
    ip_version = number(request, "ip_version")
    if ip_version not in (None, 4, 6):  # Neutron validates filters; and the column is a smallint
        raise errors.InvalidInput(f"Invalid input for ip_version: {ip_version} is not in [4, 6].")
    filters = subnets.SubnetFilters(
        ids=many(request, "id"), names=many(request, "name"), network_ids=many(request, "network_id"),
        cidrs=many(request, "cidr"), ip_version=ip_version,
        project_ids=many(request, "project_id") or many(request, "tenant_id"))
    rows = await subnets.list_subnets(request.app[STATE].pool, context(request), filters)
    wanted = fields(request)
    return dump({"subnets": [views.only(views.subnet(r), wanted) for r in rows]})


async def show_subnet(request: web.Request) -> web.Response:
    row = await subnets.get_subnet(request.app[STATE].pool, context(request), request.match_info["subnet_id"])
    return dump({"subnet": views.only(views.subnet(row), fields(request))})


async def create_subnet(request: web.Request) -> web.Response:
    """One subnet, or a bulk list (`{"subnets": [...]}`) made all together or not at all."""
    ctx = context(request)
    items, bulk = await create_items(request, "subnet", schemas.SUBNET)
    made = [views.subnet(r) for r in await subnets.create_subnets(request.app[STATE].pool, ctx, items)]
    return dump({"subnets": made} if bulk else {"subnet": made[0]}, status=201)


async def update_subnet(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await update_body(request, "subnet", schemas.SUBNET_UPDATE)
    row = await subnets.update_subnet(request.app[STATE].pool, ctx, request.match_info["subnet_id"], body)
    return dump({"subnet": views.subnet(row)})


async def delete_subnet(request: web.Request) -> web.Response:
    await subnets.delete_subnet(request.app[STATE].pool, context(request), request.match_info["subnet_id"])
    return web.Response(status=204)
