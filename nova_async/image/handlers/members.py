"""/v2/images/{id}/members: offer a shared image to another project, and its answer."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump, read_json
from nova_async.image import members, schemas, views
from nova_async.image.state import STATE


async def create_member(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, schemas.NEW_MEMBER)
    row = await members.add(request.app[STATE].pool, ctx, request.match_info["image_id"], body["member"])
    return dump(views.member(row))   # 200, as Glance


async def list_members(request: web.Request) -> web.Response:
    rows = await members.list_members(request.app[STATE].pool, context(request), request.match_info["image_id"])
    return dump(views.member_list(rows))


async def show_member(request: web.Request) -> web.Response:
    row = await members.get(request.app[STATE].pool, context(request), request.match_info["image_id"],
                            request.match_info["member_id"])
    return dump(views.member(row))


async def update_member(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, schemas.MEMBER_ANSWER)
    row = await members.answer(request.app[STATE].pool, ctx, request.match_info["image_id"],
                               request.match_info["member_id"], body["status"])
    return dump(views.member(row))


async def delete_member(request: web.Request) -> web.Response:
    await members.remove(request.app[STATE].pool, context(request), request.match_info["image_id"],
                         request.match_info["member_id"])
    return web.Response(status=204)
