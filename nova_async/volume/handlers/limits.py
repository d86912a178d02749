"""/limits: the caller's project's volume quotas and what it uses (no rate limits)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump
from nova_async.volume import quotas
from nova_async.volume.handlers.common import api, caller


async def show_limits(request: web.Request) -> web.Response:
    ctx = caller(request)
    project = request.query.get("project_id") if ctx.is_admin and request.query.get("project_id") else ctx.project_id
    a = api(request)
    limit = await quotas.limits(a.pool, a.settings.volume, project)
    used = await quotas.usage(a.pool, project)
    return dump({"limits": {"rate": [], "absolute": {
        "maxTotalVolumes": limit["volumes"], "maxTotalSnapshots": limit["snapshots"],
        "maxTotalVolumeGigabytes": limit["gigabytes"], "maxTotalBackups": limit["backups"],
        "maxTotalBackupGigabytes": limit["backup_gigabytes"],
        "totalVolumesUsed": used["volumes"], "totalSnapshotsUsed": used["snapshots"],
        "totalGigabytesUsed": used["gigabytes"], "totalBackupsUsed": 0, "totalBackupGigabytesUsed": 0}}})
