"""Version discovery: the SDK reads `GET /image` and uses the href it finds as its base URL,
so the links must point back at this server."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump, public
from nova_async.image import views
from nova_async.image.state import STATE


@public
async def show_versions(request: web.Request) -> web.Response:
    return dump(views.versions(request.app[STATE].base_url), status=300)
