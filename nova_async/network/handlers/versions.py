"""Version documents. No client asks for them (the SDK appends /v2.0 to the catalog URL on
its own), but a person with curl might."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump, public
from nova_async.network import views
from nova_async.network.state import STATE


@public
async def show_versions(request: web.Request) -> web.Response:
    return dump(views.versions(request.app[STATE].base_url))


@public
async def show_resources(request: web.Request) -> web.Response:
    return dump(views.resources(request.app[STATE].base_url))
