"""Volumes through the API: create (blank, from a snapshot, a volume or an image), show,
list, update, delete, and the actions (extend, bootable, reset-status). Each change commits
the volume's new state with a conditional UPDATE, then hands the backend's part to the
role's background work (lifecycle.py)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.db.queries import queries
from nova_async.image.client import ImageClient
from nova_async.volume import lifecycle, quotas
from nova_async.volume.state import VolumeApi

Q = queries("volume")

DEFAULT_TYPE = "__DEFAULT__"
DEFAULT_TYPE_ID = "5f1f8bd2-6a6e-4f34-9a3b-2c2f0b8e2d10"   # stable: clients may keep it
DELETABLE = ["available", "error", "error_deleting", "error_extending"]
EXTENDABLE = ["available", "in-use"]


def not_found(volume_id: str) -> errors.NotFound:
    return errors.NotFound(f"Volume {volume_id} could not be found.", code="volume_not_found")


async def get(api: VolumeApi, ctx: RequestContext, volume_id: str) -> asyncpg.Record:
    """The volume, if the caller may see it (404 as Cinder, for another project's too)."""
    vid = _uuid(volume_id)
    row = await api.pool.fetchrow(Q.get_volume, vid) if vid else None
    if row is None or not ctx.can_see(row["project_id"]):
        raise not_found(volume_id)
    return row


def _uuid(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except (ValueError, TypeError, AttributeError):
        return None


async def attachments(api: VolumeApi, rows: list[asyncpg.Record]) -> dict[str, list[asyncpg.Record]]:
    found: dict[str, list[asyncpg.Record]] = {}
    if rows:
        for a in await api.pool.fetch(Q.attachments_of_volumes, [r["id"] for r in rows]):
            found.setdefault(str(a["volume_id"]), []).append(a)
    return found


async def find(api: VolumeApi, ctx: RequestContext, *, all_projects: bool, name: str | None,
               status: str | None, metadata: dict[str, str] | None,
               bootable: bool | None) -> list[asyncpg.Record]:
    project = None if all_projects and ctx.is_admin else ctx.project_id
    return list(await api.pool.fetch(Q.find_volumes, project, name, status, metadata, bootable))


async def create(api: VolumeApi, ctx: RequestContext, req: dict[str, Any], *,
                 background: bool = True) -> asyncpg.Record:
    """A `creating` volume, committed under the project's quota; its bits are made in the
    background (the answer is 202 with status creating, as Cinder's). Not `background` (a
    volume for a server being built): made now and returned available; one that failed is
    deleted again and its error raised."""
    size = req.get("size")
    snapshot = source = image = None
    if req.get("snapshot_id"):
        snapshot = await _snapshot(api, ctx, req["snapshot_id"])
        size = size or snapshot["size"]
        if size < snapshot["size"]:
            raise errors.InvalidInput(f"Invalid input received: Volume size '{size}'GB cannot be smaller than "
                                      f"the snapshot size {snapshot['size']}GB. They must be >= original "
                                      "snapshot size.")
    if req.get("source_volid"):
        source = await get(api, ctx, req["source_volid"])
        if source["status"] not in ("available", "in-use"):
            raise errors.InvalidInput(f"Invalid volume: Source volume {source['id']} status must be available "
                                      f"or in-use, but is {source['status']}.", code="invalid_volume")
        size = size or source["size"]
        if size < source["size"]:
            raise errors.InvalidInput(f"Invalid input received: Clones currently must be >= original volume "
                                      f"size ({source['size']}GB).")
    if req.get("imageRef"):
        image = await _image(api, ctx, req["imageRef"], size)
        size = size or image[1]
    if not size:
        raise errors.InvalidInput("Invalid input received: size is required unless a snapshot or a source "
                                  "volume is given.")
    vtype = req.get("volume_type") or DEFAULT_TYPE
    if vtype not in (DEFAULT_TYPE, DEFAULT_TYPE_ID):
        raise errors.NotFound(f"Volume type with name {vtype} could not be found.", code="volume_type_not_found")
    if req.get("availability_zone") not in (None, "", "nova"):
        raise errors.InvalidInput(f"Invalid input received: Availability zone '{req['availability_zone']}' is "
                                  "invalid.")
    if req.get("multiattach"):
        raise errors.InvalidInput("Invalid input received: multiattach volumes are not supported here.")
    volume_id = str(uuid.uuid4())
    async with api.pool.acquire() as conn, conn.transaction():
        await quotas.check(conn, api.settings.volume, ctx.project_id, volumes=1, gigabytes=size, size=size)
        row = await conn.fetchrow(
            Q.insert_volume, volume_id, ctx.project_id, ctx.user_id, req.get("name"), req.get("description"),
            size, DEFAULT_TYPE, req.get("availability_zone") or "nova", False,
            snapshot["id"] if snapshot else None, source["id"] if source else None,
            image[0].metadata["image_id"] if image else None, req.get("metadata") or {},
            api.settings.volume.backend, api.host, api.worker)
    building = lifecycle.build_volume(api, row, image[0] if image else None)
    if background:
        api.work.spawn(f"volume-create:{volume_id}", lifecycle.quietly(building))
        return row
    try:
        return await building
    except Exception:
        if await api.pool.fetchrow(Q.begin_volume_work, row["id"], ["error"], "deleting", api.worker):
            await lifecycle.quietly(lifecycle.remove_volume(api, volume_id))
        raise


async def _snapshot(api: VolumeApi, ctx: RequestContext, snapshot_id: str) -> asyncpg.Record:
    sid = _uuid(snapshot_id)
    row = await api.pool.fetchrow(Q.get_snapshot, sid) if sid else None
    if row is None or not ctx.can_see(row["project_id"]):
        raise errors.NotFound(f"Snapshot {snapshot_id} could not be found.", code="snapshot_not_found")
    if row["status"] != "available":
        raise errors.InvalidInput(f"Invalid snapshot: Originating snapshot status must be one of 'available' "
                                  f"values, but is {row['status']}.", code="invalid_snapshot")
    return row


async def _image(api: VolumeApi, ctx: RequestContext, image_ref: str,
                 size: int | None) -> tuple[lifecycle.ImageSource, int]:
    """The image to copy (it must be active and readable by the caller) and the smallest
    size in GiB that holds it."""
    if _uuid(image_ref) is None:
        raise errors.InvalidInput(f"Invalid image identifier or unable to access requested image: {image_ref}.")
    info = await ImageClient(api.bus).get(image_ref, ctx.project_id, ctx.is_admin)
    if info.status != "active" or not info.path:
        raise errors.InvalidInput(f"Image {info.id} is not active.", code="invalid_image")
    fmt = info.disk_format or "raw"
    needed = max(lifecycle.gib(await api.store.image_virtual_size(info.path, fmt)), info.min_disk or 0)
    if size is not None and size < needed:
        raise errors.InvalidInput(f"Invalid input received: Size of specified image {needed}GB is larger than "
                                  f"volume size {size}GB.")
    return lifecycle.ImageSource(path=info.path, disk_format=fmt,
                                 metadata=lifecycle.image_metadata(info)), needed


async def update(api: VolumeApi, ctx: RequestContext, volume_id: str, changes: dict[str, Any]) -> asyncpg.Record:
    row = await get(api, ctx, volume_id)
    return await api.pool.fetchrow(
        Q.update_volume, row["id"], changes.get("name", row["name"]),
        changes.get("description", row["description"]), changes.get("metadata", row["metadata"]))


async def set_metadata(api: VolumeApi, ctx: RequestContext, volume_id: str, metadata: dict[str, str],
                       *, replace: bool) -> dict[str, str]:
    row = await get(api, ctx, volume_id)
    merged = dict(metadata) if replace else {**row["metadata"], **metadata}
    done = await api.pool.fetchrow(Q.update_volume, row["id"], row["name"], row["description"], merged)
    return dict(done["metadata"])


async def delete_metadata_key(api: VolumeApi, ctx: RequestContext, volume_id: str, key: str) -> None:
    row = await get(api, ctx, volume_id)
    if key not in row["metadata"]:
        raise errors.NotFound(f"Volume {volume_id} has no metadata with key {key}.")
    left = {k: v for k, v in row["metadata"].items() if k != key}
    await api.pool.execute(Q.update_volume, row["id"], row["name"], row["description"], left)


async def delete(api: VolumeApi, ctx: RequestContext, volume_id: str, *, cascade: bool,
                 background: bool = True) -> None:
    """available|error|error_deleting|error_extending → deleting, committed; then the bits and
    the row go in the background. Refused (400, Cinder's InvalidVolume) while attached or
    with snapshots, unless `cascade` takes the snapshots too."""
    row = await get(api, ctx, volume_id)
    async with api.pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(Q.lock_volume, row["id"])
        if row is None:   # deleted meanwhile (another delete's background work finished)
            raise not_found(volume_id)
        if await conn.fetchval(Q.volume_attachment_count, row["id"]) or row["status"] not in DELETABLE:
            raise errors.InvalidInput(
                f"Invalid volume: Volume status must be available or error or error_restoring or error_extending "
                f"or error_managing and must not be migrating, attached, belong to a group, have snapshots or be "
                f"disassociated from snapshots after volume transfer (volume {volume_id} is {row['status']}).",
                code="invalid_volume")
        snaps = await conn.fetch(Q.snapshots_of_volume, row["id"])
        if snaps and not cascade:
            raise errors.InvalidInput(f"Invalid volume: Volume {volume_id} still has {len(snaps)} dependent "
                                      "snapshots.", code="invalid_volume")
        if snaps:
            if any(s["status"] not in ("available", "error", "error_deleting") for s in snaps):
                raise errors.InvalidInput(f"Invalid volume: Volume {volume_id} has a snapshot that is busy.",
                                          code="invalid_volume")
            await conn.execute(Q.set_volume_snapshots_status, row["id"],
                               ["available", "error", "error_deleting"], "deleting", api.worker)
        await conn.execute(Q.begin_volume_work, row["id"], DELETABLE, "deleting", api.worker)
    if background:
        api.work.spawn(f"volume-delete:{row['id']}", lifecycle.quietly(lifecycle.remove_volume(api, str(row["id"]))))
    else:
        await lifecycle.remove_volume(api, str(row["id"]))


async def extend(api: VolumeApi, ctx: RequestContext, volume_id: str, new_size: int) -> None:
    """available|in-use → extending (with the new size counted against the quota at once),
    then the backend grows it and compute tells a guest that has it."""
    row = await get(api, ctx, volume_id)
    if row["status"] not in EXTENDABLE:
        raise errors.InvalidInput(f"Invalid volume: Volume status must be 'available' or 'in-use' to extend, "
                                  f"currently {row['status']}.", code="invalid_volume")
    if new_size <= row["size"]:
        raise errors.InvalidInput(f"Invalid input received: New size for extend must be greater than current "
                                  f"size. (current: {row['size']}, extended: {new_size}).")
    async with api.pool.acquire() as conn, conn.transaction():
        await quotas.check(conn, api.settings.volume, row["project_id"], gigabytes=new_size - row["size"],
                           size=new_size)
        row = await conn.fetchrow(Q.begin_extend, row["id"], EXTENDABLE, new_size, api.worker)
        if row is None:
            raise errors.InvalidInput(f"Invalid volume: Volume {volume_id} changed state; try again.",
                                      code="invalid_volume")
    api.work.spawn(f"volume-extend:{row['id']}", lifecycle.grow(api, row))


async def set_bootable(api: VolumeApi, ctx: RequestContext, volume_id: str, bootable: bool) -> None:
    row = await get(api, ctx, volume_id)
    await api.pool.execute(Q.set_bootable, row["id"], bootable)


async def reset_status(api: VolumeApi, ctx: RequestContext, volume_id: str, status: str) -> None:
    if not ctx.is_admin:
        raise errors.Forbidden("Policy doesn't allow volume_extension:volume_admin_actions:reset_status to be "
                               "performed.")
    row = await get(api, ctx, volume_id)
    await api.pool.execute(Q.reset_volume_status, row["id"], status)
