"""Volumes on a running server: attach, detach and extend, as the compute host does them;
what a terminate does with an instance's volumes; and what a restart finds half done.

The API has already reserved the volume's attachment and recorded the block device mapping
with the device name the guest will see (api/volume_attachments.py). An attach here gives
the volume service this host's connector, keeps the connection it answers in the mapping
(so the guest can be defined again with the disk, volume_disks.py), attaches the disk to the
guest — live and persistent — and completes the attachment: the volume is `in-use`. When any
of that fails, the attachment and the mapping are deleted (the volume is `available` again),
the instance action's event says why, and the server stays as it was, as in Nova.

A detach takes the disk out of the persistent definition first, then out of the running
guest, and waits until the guest has let go of it (Hypervisor.detach_disk); only then is the
attachment deleted (the volume is `available`) and the mapping with it. A guest that keeps
the disk gives the volume back to `in-use`.

Each step is ordered so that a crash leaves something start-up recovery (`recover`) can
finish or undo from what the volume service and the domain say: no volume is left
`reserved`/`attaching`/`detaching`, and no mapping outlives its attachment.
"""

from __future__ import annotations

from collections import defaultdict

import asyncpg
import structlog

from nova_async.compute.domain_xml import disk_xml, domain_name
from nova_async.compute.host import Host, describe
from nova_async.compute.hypervisor import GuestGone
from nova_async.compute.messages import AttachVolume, DetachVolume, ExtendVolume
from nova_async.compute.volume_disks import connector, disk_of, target_of
from nova_async.db import instances
from nova_async.db.instances import Q as IQ
from nova_async.db.queries import queries
from nova_async.volume.messages import AttachmentRecord

log = structlog.get_logger("compute.volumes")
BQ = queries("block_devices")
GIB = 1024 ** 3


async def attach(host: Host, msg: AttachVolume, request_id: str) -> None:
    instance_uuid = msg.instance_uuid
    bdm = await host.pool.fetchrow(BQ.get, msg.bdm_id)
    row = await host.pool.fetchrow(IQ.get, instance_uuid)
    if bdm is None or row is None or row["host"] != host.name:
        # Gone meanwhile: a delete (which releases its volumes) or recovery took it.
        log.info("volume attach skipped: the instance or its mapping is gone", volume_id=msg.volume_id)
        await instances.finish_action(host.pool, instance_uuid, request_id)
        return
    await host.notify("instance.volume_attach.start", instance_uuid, volume_id=msg.volume_id)
    try:
        async with instances.event(host.pool, instance_uuid, request_id, "compute_attach_volume", host.name):
            await _attach(host, msg, bdm)
    except Exception as exc:
        reason = describe(exc)
        log.error("volume attach failed", volume_id=msg.volume_id, reason=reason)
        await _forget(host, msg.attachment_id, msg.bdm_id)
        await instances.finish_action(host.pool, instance_uuid, request_id, "Error")
        await host.notify("instance.volume_attach.error", instance_uuid, volume_id=msg.volume_id, reason=reason)
        return
    log.info("volume attached", volume_id=msg.volume_id, device=bdm["device_name"])
    await instances.finish_action(host.pool, instance_uuid, request_id)
    await host.notify("instance.volume_attach.end", instance_uuid, volume_id=msg.volume_id)


async def _attach(host: Host, msg: AttachVolume, bdm: asyncpg.Record) -> None:
    name = domain_name(msg.instance_uuid)
    connection = await host.volumes.connect(msg.attachment_id, connector(host.name), bdm["device_name"] or "")
    info = connection.as_cinder()
    # Kept before the guest has it: recovery then knows how to take it out again.
    await host.pool.execute(BQ.set_connection, msg.bdm_id, info)
    disk = disk_of(info, bdm["device_name"])
    await host.hypervisor.attach_device(name, disk_xml(disk))
    try:
        await host.volumes.complete(msg.attachment_id)
    except Exception:
        # The attachment cannot be completed: the guest must not keep a disk whose volume
        # is about to be available to others.
        await host.hypervisor.detach_disk(name, disk_xml(disk), disk.target)
        raise


async def _forget(host: Host, attachment_id: str, bdm_id: str) -> None:
    """Undo a failed attach: the attachment first (the volume is available again), then the
    mapping. If the volume service cannot be told, the mapping stays, so that start-up
    recovery (or a detach) finishes the job rather than leave the volume reserved."""
    try:
        await host.volumes.delete_attachment(attachment_id)
    except Exception as exc:
        log.error("could not delete the attachment of a failed attach; left to recovery",
                  attachment_id=attachment_id, error=describe(exc))
        return
    await host.pool.execute(BQ.delete, bdm_id)


async def detach(host: Host, msg: DetachVolume, request_id: str) -> None:
    instance_uuid = msg.instance_uuid
    bdm = await host.pool.fetchrow(BQ.get_by_volume, instance_uuid, msg.volume_id)
    if bdm is None:
        log.info("volume detach skipped: it is not attached any more", volume_id=msg.volume_id)
        await instances.finish_action(host.pool, instance_uuid, request_id)
        return
    await host.notify("instance.volume_detach.start", instance_uuid, volume_id=msg.volume_id)
    released = False
    try:
        async with instances.event(host.pool, instance_uuid, request_id, "compute_detach_volume", host.name):
            await _take_out(host, instance_uuid, bdm)
            released = True
            await host.volumes.delete_attachment(msg.attachment_id)
            await host.pool.execute(BQ.delete, bdm["id"])
    except Exception as exc:
        reason = describe(exc)
        log.error("volume detach failed", volume_id=msg.volume_id, reason=reason, guest_released=released)
        if not released:
            # The guest still has the disk: the volume is in use, as before.
            try:
                await host.volumes.roll_detaching_back(msg.attachment_id)
            except Exception as roll_exc:
                log.error("could not give the volume back to in-use; left to recovery", error=describe(roll_exc))
        await instances.finish_action(host.pool, instance_uuid, request_id, "Error")
        await host.notify("instance.volume_detach.error", instance_uuid, volume_id=msg.volume_id, reason=reason)
        return
    log.info("volume detached", volume_id=msg.volume_id)
    await instances.finish_action(host.pool, instance_uuid, request_id)
    await host.notify("instance.volume_detach.end", instance_uuid, volume_id=msg.volume_id)


async def _take_out(host: Host, instance_uuid: str, bdm: asyncpg.Record) -> None:
    """The volume's disk out of the guest, live and persistent; nothing to do when it was
    never connected or the domain is gone."""
    if not bdm["connection_info"]:
        return
    disk = disk_of(bdm["connection_info"], bdm["device_name"])
    try:
        await host.hypervisor.detach_disk(domain_name(instance_uuid), disk_xml(disk), disk.target)
    except GuestGone:
        pass


async def extend(host: Host, msg: ExtendVolume, _request_id: str) -> None:
    """The volume grew: the running guest is told its disk's new size."""
    bdm = await host.pool.fetchrow(BQ.get_by_volume, msg.instance_uuid, msg.volume_id)
    if bdm is None or not bdm["connection_info"]:
        log.info("volume extend skipped: not attached here", volume_id=msg.volume_id)
        return
    try:
        await host.hypervisor.block_resize(domain_name(msg.instance_uuid), target_of(bdm["device_name"]),
                                           msg.size_gb * GIB)
    except GuestGone:
        return
    except Exception as exc:
        log.error("telling the guest its volume grew failed", volume_id=msg.volume_id, error=describe(exc))
        return
    log.info("volume extended in the guest", volume_id=msg.volume_id, size_gb=msg.size_gb)
    await host.notify("instance.volume_extend.end", msg.instance_uuid, volume_id=msg.volume_id,
                      size_gb=msg.size_gb)


async def release(host: Host, instance_uuid: str) -> None:
    """A terminated instance's volumes, once its guest is gone: each attachment deleted (the
    volume is available), the volumes it was to take along (delete_on_termination) deleted,
    and each mapping last. Every step tolerates "already done", so a repeated terminate
    finishes what an earlier one began."""
    for bdm in await host.pool.fetch(BQ.of_instance, instance_uuid):
        if bdm["destination_type"] != "volume" or bdm["volume_id"] is None:
            continue
        if bdm["attachment_id"] is not None:
            await host.volumes.delete_attachment(str(bdm["attachment_id"]))
        if bdm["delete_on_termination"]:
            await host.volumes.delete(str(bdm["volume_id"]))
        await host.pool.execute(BQ.delete, bdm["id"])


def _attaching(record: AttachmentRecord) -> bool:
    return record.status in ("reserved", "attaching") and record.volume_status != "detaching"


def _detaching(record: AttachmentRecord) -> bool:
    return record.status == "detaching" or record.volume_status == "detaching"


async def recover(host: Host) -> None:
    """At start, before work is taken: every attach or detach a crash cut off is finished or
    undone, from what the volume service says of the attachment and what the domain has.
    An attach whose disk the guest has is completed, one it has not is undone; a detach
    whose disk is gone is finished, one whose disk is still there is rolled back (in-use);
    a mapping whose attachment is gone goes too (its disk taken out first)."""
    by_instance: dict[str, list[asyncpg.Record]] = defaultdict(list)
    for bdm in await host.pool.fetch(BQ.volumes_on_host, host.name):
        by_instance[str(bdm["instance_uuid"])].append(bdm)
    for instance_uuid, bdms in by_instance.items():
        try:
            await _recover_instance(host, instance_uuid, bdms)
        except Exception as exc:
            log.error("volume recovery of an instance failed", instance_uuid=instance_uuid, error=describe(exc))


async def _recover_instance(host: Host, instance_uuid: str, bdms: list[asyncpg.Record]) -> None:
    records = {r.attachment_id: r for r in await host.volumes.of_instance(instance_uuid)}
    name = domain_name(instance_uuid)
    try:
        live = set((await host.hypervisor.disk_targets(name, live=True)).values())
        persistent = set((await host.hypervisor.disk_targets(name, live=False)).values())
    except GuestGone:
        live = persistent = set()
    for bdm in bdms:
        volume_id, attachment_id = str(bdm["volume_id"]), str(bdm["attachment_id"])
        record = records.get(attachment_id)
        has_disk = volume_id in live | persistent
        bound = log.bind(instance_uuid=instance_uuid, volume_id=volume_id)
        if record is None:
            bound.info("recovery: the attachment is gone; its mapping goes too", guest_has_disk=has_disk)
            if has_disk:
                await _take_out(host, instance_uuid, bdm)
            await host.pool.execute(BQ.delete, bdm["id"])
        elif _detaching(record):
            if has_disk:
                bound.info("recovery: detach cut off with the disk still in the guest; volume back in use")
                if volume_id not in persistent and bdm["connection_info"]:
                    # Cut off between the persistent and the live half: the guest still has
                    # it, so its definition must too.
                    disk = disk_of(bdm["connection_info"], bdm["device_name"])
                    await host.hypervisor.attach_device(name, disk_xml(disk), persistent_only=True)
                await host.volumes.roll_detaching_back(attachment_id)
            else:
                bound.info("recovery: detach cut off after the guest let go; finishing it")
                await host.volumes.delete_attachment(attachment_id)
                await host.pool.execute(BQ.delete, bdm["id"])
        elif _attaching(record):
            if has_disk:
                bound.info("recovery: attach cut off after the guest got the disk; completing it")
                await host.volumes.complete(attachment_id)
            else:
                bound.info("recovery: attach cut off before the guest got the disk; undoing it")
                await _forget(host, attachment_id, str(bdm["id"]))
