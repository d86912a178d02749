"""Version documents and the extension list. No client asks for the versions (the SDK
appends /v2.0 to the catalog URL on its own), but a person with curl might; the CLI reads
the extensions before some commands (`openstack port create`)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump, public
from nova_async.network import views
from nova_async.network.state import STATE


@public
async def show_versions(request: web.Request) -> web.Response:
    return dump(views.versions(request.app[STATE].base_url))


@public
async def show_resources(request: web.Request) -> web.Response:
    return dump(views.resources(request.app[STATE].base_url))


async def list_extensions(request: web.Request) -> web.Response:
    return dump({"extensions": [views.extension(alias) for alias in sorted(views.EXTENSIONS)]})


async def show_extension(request: web.Request) -> web.Response:
    alias = request.match_info["alias"]
    if alias not in views.EXTENSIONS:
        raise errors.NotFound(f"Extension with alias {alias} does not exist")
    return dump({"extension": views.extension(alias)})
