"""Version discovery, as Cinder's v3: the version documents, which need no token."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump, public
from nova_async.volume.handlers.common import base
from nova_async.volume.microversion import MAX_VERSION, MIN_VERSION, text


def v3_document(request: web.Request) -> dict:
    return {"id": "v3.0", "status": "CURRENT", "version": text(MAX_VERSION), "min_version": text(MIN_VERSION),
            "updated": "2023-01-01T00:00:00Z",
            "links": [{"rel": "describedby", "type": "text/html", "href": "https://docs.openstack.org/"},
                      {"rel": "self", "href": f"{base(request)}/volume/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.volume+json;version=3"}]}


@public
async def show_versions(request: web.Request) -> web.Response:
    # Cinder answers its root with 300 Multiple Choices, as a list of one here.
    return dump({"versions": [v3_document(request)]}, status=300)


@public
async def show_v3(request: web.Request) -> web.Response:
    return dump({"versions": [v3_document(request)]})
