"""Volume snapshots through the API: a point-in-time copy of a volume, made by the backend
in the background once the `creating` row is committed under the project's quota (a
snapshot counts against snapshots and against gigabytes, as in Cinder)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.db.queries import queries
from nova_async.volume import lifecycle, quotas, volumes
from nova_async.volume.state import VolumeApi

Q = queries("volume")
DELETABLE = ["available", "error", "error_deleting"]


async def get(api: VolumeApi, ctx: RequestContext, snapshot_id: str) -> asyncpg.Record:
    sid = volumes._uuid(snapshot_id)
    row = await api.pool.fetchrow(Q.get_snapshot, sid) if sid else None
    if row is None or not ctx.can_see(row["project_id"]):
        raise errors.NotFound(f"Snapshot {snapshot_id} could not be found.", code="snapshot_not_found")
    return row


async def find(api: VolumeApi, ctx: RequestContext, *, all_projects: bool, name: str | None, status: str | None,
               volume_id: str | None, metadata: dict[str, str] | None) -> list[asyncpg.Record]:
    project = None if all_projects and ctx.is_admin else ctx.project_id
    if volume_id is not None and volumes._uuid(volume_id) is None:
        return []
    return list(await api.pool.fetch(Q.find_snapshots, project, name, status,
                                     volumes._uuid(volume_id) if volume_id else None, metadata))


async def create(api: VolumeApi, ctx: RequestContext, req: dict[str, Any]) -> asyncpg.Record:
    volume = await volumes.get(api, ctx, req["volume_id"])
    snapshot_id = str(uuid.uuid4())
    async with api.pool.acquire() as conn, conn.transaction():
        await quotas.check(conn, api.settings.volume, volume["project_id"], snapshots=1,
                           gigabytes=volume["size"])
        # Locked, as a delete locks it: a snapshot is never made of a volume whose delete
        # has just checked that it has none.
        locked = await conn.fetchrow(Q.lock_volume, volume["id"])
        if locked is None:   # deleted meanwhile
            raise volumes.not_found(req["volume_id"])
        volume = locked
        _check_snapshottable(volume, req.get("force", False))
        row = await conn.fetchrow(Q.insert_snapshot, snapshot_id, volume["id"], volume["project_id"], ctx.user_id,
                                  req.get("name"), req.get("description"), volume["size"],
                                  req.get("metadata") or {}, volume["backend"], api.worker)
    api.work.spawn(f"snapshot-create:{snapshot_id}", lifecycle.build_snapshot(api, row))
    return row


def _check_snapshottable(volume: asyncpg.Record, force: bool) -> None:
    if volume["status"] != "available" and not (force and volume["status"] == "in-use"):
        raise errors.InvalidInput(f"Invalid volume: Volume {volume['id']} status must be available"
                                  f"{' or in-use' if force else ''}, but current status is: {volume['status']}.",
                                  code="invalid_volume")


async def update(api: VolumeApi, ctx: RequestContext, snapshot_id: str, changes: dict[str, Any]) -> asyncpg.Record:
    row = await get(api, ctx, snapshot_id)
    return await api.pool.fetchrow(Q.update_snapshot, row["id"], changes.get("name", row["name"]),
                                   changes.get("description", row["description"]),
                                   changes.get("metadata", row["metadata"]))


async def delete(api: VolumeApi, ctx: RequestContext, snapshot_id: str) -> None:
    row = await get(api, ctx, snapshot_id)
    done = await api.pool.fetchrow(Q.begin_snapshot_work, row["id"], DELETABLE, "deleting", api.worker)
    if done is None:
        raise errors.InvalidInput(f"Invalid snapshot: Snapshot status must be available or error and must not "
                                  f"be part of a group (it is {row['status']}).", code="invalid_snapshot")
    api.work.spawn(f"snapshot-delete:{row['id']}", lifecycle.quietly(lifecycle.remove_snapshot(api, done)))
