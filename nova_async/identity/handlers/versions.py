"""Identity version discovery, no token needed: `GET /v3` (Keystone's `{"version": ...}`)
and the shared port's root `GET /`, Keystone's `300 Multiple Choices` list of versions.

The root belongs to identity because the only client that looks there is keystoneauth: given
the identity endpoint `http://host:8774/v3`, it may strip the version to find the others. The
other APIs are discovered under their own prefixes (`/compute/`, `/image/`, ...)."""

from __future__ import annotations

import msgspec
from aiohttp import web

from nova_async.common import web as w
from nova_async.config import Settings
from nova_async.dashboard import serve as dashboard
from nova_async.identity.views import DEPS


def v3(settings: Settings) -> dict:
    return {"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
            "links": [{"rel": "self", "href": f"{settings.base_url}/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.identity-v3+json"}]}


@w.public
async def show_version(request: web.Request) -> web.Response:
    return w.dump({"version": v3(request.app[DEPS].settings)})


def list_versions(settings: Settings) -> w.Handler:
    """The root's handler; it lives on the port's root application, outside identity's own.
    A browser navigating to it goes to the dashboard, where this process serves one (the
    compute API role does): a person typing the address wants a page, not JSON."""
    current = v3(settings)
    body = msgspec.json.encode({"versions": {"values": [current]}})
    location = current["links"][0]["href"]

    with_dashboard = "api" in settings.service.roles

    async def handler(request: web.Request) -> web.Response:
        if with_dashboard and dashboard.wants_html(request):
            raise web.HTTPFound(f"{dashboard.PREFIX}/")
        return web.Response(body=body, status=300, content_type="application/json",
                            headers={"Location": location})

    return handler
