"""An image's data (/v2/images/{id}/file): streamed in on PUT, streamed out on GET.

The body is read in chunks straight from the connection, so the API's request-size cap
does not apply and an image of any size never sits in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import context
from nova_async.image import store
from nova_async.image.state import STATE

_CHUNK = 1024 * 1024


async def _body_chunks(request: web.Request) -> AsyncIterator[bytes]:
    try:
        async for chunk in request.content.iter_chunked(_CHUNK):
            yield chunk
    except (aiohttp.ClientError, ConnectionError) as exc:
        raise errors.InvalidInput(f"The image data did not arrive whole: {exc}") from None


async def update_image_file(request: web.Request) -> web.Response:
    ctx = context(request)
    if request.content_type != "application/octet-stream":
        raise errors.UnsupportedMediaType(
            f"Image data must be sent as application/octet-stream, not {request.content_type}.")
    state = request.app[STATE]
    await store.upload(state.pool, ctx, request.match_info["image_id"], _body_chunks(request),
                       state.files)
    return web.Response(status=204)


async def show_image_file(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    row = await store.get(state.pool, context(request), request.match_info["image_id"])
    path = store.download_path(row, context(request), state.files)
    if not path:
        return web.Response(status=204)
    return web.FileResponse(path, headers={"Content-Type": "application/octet-stream",
                                           "Content-MD5": row["checksum"] or ""})
