"""/os-quota-sets/{project}: show (with ?usage=True), defaults, update and delete (admin)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump, query_flag, read_json
from nova_async.volume import quotas, schemas
from nova_async.volume.handlers.common import api, caller


async def show_quota_set(request: web.Request) -> web.Response:
    ctx = caller(request)
    a = api(request)
    found = await quotas.quota_set(a.pool, a.settings.volume, ctx, request.match_info["target"],
                                   bool(query_flag(request, "usage")))
    return dump({"quota_set": found})


async def show_quota_defaults(request: web.Request) -> web.Response:
    caller(request)
    return dump({"quota_set": {"id": request.match_info["target"], **quotas.defaults(api(request).settings.volume)}})


async def update_quota_set(request: web.Request) -> web.Response:
    ctx = caller(request)
    body = await read_json(request, schemas.update_quota)
    changes = {k: int(v) for k, v in body["quota_set"].items() if k != "tenant_id"}
    a = api(request)
    found = await quotas.update(a.pool, a.settings.volume, ctx, request.match_info["target"], changes)
    return dump({"quota_set": found})


async def delete_quota_set(request: web.Request) -> web.Response:
    ctx = caller(request)
    await quotas.delete(api(request).pool, ctx, request.match_info["target"])
    return web.Response(status=200)
