"""`GET /v2/images/{id}/tasks` (Glance's image API 2.12): the tasks that worked on an image,
here the import tasks that made it (image/tasks.py). A visible image's list may be empty;
another's is a 404."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump
from nova_async.image import tasks, views
from nova_async.image.state import STATE


async def list_image_tasks(request: web.Request) -> web.Response:
    rows = await tasks.list_for_image(request.app[STATE].pool, context(request), request.match_info["image_id"])
    return dump({"tasks": [views.task(r) for r in rows]})
