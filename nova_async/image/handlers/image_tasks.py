"""`GET /v2/images/{id}/tasks` (Glance's image API 2.12): the import and location tasks that
worked on an image. Images here are uploaded, never imported or fetched from a location,
so no task ever works on one: a visible image's list is empty, another's a 404."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump
from nova_async.image import store
from nova_async.image.state import STATE


async def list_image_tasks(request: web.Request) -> web.Response:
    await store.get(request.app[STATE].pool, context(request), request.match_info["image_id"])
    return dump({"tasks": []})
