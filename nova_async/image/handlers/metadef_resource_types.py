"""/v2/metadefs/resource_types, and a namespace's associations with them."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump, read_json
from nova_async.image import metadef_schemas, metadef_views, metadefs
from nova_async.image.state import STATE


async def list_resource_types(request: web.Request) -> web.Response:
    return dump(metadef_views.resource_types(await metadefs.resource_types(request.app[STATE].pool)))


async def list_associations(request: web.Request) -> web.Response:
    rows = await metadefs.associations(request.app[STATE].pool, context(request), request.match_info["namespace"])
    return dump(metadef_views.associations(rows))


async def create_association(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, metadef_schemas.RESOURCE_TYPE)
    row = await metadefs.associate(request.app[STATE].pool, ctx, request.match_info["namespace"], body)
    return dump(metadef_views.association(row), status=201)


async def delete_association(request: web.Request) -> web.Response:
    await metadefs.dissociate(request.app[STATE].pool, context(request), request.match_info["namespace"],
                              request.match_info["name"])
    return web.Response(status=204)
