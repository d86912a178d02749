"""POST /v2/images/{id}/actions/deactivate and …/reactivate (Glance API v2.3)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context
from nova_async.image import store
from nova_async.image.state import STATE


async def deactivate(request: web.Request) -> web.Response:
    await store.change_activation(request.app[STATE].pool, context(request),
                                  request.match_info["image_id"], "deactivate")
    return web.Response(status=204)


async def reactivate(request: web.Request) -> web.Response:
    await store.change_activation(request.app[STATE].pool, context(request),
                                  request.match_info["image_id"], "reactivate")
    return web.Response(status=204)
