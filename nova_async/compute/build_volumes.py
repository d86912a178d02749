"""The volumes of an instance being built: made, attached and connected on this host, and
given back when the build fails or moves to another host.

The API wrote the instance's block device mappings and reserved the existing volumes they
name; a mapping from an image, a snapshot or nothing (blank) gets its volume here. Each step
is recorded on the mapping as soon as it is done (the volume's id, then its attachment, then
its connection), so that a build run again (start-up recovery, a reschedule to an alternate)
makes no volume twice and connects what is not connected yet.

A failed build gives up its attachments and deletes the volumes it made that were to go with
the instance (delete_on_termination), as Nova's build clean-up does; a build handed to
another host keeps its volumes and holds them with fresh attachments (the old ones carry this
host's connection), as Nova replaces attachments on a reschedule."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.common.states import VmState
from nova_async.compute.domain_xml import Disk
from nova_async.compute.host import Host
from nova_async.compute.volume_disks import connector, disk_of
from nova_async.db.coalesce import Coalesced
from nova_async.db.queries import queries
from nova_async.volume.messages import CreateVolume, VolumeInfo

log = structlog.get_logger("compute.build_volumes")
BQ = queries("block_devices")
# Every build reads its mappings (most have none): a burst's reads go together.
MAPPINGS = Coalesced(BQ.of_instances, many=True)


@dataclass(frozen=True)
class Connected:
    """An instance's volumes, ready to be the guest's disks."""

    disks: list[Disk]                    # root volume first
    root: VolumeInfo | None              # the volume it boots from (volume-backed), if any
    to_complete: list[str]               # attachments connected now, completed once the guest runs


async def connect(host: Host, row: asyncpg.Record) -> Connected:
    """Every volume mapping of the instance with a volume, an attachment and a connection.
    A rebuild finds them connected and uses them as they are; a build completes each once its
    guest runs (CompleteAttachment is idempotent: a resumed build completes them again)."""
    instance_uuid = str(row["uuid"])
    disks, to_complete, root = [], [], None
    for bdm in await MAPPINGS(host.pool, instance_uuid):
        if bdm["destination_type"] != "volume":
            continue
        bdm = await _with_volume(host, row, bdm)
        if bdm["boot_index"] == 0:
            root = await host.volumes.get(str(bdm["volume_id"]), row["project_id"], is_admin=True)
        if bdm["connection_info"] is None:
            info = await host.volumes.connect(str(bdm["attachment_id"]), connector(host.name),
                                              bdm["device_name"] or "")
            bdm = await host.pool.fetchrow(BQ.set_connection, bdm["id"], info.as_cinder())
            to_complete.append(str(bdm["attachment_id"]))
        elif row["vm_state"] == VmState.BUILDING:
            # a build resumed after a crash: connected then, perhaps not completed
            to_complete.append(str(bdm["attachment_id"]))
        disks.append(disk_of(bdm["connection_info"], bdm["device_name"]))
    return Connected(disks=disks, root=root, to_complete=to_complete)


async def reconnect(host: Host, instance_uuid: str) -> None:
    """The instance's connected volumes connected again, from this host: a guest moving here
    (a resize's finish, or its revert back to the source) tells the volume service which host
    now holds each attachment, and keeps the connection this host gets in each mapping, the
    one its domain is made from. Repeating it changes nothing."""
    for bdm in await host.pool.fetch(BQ.of_instance, instance_uuid):
        if bdm["destination_type"] != "volume" or bdm["attachment_id"] is None or not bdm["connection_info"]:
            continue
        info = await host.volumes.connect(str(bdm["attachment_id"]), connector(host.name), bdm["device_name"] or "")
        await host.pool.execute(BQ.set_connection, bdm["id"], info.as_cinder())


async def _with_volume(host: Host, row: asyncpg.Record, bdm: asyncpg.Record) -> asyncpg.Record:
    """The mapping with its volume and an attachment for the instance: made now when the
    request asked for a new volume, else the API's reservation."""
    instance_uuid = str(row["uuid"])
    if bdm["volume_id"] is None:
        if bdm["source_type"] == "volume":
            raise errors.InvalidInput(f"block device mapping {bdm['id']} names no volume")
        source_id = bdm["image_id"] if bdm["source_type"] == "image" else bdm["snapshot_id"]
        try:
            volume = await host.volumes.create(CreateVolume(
                project_id=row["project_id"], user_id=row["user_id"], size=bdm["volume_size"] or 0,
                name="", source_type=bdm["source_type"], source_id=str(source_id or ""),
                instance_uuid=instance_uuid, availability_zone=row["availability_zone"] or "nova"))
        except errors.NotFound as exc:  # the image or snapshot went away since the API looked
            raise errors.InvalidInput(exc.message) from None
        log.info("volume made for the instance", volume_id=volume.id, source=bdm["source_type"])
        bdm = await host.pool.fetchrow(BQ.set_volume, bdm["id"], volume.id, None)
    if bdm["attachment_id"] is None:
        attachment = await host.volumes.reserve(str(bdm["volume_id"]), instance_uuid, row["project_id"],
                                                is_admin=True)
        bdm = await host.pool.fetchrow(BQ.set_volume, bdm["id"], bdm["volume_id"], attachment.attachment_id)
    return bdm


async def complete(host: Host, attachment_ids: list[str]) -> None:
    """The guest runs with these volumes: each is in-use."""
    for attachment_id in attachment_ids:
        await host.volumes.complete(attachment_id)


async def release_failed(host: Host, instance_uuid: str) -> list[str]:
    """After a failed build (the guest is gone): every attachment deleted, the volumes made
    for the instance that were to go with it deleted; what could not be done, for the fault."""
    problems = []
    for bdm in await host.pool.fetch(BQ.of_instance, instance_uuid):
        if bdm["destination_type"] != "volume" or bdm["volume_id"] is None:
            continue
        try:
            if bdm["attachment_id"] is not None:
                await host.volumes.delete_attachment(str(bdm["attachment_id"]))
            made_here = bdm["source_type"] != "volume"
            if made_here and bdm["delete_on_termination"]:
                await host.volumes.delete(str(bdm["volume_id"]))
                await host.pool.execute(BQ.set_volume, bdm["id"], None, None)
            else:
                await host.pool.execute(BQ.set_volume, bdm["id"], bdm["volume_id"], None)
            await host.pool.execute(BQ.set_connection, bdm["id"], None)
        except Exception as exc:
            problems.append(f"volume {bdm['volume_id']}: {exc}")
    return problems


async def hand_over(host: Host, instance_uuid: str, project_id: str) -> list[str]:
    """Before another host builds the instance: each volume keeps being held for it, by a new
    attachment without this host's connection."""
    problems = []
    for bdm in await host.pool.fetch(BQ.of_instance, instance_uuid):
        if bdm["destination_type"] != "volume" or bdm["attachment_id"] is None:
            continue
        try:
            await host.volumes.delete_attachment(str(bdm["attachment_id"]))
            await host.pool.execute(BQ.set_volume, bdm["id"], bdm["volume_id"], None)
            await host.pool.execute(BQ.set_connection, bdm["id"], None)
            attachment = await host.volumes.reserve(str(bdm["volume_id"]), instance_uuid, project_id,
                                                    is_admin=True)
            await host.pool.execute(BQ.set_volume, bdm["id"], bdm["volume_id"], attachment.attachment_id)
        except Exception as exc:
            problems.append(f"volume {bdm['volume_id']}: {exc}")
    return problems


async def root_properties(host: Host, row: asyncpg.Record) -> dict[str, str]:
    """A volume-backed instance's image properties: those its root volume keeps
    (volume_image_metadata), which name its kernel, ramdisk and command line as an image's do."""
    root = await host.pool.fetchrow(BQ.of_instance, str(row["uuid"]))
    if root is None or root["boot_index"] != 0 or root["volume_id"] is None:
        return {}
    volume = await host.volumes.get(str(root["volume_id"]), row["project_id"], is_admin=True)
    return dict(volume.image_metadata)
