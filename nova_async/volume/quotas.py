"""Volume quotas, as Cinder keeps them: per-project limits (volume_quotas rows, else the
[volume] quota_* defaults) on volumes, snapshots and gigabytes, where gigabytes count
volumes and snapshots together. A create or an extend checks them in its own transaction,
after taking the project's advisory lock, so two racing creates cannot both fit in the
room for one."""

from __future__ import annotations

from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.config import VolumeSettings
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("volume")

# What os-quota-sets shows, in Cinder's order; the ones we never count are shown unlimited
# (backups, groups) or at their defaults.
RESOURCES = ("volumes", "snapshots", "gigabytes", "per_volume_gigabytes", "backups", "backup_gigabytes",
             "groups")
COUNTED = ("volumes", "snapshots", "gigabytes")


def defaults(settings: VolumeSettings) -> dict[str, int]:
    return {"volumes": settings.quota_volumes, "snapshots": settings.quota_snapshots,
            "gigabytes": settings.quota_gigabytes, "per_volume_gigabytes": settings.quota_per_volume_gigabytes,
            "backups": 10, "backup_gigabytes": 1000, "groups": 10}


async def limits(db: Pool | asyncpg.Connection, settings: VolumeSettings, project_id: str) -> dict[str, int]:
    found = defaults(settings)
    found.update({r["resource"]: r["hard_limit"] for r in await db.fetch(Q.quota_limits, project_id)})
    return found


async def usage(db: Pool | asyncpg.Connection, project_id: str) -> dict[str, int]:
    return dict(await db.fetchrow(Q.project_usage, project_id))


def may_see(ctx: RequestContext, project_id: str) -> None:
    if not ctx.can_see(project_id):
        raise errors.Forbidden("Policy doesn't allow volume_extension:quotas:show to be performed.")


async def check(conn: asyncpg.Connection, settings: VolumeSettings, project_id: str, *,
                volumes: int = 0, snapshots: int = 0, gigabytes: int = 0, size: int | None = None) -> None:
    """Refuse a change that takes the project past a limit (413 overLimit, as Cinder's
    VolumeLimitExceeded and VolumeSizeExceedsAvailableQuota). Call inside the transaction
    that makes the change, before it."""
    await conn.execute(Q.lock_project_quota, project_id)
    limit = await limits(conn, settings, project_id)
    per_volume = limit["per_volume_gigabytes"]
    if size is not None and per_volume >= 0 and size > per_volume:
        raise errors.OverQuota(f"Volume size {size}G exceeded the allowed per-volume limit of {per_volume}G.",
                               code="volume_size_exceeds_limit")
    used = await usage(conn, project_id)
    if volumes and 0 <= limit["volumes"] < used["volumes"] + volumes:
        raise errors.OverQuota(f"Maximum number of volumes allowed ({limit['volumes']}) exceeded for quota "
                               "'volumes'.", code="volume_limit_exceeded")
    if snapshots and 0 <= limit["snapshots"] < used["snapshots"] + snapshots:
        raise errors.OverQuota(f"Maximum number of snapshots allowed ({limit['snapshots']}) exceeded.",
                               code="snapshot_limit_exceeded")
    if gigabytes and 0 <= limit["gigabytes"] < used["gigabytes"] + gigabytes:
        raise errors.OverQuota(f"Requested volume or snapshot exceeds allowed gigabytes quota. Requested "
                               f"{gigabytes}G, quota is {limit['gigabytes']}G and {used['gigabytes']}G has "
                               "been consumed.", code="volume_size_exceeds_quota")


async def quota_set(db: Pool, settings: VolumeSettings, ctx: RequestContext, project_id: str,
                    with_usage: bool) -> dict[str, Any]:
    may_see(ctx, project_id)
    limit = await limits(db, settings, project_id)
    if not with_usage:
        return {"id": project_id, **limit}
    used = await usage(db, project_id)
    return {"id": project_id, **{r: {"limit": limit[r], "in_use": used.get(r, 0), "reserved": 0, "allocated": 0}
                                 for r in RESOURCES}}


async def update(db: Pool, settings: VolumeSettings, ctx: RequestContext, project_id: str,
                 changes: dict[str, int]) -> dict[str, Any]:
    if not ctx.is_admin:
        raise errors.Forbidden("Policy doesn't allow volume_extension:quotas:update to be performed.")
    async with db.acquire() as conn, conn.transaction():
        for resource, value in changes.items():
            await conn.execute(Q.set_quota_limit, project_id, resource, value)
    return {k: v for k, v in (await limits(db, settings, project_id)).items()}


async def delete(db: Pool, ctx: RequestContext, project_id: str) -> None:
    if not ctx.is_admin:
        raise errors.Forbidden("Policy doesn't allow volume_extension:quotas:delete to be performed.")
    await db.execute(Q.delete_quota_limits, project_id)
