"""The /v2.0/quotas resource (`openstack quota show` fails without it)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump
from nova_async.network import quotas
from nova_async.network.state import STATE


async def show_quota(request: web.Request) -> web.Response:
    return dump({"quota": quotas.limits(context(request), request.match_info["project_id"])})


async def show_quota_details(request: web.Request) -> web.Response:
    details = await quotas.usage(request.app[STATE].pool, context(request), request.match_info["project_id"])
    return dump({"quota": details})
