"""The second half of every volume and snapshot change: what happens to the bits once the
new state (creating, deleting, extending) is committed, and how each change ends (a
conditional UPDATE from that state). The API's requests and the bus handlers start these
as the role's background work, and record the process doing it (`worker`); `recover` finishes
what a dead process interrupted, at start before the API serves and periodically in one copy
when several share the database: backends are idempotent, so an interrupted create or
delete is simply done again."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.compute.client import ComputeClient
from nova_async.db.queries import queries
from nova_async.db.session_locks import SessionLocks
from nova_async.volume.notify import notify
from nova_async.volume.state import VolumeApi

Q = queries("volume")
log = structlog.get_logger("volume")
GIB = 1024 ** 3


@dataclass(frozen=True)
class ImageSource:
    """An image to copy into a new volume: its file on this machine, and what the volume
    keeps of it (volume_image_metadata)."""

    path: str
    disk_format: str
    metadata: dict[str, str]


def image_metadata(info: Any) -> dict[str, str]:
    """volume_image_metadata: the image's properties, and the core fields Nova reads when it
    boots from the volume (kernel_id and ramdisk_id come with the properties)."""
    meta = {k: str(v) for k, v in info.properties.items()}
    meta.update({"image_id": info.id, "image_name": info.name or "", "min_ram": str(info.min_ram),
                 "min_disk": str(info.min_disk)})
    for key in ("disk_format", "container_format", "size", "checksum"):
        value = getattr(info, key, None)
        if value is not None:
            meta[key] = str(value)
    return meta


def gib(size_bytes: int) -> int:
    return max(1, math.ceil(size_bytes / GIB))


async def build_volume(api: VolumeApi, row: asyncpg.Record, image: ImageSource | None = None) -> asyncpg.Record:
    """Make a `creating` volume's bits and make it available, or put it in `error` (and raise)."""
    volume_id, size = str(row["id"]), row["size"]
    await notify(api, "volume.create.start", volume_id, size=size, project_id=row["project_id"])
    try:
        if image is not None:
            await api.store.create_from_image(volume_id, size, image.path, image.disk_format)
        elif row["snapshot_id"]:
            await api.store.create_from_snapshot(volume_id, size, str(row["snapshot_id"]))
        elif row["source_volid"]:
            await api.store.clone(volume_id, size, str(row["source_volid"]))
        else:
            await api.store.create(volume_id, size)
    except Exception as exc:
        reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        log.warning("volume create failed", volume_id=volume_id, error=reason)
        await api.pool.execute(Q.set_volume_status, row["id"], ["creating"], "error", reason)
        await notify(api, "volume.create.error", volume_id, error=reason)
        raise
    done = await api.pool.fetchrow(Q.finish_create, row["id"], image is not None,
                                   image.metadata if image else dict(row["image_metadata"]))
    if done is None:  # deleted or reset by an admin meanwhile
        raise errors.Conflict(f"Volume {volume_id} left creating while it was being made.")
    await notify(api, "volume.create.end", volume_id, size=size, status="available")
    return done


async def remove_volume(api: VolumeApi, volume_id: str) -> None:
    """A `deleting` volume (and its `deleting` snapshots, for a cascade): bits, then rows.
    A backend failure leaves it `error_deleting` (a delete may retry) and is raised."""
    await notify(api, "volume.delete.start", volume_id)
    try:
        for snap in await api.pool.fetch(Q.snapshots_of_volume, volume_id):
            if snap["status"] == "deleting":  # a cascade
                await remove_snapshot(api, snap)
        await api.store.delete(volume_id)
    except Exception as exc:
        reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        log.warning("volume delete failed", volume_id=volume_id, error=reason)
        await api.pool.execute(Q.set_volume_status, volume_id, ["deleting"], "error_deleting", reason)
        raise
    await api.pool.execute(Q.delete_volume_row, volume_id)
    await notify(api, "volume.delete.end", volume_id)


async def grow(api: VolumeApi, row: asyncpg.Record) -> None:
    """An `extending` volume to its new_size; then compute is told, for a guest that has it."""
    volume_id, new_size = str(row["id"]), row["new_size"]
    await notify(api, "volume.resize.start", volume_id, size=new_size)
    try:
        await api.store.extend(volume_id, new_size)
    except Exception as exc:
        reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        log.warning("volume extend failed", volume_id=volume_id, error=reason)
        await api.pool.execute(Q.undo_extend, row["id"], reason)
        return
    await api.pool.execute(Q.finish_extend, row["id"])
    compute = ComputeClient(api.bus)
    for attached in await api.pool.fetch(Q.attached_hosts, row["id"]):
        await compute.extend_volume(attached["attached_host"], str(attached["instance_uuid"]), volume_id, new_size)
    await notify(api, "volume.resize.end", volume_id, size=new_size)


async def build_snapshot(api: VolumeApi, row: asyncpg.Record) -> None:
    snapshot_id = str(row["id"])
    await notify(api, "snapshot.create.start", str(row["volume_id"]), snapshot_id=snapshot_id)
    try:
        await api.store.snapshot(snapshot_id, str(row["volume_id"]))
    except Exception as exc:
        reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        await api.pool.execute(Q.set_snapshot_status, row["id"], ["creating"], "error", reason)
        await notify(api, "snapshot.create.error", str(row["volume_id"]), snapshot_id=snapshot_id,
                     error=reason)
        return
    await api.pool.execute(Q.set_snapshot_status, row["id"], ["creating"], "available", None)
    await notify(api, "snapshot.create.end", str(row["volume_id"]), snapshot_id=snapshot_id)


async def remove_snapshot(api: VolumeApi, row: asyncpg.Record) -> None:
    """A `deleting` snapshot: bits, then row; raises when the backend fails (after marking it)."""
    snapshot_id = str(row["id"])
    await notify(api, "snapshot.delete.start", str(row["volume_id"]), snapshot_id=snapshot_id)
    try:
        await api.store.delete_snapshot(snapshot_id)
    except Exception as exc:
        reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        await api.pool.execute(Q.set_snapshot_status, row["id"], ["deleting"], "error_deleting", reason)
        raise
    await api.pool.execute(Q.delete_snapshot_row, row["id"])
    await notify(api, "snapshot.delete.end", str(row["volume_id"]), snapshot_id=snapshot_id)


async def quietly(work: Any) -> None:
    """Run background work whose failure its row already records (error, error_deleting)."""
    try:
        await work
    except Exception:
        pass


async def recover(api: VolumeApi, locks: SessionLocks | None, *, at_start: bool) -> None:
    """Finish or undo what a dead process left in the middle: the changes whose `worker` no
    longer holds its lock (db/session_locks.py), and at start (`at_start`) those no process
    recorded (from before workers were recorded, or a process without locks), as this
    process's previous run may have left them. A live process's changes, this one's or
    another copy's on the same database, are left alone. Each change is taken over first
    (its worker becomes this process), so two copies recovering at once do it once.

    At start this runs before the API serves and before the bus is answered (so it cannot
    ask the image service: a volume being made from an image is set to error; the user
    deletes it and asks again); in a running copy it is the periodic look for another copy
    that died (role.py), which does the same."""
    snaps = await api.pool.fetch(Q.snapshots_in, ["creating", "deleting"])
    rows = await api.pool.fetch(Q.volumes_in, ["creating", "deleting", "extending"])
    workers = {r["worker"] for r in [*snaps, *rows] if r["worker"] is not None}
    dead = await locks.dead(workers) if locks is not None and workers else set()

    def interrupted(row: asyncpg.Record) -> bool:
        return row["worker"] in dead if row["worker"] is not None else at_start

    for snap in snaps:
        if not interrupted(snap):
            continue
        snap = await api.pool.fetchrow(Q.take_over_snapshot, snap["id"], snap["status"], snap["worker"], api.worker)
        if snap is None:   # another copy took it over, or it moved on
            continue
        if snap["status"] == "creating":
            await build_snapshot(api, snap)
        elif snap["status"] == "deleting":
            try:
                await remove_snapshot(api, snap)
            except Exception:
                pass  # error_deleting now, said in the log
    for row in rows:
        if not interrupted(row):
            continue
        row = await api.pool.fetchrow(Q.take_over_volume, row["id"], row["status"], row["worker"], api.worker)
        if row is None:
            continue
        log.info("finishing interrupted volume work", volume_id=str(row["id"]), status=row["status"])
        if row["status"] == "creating":
            if row["image_id"]:
                await api.pool.execute(Q.set_volume_status, row["id"], ["creating"], "error",
                                       "interrupted while the image was being copied")
                continue
            try:
                await build_volume(api, row)
            except Exception:
                pass  # error now, said in the log
        elif row["status"] == "deleting":
            try:
                await remove_volume(api, str(row["id"]))
            except Exception:
                pass  # error_deleting now, said in the log
        else:
            await grow(api, row)
