"""`os-instance_usage_audit_log`: how far Nova's periodic instance-usage audit got over a
period, per compute host. This service runs no such audit (its usage is counted from the
instances when asked: os-simple-tenant-usage), so every compute host is listed as not run
for the period, which is what Nova answers when its audit is turned off."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from aiohttp import web

from nova_async.api import service_store
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S")


def _period(before: datetime) -> tuple[datetime, datetime]:
    """The audit period that ended last before `before`: the month before it, as Nova's default."""
    end = before.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    start = (end - timedelta(days=1)).replace(day=1)
    return start, end


def _parsed(raw: str) -> datetime:
    for fmt in _FORMATS:
        try:
            return datetime.strptime(raw, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise errors.InvalidInput("Invalid timestamp for date " + raw)


async def _log(request: web.Request, before: datetime) -> dict:
    require_admin(request)
    state = request.app[STATE]
    hosts = sorted({r["host"] for r in await service_store.services(
        state.pool, state.settings.scheduler.service_down_time, None, "nova-compute")})
    start, end = _period(before)
    return {"hosts_not_run": hosts, "log": {}, "num_hosts": len(hosts), "num_hosts_done": 0,
            "num_hosts_not_run": len(hosts), "num_hosts_running": 0,
            "overall_status": f"0 of {len(hosts)} hosts done. 0 errors.",
            "period_beginning": start.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S"),
            "period_ending": end.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S"),
            "total_errors": 0, "total_instances": 0}


async def list_audit_log(request: web.Request) -> web.Response:
    return w.dump({"instance_usage_audit_logs": await _log(request, datetime.now(timezone.utc))})


async def show_audit_log(request: web.Request) -> web.Response:
    before = _parsed(request.match_info["before_timestamp"])
    return w.dump({"instance_usage_audit_log": await _log(request, before)})
