"""The /v2.0/extensions resource: which Neutron extensions this subset implements. The CLI
asks before some commands (`router set --external-gateway` looks for
external-gateway-multihoming, and takes the older external_gateway_info path without it)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump
from nova_async.network import views
from nova_async.network.handlers.common import fields, many


async def list_extensions(request: web.Request) -> web.Response:
    names, aliases = many(request, "name"), many(request, "alias")
    found = [views.extension(*e) for e in views.EXTENSIONS
             if (names is None or e[1] in names) and (aliases is None or e[0] in aliases)]
    wanted = fields(request)
    return dump({"extensions": [views.only(e, wanted) for e in found]})


async def show_extension(request: web.Request) -> web.Response:
    alias = request.match_info["alias"]
    for e in views.EXTENSIONS:
        if e[0] == alias:
            return dump({"extension": views.extension(*e)})
    raise errors.NotFound(f"Extension with alias {alias} does not exist", code="extension_not_found")
