"""Nova's deprecated volume proxy: `/os-volumes` and `/os-snapshots` (microversions
2.1–2.35). The work is in api/volume_proxy.py."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import microversion
from nova_async.api import volume_proxy as proxy
from nova_async.api.state import STATE, ApiState
from nova_async.common import web as w
from nova_async.common.context import RequestContext

_VOLUME = w.validator(proxy.VOLUME_SCHEMA)
_SNAPSHOT = w.validator(proxy.SNAPSHOT_SCHEMA)


def _checked(request: web.Request) -> tuple[ApiState, RequestContext]:
    proxy.check_proxy_version(microversion.of(request))
    return request.app[STATE], w.context(request)


def _paged(request: web.Request, items: list) -> list:
    return proxy.page(items, w.query_int(request, "offset"), w.query_int(request, "limit"))


async def list_volumes(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    return w.dump({"volumes": _paged(request, await proxy.list_volumes(state, ctx))})


async def show_volume(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    return w.dump({"volume": await proxy.show_volume(state, ctx, request.match_info["volume_id"])})


async def create_volume(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    body = await w.read_json(request, _VOLUME)
    made = await proxy.create_volume(state, ctx, body["volume"])
    response = w.dump({"volume": made})
    response.headers["Location"] = f"{request.url}/{made['id']}"
    return response


async def delete_volume(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    await proxy.delete_volume(state, ctx, request.match_info["volume_id"])
    return web.Response(status=202)


async def list_snapshots(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    return w.dump({"snapshots": _paged(request, await proxy.list_snapshots(state, ctx))})


async def show_snapshot(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    return w.dump({"snapshot": await proxy.show_snapshot(state, ctx, request.match_info["snapshot_id"])})


async def create_snapshot(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    body = await w.read_json(request, _SNAPSHOT)
    return w.dump({"snapshot": await proxy.create_snapshot(state, ctx, body["snapshot"])})


async def delete_snapshot(request: web.Request) -> web.Response:
    state, ctx = _checked(request)
    await proxy.delete_snapshot(state, ctx, request.match_info["snapshot_id"])
    return web.Response(status=202)
