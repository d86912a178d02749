"""A server's addresses on their own (`/servers/{id}/ips`, and one network's with
`/ips/{network_label}`), as Nova lists them there: version and address only, each port's
floating IPs after its fixed ones."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import server_store, server_views
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w


async def _addresses(request: web.Request) -> dict[str, list[dict[str, Any]]]:
    row = await server_store.show(request.app[STATE], w.context(request), request.match_info["server_id"])
    return server_views.addresses(row["network_info"], extended=False)


async def list_ips(request: web.Request) -> web.Response:
    return w.dump({"addresses": await _addresses(request)})


async def show_ips(request: web.Request) -> web.Response:
    label = request.match_info["network_label"]
    addresses = await _addresses(request)
    if label not in addresses:
        raise errors.NotFound("Instance is not a member of specified network")
    return w.dump({label: addresses[label]})
