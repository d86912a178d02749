"""PUT and DELETE /v2/images/{id}/tags/{tag}: one tag at a time (`openstack image set --tag`
sends the whole list as a patch; glanceclient's image-tag-update uses these)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context
from nova_async.image import store
from nova_async.image.state import STATE


async def add_tag(request: web.Request) -> web.Response:
    await store.add_tag(request.app[STATE].pool, context(request), request.match_info["image_id"],
                        request.match_info["tag"])
    return web.Response(status=204)


async def remove_tag(request: web.Request) -> web.Response:
    await store.remove_tag(request.app[STATE].pool, context(request), request.match_info["image_id"],
                           request.match_info["tag"])
    return web.Response(status=204)
