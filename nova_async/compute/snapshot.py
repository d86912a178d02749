"""createImage (and createBackup) on the compute host: the server's root disk written into a
new image; a backup then rotates out the server's older backups of its type.

The API made the image (queued, with the snapshot's properties) and set task_state
image_snapshot. Here: the root disk — its qcow2 overlay and the base image under it — is
converted into one standalone qcow2 (`qemu-img convert`), then handed to the image service,
which stores it (saving → active). task_state goes image_snapshot → image_pending_upload →
image_uploading → none, as in Nova.

Reading a disk a running guest writes to gives a copy that may be torn. A running real
guest is therefore paused for the length of the copy: QEMU's stop drains and flushes every
block request before it returns, so the file is what the guest had written at that instant
(the state a power cut would leave, which is what Nova's snapshots promise too). Pausing
costs no memory dump (Nova's cold snapshot does a managed save) and needs nothing from the
guest. A guest that is off, paused or suspended is not writing and is read as it is.

A snapshot that fails deletes its image (a half-written snapshot is useless) and gives the
server back as it was; so does start-up recovery for one a restart interrupted."""

from __future__ import annotations

import contextlib
import traceback
from pathlib import Path

import structlog

from nova_async.common.states import TaskState
from nova_async.compute import disks
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.host import Host, describe
from nova_async.db import instances
from nova_async.db.queries import queries
from nova_async.image.messages import ListImages

log = structlog.get_logger("compute.snapshot")
MQ = queries("migrations")

_SNAPSHOT_TASKS = [TaskState.IMAGE_SNAPSHOT, TaskState.IMAGE_PENDING_UPLOAD, TaskState.IMAGE_UPLOADING]


def _target(host: Host, instance_uuid: str, image_id: str) -> Path:
    # In the instance's directory: a delete of the instance takes a leftover with it.
    return disks.instance_dir(host.instances_root, instance_uuid) / f"snapshot-{image_id}.qcow2"


async def snapshot(host: Host, instance_uuid: str, image_id: str, request_id: str, *,
                   rotation: int | None = None) -> None:
    row = await host.pool.fetchrow(instances.Q.get, instance_uuid)
    if row is None or row["host"] != host.name or row["task_state"] != TaskState.IMAGE_SNAPSHOT:
        log.info("snapshot skipped", task_state=row["task_state"] if row else None)
        await _abandon(host, instance_uuid, image_id, request_id, "the server changed before it could be taken")
        return
    await host.notify("instance.snapshot.start", instance_uuid, image_id=image_id)
    target = _target(host, instance_uuid, image_id)
    try:
        async with instances.event(host.pool, instance_uuid, request_id, "compute_snapshot_instance", host.name):
            async with _quiesced(host, instance_uuid):
                await disks.snapshot_root(host.instances_root, instance_uuid, target)
            await _task(host, instance_uuid, TaskState.IMAGE_PENDING_UPLOAD, TaskState.IMAGE_SNAPSHOT)
            await _task(host, instance_uuid, TaskState.IMAGE_UPLOADING, TaskState.IMAGE_PENDING_UPLOAD)
            image = await host.image.upload_file(image_id, str(target))
    except Exception as exc:
        log.error("snapshot failed", reason=describe(exc), image_id=image_id)
        await _abandon(host, instance_uuid, image_id, request_id, describe(exc),
                       "".join(traceback.format_exception(exc)))
        return
    finally:
        target.unlink(missing_ok=True)
    await host.pool.execute(MQ.delete_snapshot, image_id)
    await host.pool.execute(MQ.release_resize, instance_uuid, _SNAPSHOT_TASKS)
    log.info("snapshot uploaded", image_id=image_id, size=image.size)
    if rotation is not None:
        await _rotate(host, instance_uuid, image.properties.get("backup_type", ""), rotation)
    await instances.finish_action(host.pool, instance_uuid, request_id)
    await host.notify("instance.snapshot.end", instance_uuid, image_id=image_id)


async def _rotate(host: Host, instance_uuid: str, backup_type: str, keep: int) -> None:
    """createBackup's rotation: the server's backups of this type beyond the newest `keep`
    are deleted (the one just made is the newest), as Nova's compute does."""
    backups = await host.image.list(ListImages(project_id="", is_admin=True, properties={
        "instance_uuid": instance_uuid, "image_type": "backup", "backup_type": backup_type}))
    for old in backups[keep:]:
        try:
            await host.image.delete(old.id)
            log.info("backup rotated out", image_id=old.id, backup_type=backup_type, kept=keep)
        except Exception as exc:
            log.warning("could not delete a rotated backup", image_id=old.id, error=describe(exc))


async def _task(host: Host, instance_uuid: str, new: TaskState, old: TaskState) -> None:
    if await host.pool.fetchrow(MQ.resize_task, instance_uuid, new, [old]) is None:
        raise SnapshotAbandoned("the server was deleted during the snapshot")


class SnapshotAbandoned(Exception):
    pass


@contextlib.asynccontextmanager
async def _quiesced(host: Host, instance_uuid: str):
    """Pause a running real guest for as long as the block runs (see the module docstring)."""
    name = domain_name(instance_uuid)
    state = await host.hypervisor.guest_state(name) if host.real_guests else None
    if state is None or not state.running:
        yield
        return
    await host.hypervisor.pause(name)
    try:
        yield
    finally:
        await host.hypervisor.unpause(name)


async def _abandon(host: Host, instance_uuid: str, image_id: str, request_id: str, reason: str,
                   details: str = "") -> None:
    """No snapshot after all: its image deleted, the server given back, the action failed."""
    try:
        await host.image.delete(image_id)
    except Exception as exc:
        log.warning("could not delete the image of a failed snapshot", image_id=image_id, error=describe(exc))
    _target(host, instance_uuid, image_id).unlink(missing_ok=True)
    await host.pool.execute(MQ.delete_snapshot, image_id)
    if await host.pool.fetchval(MQ.release_resize, instance_uuid, _SNAPSHOT_TASKS) is not None:
        await host.pool.execute(instances.Q.add_fault, instance_uuid, 500,
                                f"Snapshot failed: {reason}"[:1000], details[:10000], host.name)
    await instances.finish_action(host.pool, instance_uuid, request_id, "Error")
    await host.notify("instance.snapshot.error", instance_uuid, image_id=image_id, reason=reason)


async def abandon_interrupted(host: Host) -> int:
    """At start-up, before the host takes work: snapshots a restart cut short are abandoned."""
    rows = await host.pool.fetch(MQ.interrupted_snapshots, host.name)
    for r in rows:
        log.info("abandoning a snapshot a restart interrupted", instance_uuid=str(r["instance_uuid"]),
                 image_id=str(r["image_id"]))
        await _abandon(host, str(r["instance_uuid"]), str(r["image_id"]), r["request_id"],
                       "interrupted by a restart of the compute service")
    return len(rows)
