"""Shelve, shelveOffload and unshelve on the compute host.

    shelve      task shelving: the guest powered off (a paused one at once: it cannot answer
                ACPI), its root disk written into the image the API made (`<name>-shelved`,
                task shelving_image_pending_upload → shelving_image_uploading, as createImage)
                → vm_state shelved; with compute.shelved_offload_time 0 (Nova's default) the
                offload follows at once, in the same action
    offload     task shelving_offloading: the guest and its local disks removed, each volume
                held by a fresh attachment without this host's connection, the placement
                allocation deleted → shelved_offloaded, no host, no node. Ports stay the
                instance's (an unshelve binds them where it lands). A volume-backed server's
                shelve comes here straight: it has no local disk worth an image
    unshelve    task unshelving: a shelved guest still here is started again; an offloaded
                one (the conductor claimed this host for it) is spawned as a build spawns,
                from its shelved image (or its root volume) → active; the shelved image is
                then deleted, as Nova does

A failed shelve deletes its image and gives the server back as it was (its guest running
again if it ran); a failed offload leaves it SHELVED here (offloading again retries); a
failed unshelve leaves it shelved, an offloaded one off this host again with its claim
given back. Each failure is a fault and an action in Error, as Nova records them.

Every step starts from the instance's task_state and the guest as it is, so running one
again after a restart finishes it (recovery.py): an image already uploaded is not written
twice, a removed guest is not missed, a spawn remakes disks and domain.
"""

from __future__ import annotations

import traceback
import uuid as uuidlib
from pathlib import Path
from typing import Any

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.common.states import PowerState, TaskState, VmState
from nova_async.compute import build_volumes, disks
from nova_async.compute.build import spawn
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.host import Host, describe
from nova_async.compute.messages import ShelveInstance, ShelveOffloadInstance, UnshelveInstance
from nova_async.db import instances
from nova_async.db.instances import Q as IQ
from nova_async.db.queries import queries

log = structlog.get_logger("compute.shelve")
SQ = queries("shelve")

SHELVING = [TaskState.SHELVING, TaskState.SHELVING_IMAGE_PENDING_UPLOAD, TaskState.SHELVING_IMAGE_UPLOADING]


class TakenOver(Exception):
    """The instance left the task this step expects (a delete took it over)."""


async def _task(host: Host, instance_uuid: str, new: TaskState, old: list[TaskState]) -> None:
    if await host.pool.fetchrow(SQ.set_task, instance_uuid, new, old) is None:
        raise TakenOver(instance_uuid)


def _ours(host: Host, row: asyncpg.Record | None, task_states: list[TaskState]) -> bool:
    return row is not None and row["host"] == host.name and row["task_state"] in task_states


async def shelve(host: Host, msg: ShelveInstance, request_id: str) -> None:
    uuid = msg.instance_uuid
    row = await host.pool.fetchrow(IQ.get, uuid)
    if not _ours(host, row, SHELVING):
        log.info("shelve skipped", task_state=row and row["task_state"], instance_host=row and row["host"])
        return
    await host.notify("instance.shelve.start", uuid, image_id=msg.image_id)
    name = domain_name(uuid)
    offload = host.shelved_offload_time == 0
    try:
        async with instances.event(host.pool, uuid, request_id, "compute_shelve_instance", host.name):
            if await host.hypervisor.guest_state(name) is not None:
                paused = row["vm_state"] == VmState.PAUSED
                await host.hypervisor.power_off(name, timeout=0 if paused else host.timeouts.shutdown)
            await _write_image(host, row, msg.image_id)
            if await host.hypervisor.guest_state(name) is not None:
                await host.hypervisor.discard_saved(name)   # its disk, not its memory, is what is kept
            shelved = await host.pool.fetchrow(SQ.set_shelved, uuid,
                                               TaskState.SHELVING_OFFLOADING if offload else None,
                                               PowerState.SHUTDOWN, host.name)
            if shelved is None:
                raise TakenOver(uuid)
    except TakenOver:
        log.info("the shelve was taken over (deleted meanwhile)")
        await instances.finish_action(host.pool, uuid, request_id)
        return
    except Exception as exc:
        await _shelve_failed(host, row, msg.image_id, request_id, exc)
        return
    log.info("instance shelved", image_id=msg.image_id, offload=offload)
    await host.notify("instance.shelve.end", uuid, image_id=msg.image_id)
    if offload:
        await _offload(host, shelved, request_id)
    await instances.finish_action(host.pool, uuid, request_id)


def _image_file(host: Host, instance_uuid: str, image_id: str) -> Path:
    # In the instance's directory: a delete of the instance takes a leftover with it.
    return disks.instance_dir(host.instances_root, instance_uuid) / f"shelve-{image_id}.qcow2"


async def _write_image(host: Host, row: asyncpg.Record, image_id: str) -> None:
    """The root disk into image `image_id`, unless an earlier attempt uploaded it already (the
    image service takes data only into a queued image, and puts an upload a restart
    interrupted back to queued)."""
    uuid = str(row["uuid"])
    image = await host.image.get(image_id, row["project_id"], is_admin=True)
    if image.status == "active":
        return
    target = _image_file(host, uuid, image_id)
    try:
        await disks.snapshot_root(host.instances_root, uuid, target)
        await _task(host, uuid, TaskState.SHELVING_IMAGE_PENDING_UPLOAD, SHELVING)
        await _task(host, uuid, TaskState.SHELVING_IMAGE_UPLOADING, [TaskState.SHELVING_IMAGE_PENDING_UPLOAD])
        await host.image.upload_file(image_id, str(target))
    finally:
        target.unlink(missing_ok=True)


async def _shelve_failed(host: Host, row: asyncpg.Record, image_id: str, request_id: str,
                         exc: Exception) -> None:
    """No shelve after all: its image deleted, the server given back as it was."""
    uuid, reason = str(row["uuid"]), describe(exc)
    log.error("shelve failed", reason=reason)
    try:
        await host.image.delete(image_id)
    except Exception as delete_exc:
        log.warning("could not delete the image of a failed shelve", image_id=image_id, error=describe(delete_exc))
    try:  # a guest that ran (or was paused) before the shelve powered it off runs again
        name = domain_name(uuid)
        if row["vm_state"] in (VmState.ACTIVE, VmState.PAUSED) and await host.hypervisor.guest_state(name):
            await host.hypervisor.power_on(name, timeout=host.timeouts.shutdown)
            if row["vm_state"] == VmState.PAUSED:
                await host.hypervisor.pause(name)
    except Exception as power_exc:
        log.warning("could not give the guest back its power state", error=describe(power_exc))
    async with host.pool.acquire() as conn, conn.transaction():
        if await conn.fetchrow(SQ.release, uuid, SHELVING) is not None:
            await conn.execute(SQ.forget_shelved_image, uuid, image_id)
            await conn.execute(IQ.add_fault, uuid, _code(exc), f"Shelve failed: {reason}"[:1000],
                               "".join(traceback.format_exception(exc))[:10000], host.name)
    await instances.finish_action(host.pool, uuid, request_id, "Error")
    await host.notify("instance.shelve.error", uuid, reason=reason)


def _code(exc: Exception) -> int:
    return exc.status if isinstance(exc, errors.NovaAsyncError) else 500


async def offload(host: Host, msg: ShelveOffloadInstance, request_id: str) -> None:
    row = await host.pool.fetchrow(IQ.get, msg.instance_uuid)
    if not _ours(host, row, [TaskState.SHELVING_OFFLOADING]):
        log.info("offload skipped", task_state=row and row["task_state"], instance_host=row and row["host"])
        return
    await _offload(host, row, request_id)
    await instances.finish_action(host.pool, msg.instance_uuid, request_id)


async def _offload(host: Host, row: asyncpg.Record, request_id: str) -> None:
    uuid = str(row["uuid"])
    await host.notify("instance.shelve_offload.start", uuid)
    name = domain_name(uuid)
    try:
        async with instances.event(host.pool, uuid, request_id, "compute_shelve_offload_instance", host.name):
            if await host.hypervisor.is_running(name):   # a volume-backed server's shelve: not off yet
                await host.hypervisor.power_off(name, timeout=host.timeouts.shutdown)
            await host.hypervisor.remove(name)
            await disks.remove_instance_dir(host.instances_root, uuid)
            problems = await build_volumes.hand_over(host, uuid, row["project_id"])
            if problems:
                raise errors.NovaAsyncError("could not let go of " + "; ".join(problems))
            # Before the state changes, as Nova: whoever sees SHELVED_OFFLOADED sees the room.
            await host.placement.delete_allocations(uuid)
            if await host.pool.fetchrow(SQ.set_offloaded, uuid, PowerState.SHUTDOWN, host.name) is None:
                raise TakenOver(uuid)
    except TakenOver:
        log.info("the offload was taken over (deleted meanwhile)")
        return
    except Exception as exc:
        reason = describe(exc)
        log.error("offload failed", reason=reason)
        async with host.pool.acquire() as conn, conn.transaction():
            if await conn.fetchrow(SQ.release, uuid, [TaskState.SHELVING_OFFLOADING]) is not None:
                await conn.execute(IQ.add_fault, uuid, _code(exc), f"Shelve offload failed: {reason}"[:1000],
                                   "".join(traceback.format_exception(exc))[:10000], host.name)
        await instances.finish_action(host.pool, uuid, request_id, "Error")
        await host.notify("instance.shelve_offload.error", uuid, reason=reason)
        return
    log.info("instance offloaded")
    await host.notify("instance.shelve_offload.end", uuid)


async def due_for_offload(host: Host, window: float) -> list[tuple[ShelveOffloadInstance, str]]:
    """Servers shelved here longer than `window` seconds: each now 'shelving_offloading'
    under a shelveOffload action of its own (Nova's _poll_shelved_instances)."""
    due = []
    for r in await host.pool.fetch(SQ.due_for_offload, host.name, window):
        uuid, request_id = str(r["uuid"]), f"req-{uuidlib.uuid4()}"
        async with host.pool.acquire() as conn, conn.transaction():
            if await conn.fetchrow(SQ.begin_offload, uuid) is None:
                continue  # unshelved or deleted meanwhile
            await instances.start_action(conn, uuid, request_id, "shelveOffload", r["project_id"], r["user_id"])
        due.append((ShelveOffloadInstance(instance_uuid=uuid), request_id))
    return due


def _as_spawned(row: asyncpg.Record) -> dict[str, Any]:
    """The row a spawn reads: an image-backed server boots from its shelved image; and as a
    build's (vm_state building), so that volume attachments an interrupted attempt connected
    are completed again (build_volumes.connect)."""
    spawned = dict(row)
    if row["image_ref"]:
        spawned["image_ref"] = row["shelved_image_id"]
    spawned["vm_state"] = VmState.BUILDING
    return spawned


async def unshelve(host: Host, msg: UnshelveInstance, request_id: str) -> None:
    uuid = msg.instance_uuid
    row = await host.pool.fetchrow(IQ.get, uuid)
    if not _ours(host, row, [TaskState.UNSHELVING]):
        log.info("unshelve skipped", task_state=row and row["task_state"], instance_host=row and row["host"])
        return
    await host.notify("instance.unshelve.start", uuid)
    name = domain_name(uuid)
    try:
        async with instances.event(host.pool, uuid, request_id, "compute_unshelve_instance", host.name):
            if row["vm_state"] == VmState.SHELVED and await host.hypervisor.guest_state(name) is not None:
                await host.hypervisor.power_on(name, timeout=host.timeouts.shutdown)
            else:
                if row["image_ref"] and not row["shelved_image_id"]:
                    raise errors.NovaAsyncError("the server has no shelved image to boot from")
                await spawn(host, _as_spawned(row), request_id)
            if await host.pool.fetchrow(SQ.set_unshelved, uuid) is None:
                raise TakenOver(uuid)
    except TakenOver:
        log.info("the unshelve was taken over (deleted meanwhile)")
        await instances.finish_action(host.pool, uuid, request_id)
        return
    except Exception as exc:
        await _unshelve_failed(host, row, request_id, exc)
        return
    if row["shelved_image_id"]:   # the guest's disk now stands on its own copy (the image cache's)
        await _drop_shelved_image(host, uuid, row["shelved_image_id"])
    log.info("instance unshelved")
    await instances.finish_action(host.pool, uuid, request_id)
    await host.notify("instance.unshelve.end", uuid)


async def _drop_shelved_image(host: Host, instance_uuid: str, image_id: str) -> None:
    """The shelved image deleted, then forgotten: a restart in between finds it still named
    and deletes it then (drop_leftover_images)."""
    try:
        await host.image.delete(image_id)
    except Exception as exc:
        log.warning("could not delete the shelved image; trying again at the next start", image_id=image_id,
                    error=describe(exc))
        return
    await host.pool.execute(SQ.forget_shelved_image, instance_uuid, image_id)


async def drop_leftover_images(host: Host) -> None:
    """At start-up: shelved images of servers unshelved here that a restart kept alive."""
    for r in await host.pool.fetch(SQ.leftover_shelved_images, host.name):
        log.info("deleting the shelved image of an unshelved server", instance_uuid=str(r["uuid"]),
                 image_id=r["shelved_image_id"])
        await _drop_shelved_image(host, str(r["uuid"]), r["shelved_image_id"])


async def _unshelve_failed(host: Host, row: asyncpg.Record, request_id: str, exc: Exception) -> None:
    """Still shelved: an offloaded server off this host again, its claim given back."""
    uuid, reason = str(row["uuid"]), describe(exc)
    log.error("unshelve failed", reason=reason)
    if row["vm_state"] == VmState.SHELVED_OFFLOADED:
        try:
            await host.hypervisor.remove(domain_name(uuid))
            await disks.remove_instance_dir(host.instances_root, uuid)
            await build_volumes.hand_over(host, uuid, row["project_id"])
            await host.placement.delete_allocations(uuid)
        except Exception as clean_exc:
            log.warning("clean-up after a failed unshelve failed", error=describe(clean_exc))
    async with host.pool.acquire() as conn, conn.transaction():
        if await conn.fetchrow(SQ.unshelve_failed, uuid) is not None:
            await conn.execute(IQ.add_fault, uuid, _code(exc), f"Unshelve failed: {reason}"[:1000],
                               "".join(traceback.format_exception(exc))[:10000], host.name)
    await instances.finish_action(host.pool, uuid, request_id, "Error")
    await host.notify("instance.unshelve.error", uuid, reason=reason)
