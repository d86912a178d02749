"""Nova's deprecated floating IP proxy: `/os-floating-ips` and `/os-floating-ip-pools`
(microversions 2.1–2.35), and the `addFloatingIp` / `removeFloatingIp` server actions
(2.1–2.43, in server_actions.py). The work is in api/floating_ips.py."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import floating_ips as fips
from nova_async.api import microversion
from nova_async.api.state import STATE, ApiState
from nova_async.common import web as w
from nova_async.common.context import RequestContext

_ALLOCATE = w.validator({"type": ["object", "null"], "properties": {"pool": {"type": ["string", "null"]}}})


def _checked(request: web.Request) -> tuple[ApiState, RequestContext]:
    fips.check_proxy_version(microversion.of(request))
    return request.app[STATE], w.context(request)


async def list_floating_ips(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    return w.dump({"floating_ips": await fips.list_floating_ips(state, ctx)})


async def show_floating_ip(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    return w.dump({"floating_ip": await fips.show_floating_ip(state, ctx, request.match_info["floating_ip_id"])})


async def create_floating_ip(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    body = await w.read_body(request) if request.can_read_body else None
    w.check(_ALLOCATE, body)
    return w.dump({"floating_ip": await fips.allocate(state, ctx, (body or {}).get("pool"))})


async def delete_floating_ip(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    await fips.release(state, ctx, request.match_info["floating_ip_id"])
    return web.Response(status=202)


async def list_floating_ip_pools(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    return w.dump({"floating_ip_pools": await fips.list_pools(state, ctx)})

