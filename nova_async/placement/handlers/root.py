"""The version document at `GET /placement/`: public, and where clients negotiate."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump, public
from nova_async.placement import microversion
from nova_async.placement.media import bodiless


@public
@bodiless
async def show_versions(request: web.Request) -> web.Response:
    return dump({"versions": [{
        "id": "v1.0",
        "max_version": str(microversion.MAX),
        "min_version": str(microversion.MIN),
        "status": "CURRENT",
        # Upstream's self link is the empty relative URL, "this same URL", wherever placement
        # is mounted: it never needs to know its public address.
        "links": [{"rel": "self", "href": ""}],
    }]})
