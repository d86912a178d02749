"""Version discovery: `GET /compute/`, `GET /compute/v2.1` and `GET /compute/v2` (no token
needed)."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import microversion
from nova_async.api.state import STATE
from nova_async.common import web as w


def _v21(base: str) -> dict:
    return {"id": "v2.1", "status": "CURRENT", "version": str(microversion.MAX),
            "min_version": str(microversion.MIN), "updated": "2013-07-23T11:33:21Z",
            "links": [{"rel": "self", "href": f"{base}/compute/v2.1/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.compute+json;version=2.1"}]}


def _v20(base: str) -> dict:
    # Nova lists the old v2.0 API beside v2.1 (DEPRECATED since its 2025.2 release, SUPPORTED
    # before): v2.1's routes without microversions (routes.py mounts them at /v2 as well).
    return {"id": "v2.0", "status": "DEPRECATED", "version": "", "min_version": "",
            "updated": "2025-07-04T12:00:00Z", "links": [{"rel": "self", "href": f"{base}/compute/v2/"}]}


@w.public
async def list_versions(request: web.Request) -> web.Response:
    base = request.app[STATE].base_url
    return w.dump({"versions": [_v20(base), _v21(base)]})


@w.public
async def show_version(request: web.Request) -> web.Response:
    base = request.app[STATE].base_url
    if microversion.legacy_v2(request):
        return w.dump({"version": {**_v20(base), "media-types": [
            {"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2"}]}})
    return w.dump({"version": _v21(base)})
