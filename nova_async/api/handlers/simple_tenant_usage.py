"""`os-simple-tenant-usage`: what every project (admin) or one project used over a period,
`start` to `end` (both default to now), summed or (`detailed`) server by server; paged over
servers with limit and marker from 2.40."""

from __future__ import annotations

from datetime import datetime, timezone

from aiohttp import web

from nova_async.api import microversion, usage
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

_MAX_LIMIT = 1000


def _period(request: web.Request) -> tuple[datetime, datetime, datetime]:
    now = datetime.now(timezone.utc)
    start = usage.parse_time(request.query.get("start"), now)
    stop = usage.parse_time(request.query.get("end"), now)
    if start is None or stop is None:
        raise errors.InvalidInput("Invalid start time or end time: Datetime is in invalid format")
    if start > stop:
        raise errors.InvalidInput("Invalid start time. The start time cannot occur after the end time.")
    return start, stop, now


def _paging(request: web.Request) -> tuple[str | None, int | None]:
    if microversion.of(request) < (2, 40):
        return None, None
    limit = w.query_int(request, "limit", _MAX_LIMIT)
    return request.query.get("marker"), None if limit is None else min(limit, _MAX_LIMIT)


def _detailed(request: web.Request) -> bool:
    return request.query.get("detailed", "0").strip() not in ("0", "", "false", "False")


async def list_usages(request: web.Request) -> web.Response:
    require_admin(request)
    start, stop, now = _period(request)
    marker, limit = _paging(request)
    found = await usage.tenant_usages(request.app[STATE], start, stop, now, marker=marker, limit=limit)
    return w.dump({"tenant_usages": [u.shown(_detailed(request)) for u in found]})


async def show_usage(request: web.Request) -> web.Response:
    ctx = w.context(request)
    tenant_id = request.match_info["tenant_id"]
    if not ctx.can_see(tenant_id):
        raise errors.Forbidden(f"Policy does not allow {request.method} {request.path} to be performed.")
    start, stop, now = _period(request)
    marker, limit = _paging(request)
    found = await usage.tenant_usages(request.app[STATE], start, stop, now, project_id=tenant_id,
                                      marker=marker, limit=limit)
    # A project that used nothing is shown as an empty object, as Nova does.
    return w.dump({"tenant_usage": found[0].shown(detailed=True) if found else {}})
