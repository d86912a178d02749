"""A server's volume attachments (`/servers/{id}/os-volume_attachments`) apart from HTTP
(handlers/volume_attachments.py): list, show, attach and detach, and the volumes every
shown server lists (`os-extended-volumes:volumes_attached`).

An attach, as Nova's: the server must be in a state that takes one and not yet have the
volume; the volume service reserves the volume (an attachment for this server, the volume
`reserved`); the block device mapping is recorded with the device name the guest will see,
chosen holding the instance's row so that two attaches never pick the same one; then the
server's compute host is asked to connect and attach it (compute/volumes.py), and the API
answers at once with the attachment. Whatever fails after the reservation deletes it again:
no volume is left reserved by a request that was refused.

An update (2.85) changes whether the volume goes with the server when it is deleted; a swap
(another volume in the attachment's place) is not done here.

A detach marks the volume `detaching` with the volume service and asks the host to take the
disk out of the guest; the host deletes the attachment and the mapping once the guest has let
go. The root volume of a server booted from a volume is not detached.

A shelved offloaded server has no host: an attach is completed without a connection (the
host that unshelves it connects it), a detach is done here, as Nova does both.
"""

from __future__ import annotations

import string
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.api import lookup
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.states import VmState
from nova_async.common.web import parse_uuid
from nova_async.db import instances
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

BQ = queries("block_devices")
IQ = queries("instances")

# Where an attach or a detach may start from (Nova's check_instance_state for both, less the
# states this service has no way into); task_state must also be unset.
ALLOWED = frozenset({VmState.ACTIVE, VmState.PAUSED, VmState.STOPPED, VmState.SHELVED, VmState.SHELVED_OFFLOADED})
# Device names the guest can be given: vdb … vdz, then vdaa … (libvirt's own order).
_LETTERS = string.ascii_lowercase


@dataclass(frozen=True)
class Attachment:
    """One volume attachment as the API shows it."""

    server_id: str
    volume_id: str
    device: str | None
    tag: str | None
    delete_on_termination: bool
    attachment_id: str | None
    bdm_id: str


def _of(row: asyncpg.Record) -> Attachment:
    return Attachment(server_id=str(row["instance_uuid"]), volume_id=str(row["volume_id"]),
                      device=row["device_name"], tag=row["tag"],
                      delete_on_termination=row["delete_on_termination"],
                      attachment_id=str(row["attachment_id"]) if row["attachment_id"] else None,
                      bdm_id=str(row["id"]))


async def listing(state: ApiState, ctx: RequestContext, server_id: str) -> list[Attachment]:
    db, row = await lookup.visible_instance(state, ctx, server_id)
    return [_of(r) for r in await db.fetch(BQ.of_instance, row["uuid"])
            if r["destination_type"] == "volume" and r["volume_id"] is not None]


async def show(state: ApiState, ctx: RequestContext, server_id: str, volume_id: str) -> Attachment:
    db, row = await lookup.visible_instance(state, ctx, server_id)
    bdm = await _mapping(db, row["uuid"], volume_id)
    if bdm is None:
        raise _not_attached(server_id, volume_id)
    return _of(bdm)


async def mappings_of_volume(state: ApiState, volume_id: str) -> list[asyncpg.Record]:
    """The mappings that attach volume `volume_id` to live servers, each with its server's
    host (every cell asked; none for an id that is no uuid)."""
    uuid = parse_uuid(volume_id)
    return await state.cells.gather(BQ.attached_volume, uuid) if uuid else []


async def volumes_attached(state: ApiState, rows: list[Any]) -> dict[str, list[asyncpg.Record]]:
    """The attached volumes of each listed server, by server uuid: one query per cell."""
    uuids = [str(r["uuid"]) for r in rows]
    if not uuids:
        return {}
    if len(rows) == 1:  # a show: its server's cell alone
        cell = await state.cells.of_instance(uuids[0])
        found = await cell.pool.fetch(BQ.volumes_of_instances, uuids) if cell else []
    else:
        found = await state.cells.gather(BQ.volumes_of_instances, uuids)
    out: dict[str, list[asyncpg.Record]] = {}
    for r in found:
        out.setdefault(str(r["instance_uuid"]), []).append(r)
    return out


async def attach(state: ApiState, ctx: RequestContext, server_id: str, volume_id: str, *,
                 device: str | None, tag: str | None, delete_on_termination: bool) -> Attachment:
    db, row = await lookup.visible_instance(state, ctx, server_id)
    uuid = str(row["uuid"])
    _check_changeable(ctx, row, "attach_volume")
    if await _mapping(db, uuid, volume_id) is not None:
        # Nova's InvalidVolume: a 400, as tempest's negative tests expect.
        raise errors.InvalidInput(f"Invalid volume: volume {volume_id} already attached")
    try:
        reserved = await state.volumes.reserve(volume_id, uuid, ctx.project_id, ctx.is_admin, context=ctx)
    except errors.NotFound:
        raise errors.NotFound(f"Volume {volume_id} could not be found.") from None
    except errors.Conflict as exc:
        raise errors.InvalidInput(f"Invalid volume: {exc.message}") from None
    attachment_id = reserved.attachment_id
    try:
        bdm, host = await _record(db, ctx, row, reserved.volume.id, reserved.volume.size, attachment_id,
                            device=device, tag=tag, delete_on_termination=delete_on_termination)
    except BaseException:
        await state.volumes.delete_attachment(attachment_id, context=ctx)
        raise
    if host is None:
        # Shelved offloaded: no host to connect it. As Nova, the attachment is completed without
        # one (the volume is in-use) and the host that unshelves the server connects it.
        try:
            await state.volumes.complete(attachment_id, context=ctx)
        except BaseException:
            await state.volumes.delete_attachment(attachment_id, context=ctx)
            await db.execute(BQ.delete, bdm["id"])
            await instances.finish_action(db, uuid, ctx.request_id, "Error")
            raise
        await instances.finish_action(db, uuid, ctx.request_id)
        return _of(bdm)
    try:
        await state.compute.attach_volume(host, uuid, reserved.volume.id, attachment_id, str(bdm["id"]),
                                          context=ctx)
    except Exception:
        # Nobody will attach it: give the volume back rather than leave it reserved.
        await state.volumes.delete_attachment(attachment_id, context=ctx)
        await db.execute(BQ.delete, bdm["id"])
        await instances.finish_action(db, uuid, ctx.request_id, "Error")
        raise
    return _of(bdm)


async def _record(db: Pool, ctx: RequestContext, row: asyncpg.Record, volume_id: str, size: int,
                  attachment_id: str, *, device: str | None, tag: str | None,
                  delete_on_termination: bool) -> tuple[asyncpg.Record, str]:
    """The mapping and the instance action, in one transaction holding the instance's row:
    the device is chosen against every other mapping of the server, and the server's state
    is checked again under the lock (a delete may have begun since). Returns the mapping and
    the host the server is on."""
    uuid = str(row["uuid"])
    async with db.acquire() as conn, conn.transaction():
        locked = await conn.fetchrow(IQ.get_for_update, uuid)
        if locked is None:
            raise lookup.not_found(uuid)
        _check_changeable(ctx, locked, "attach_volume")
        taken = {target_of(r["device_name"]) for r in await conn.fetch(BQ.of_instance, uuid)
                 if r["device_name"]}
        name = _device(locked["flavor"], taken, device)
        try:
            bdm = await conn.fetchrow(BQ.insert, str(uuidlib.uuid4()), uuid, "volume", "volume", None, name,
                                      "virtio", "disk", None, None, None, volume_id, size, None,
                                      delete_on_termination, tag, attachment_id)
        except asyncpg.UniqueViolationError:
            raise errors.InvalidInput(f"Invalid volume: volume {volume_id} already attached") from None
        await instances.start_action(conn, uuid, ctx.request_id, "attach_volume", ctx.project_id, ctx.user_id)
    return bdm, locked["host"]


def _device(flavor: dict[str, Any], taken: set[str], requested: str | None) -> str:
    """The guest's device for the new disk. The local disks come first, as a build gives them
    (disks.py: root vda, ephemeral vdb, swap after it); a requested virtio name is used when
    free (409 when not), any other requested name is taken as "the next one", as Nova's
    libvirt driver does."""
    local = ["vda"]
    if flavor.get("ephemeral_gb"):
        local.append("vdb")
    if flavor.get("swap"):
        local.append(f"vd{_LETTERS[len(local)]}")
    taken = taken | set(local)
    wanted = target_of(requested)
    if requested and wanted.startswith("vd"):
        if wanted in taken:
            raise errors.Conflict(f"The supplied device path ({requested}) is in use.")
        return f"/dev/{wanted}"
    for n in range(1, 26 + 26 * 26):
        name = "vd" + (_LETTERS[n] if n < 26 else _LETTERS[n // 26 - 1] + _LETTERS[n % 26])
        if name not in taken:
            return f"/dev/{name}"
    raise errors.Conflict("The server has no free device name left for another volume.")


async def update(state: ApiState, ctx: RequestContext, server_id: str, volume_id: str,
                 changes: dict[str, Any]) -> None:
    """`PUT` on an attachment: from 2.85, its delete_on_termination (anything else the body
    names must be what the attachment already has). Naming another volume asks for a swap,
    which only an admin may (Nova's policy) and this cloud does not do."""
    db, row = await lookup.visible_instance(state, ctx, server_id)
    bdm = await _mapping(db, str(row["uuid"]), volume_id)
    if bdm is None:
        raise _not_attached(server_id, volume_id)
    if parse_uuid(changes["volumeId"]) != str(bdm["volume_id"]):
        if not ctx.is_admin:
            raise errors.Forbidden("Policy doesn't allow os_compute_api:os-volumes-attachments:swap to be "
                                   "performed.")
        raise errors.Conflict("Swapping the volume of an attachment is not supported.")
    current = _of(bdm)
    for field, value in (("device", current.device), ("tag", current.tag), ("serverId", current.server_id),
                         ("id", current.volume_id)):
        if field in changes and changes[field] != value:
            raise errors.InvalidInput(f"The {field} property is not mutable")
    if "delete_on_termination" in changes:
        await db.execute(BQ.set_delete_on_termination, bdm["id"], changes["delete_on_termination"])


async def detach(state: ApiState, ctx: RequestContext, server_id: str, volume_id: str) -> None:
    db, row = await lookup.visible_instance(state, ctx, server_id)
    uuid = str(row["uuid"])
    bdm = await _mapping(db, uuid, volume_id)
    if bdm is None:
        raise _not_attached(server_id, volume_id)
    _check_changeable(ctx, row, "detach_volume")
    if bdm["boot_index"] == 0:
        # Nova answers this one with a 400.
        raise errors.InvalidInput("Cannot detach a root device volume")
    if bdm["attachment_id"] is None:
        raise errors.Conflict(f"Volume {volume_id} is still being attached to instance {server_id}.")
    attachment_id = str(bdm["attachment_id"])
    if row["host"] is None:
        # Shelved offloaded: no guest holds it; the attachment and the mapping go here (Nova's
        # local clean-up), and the volume is available again.
        await instances.start_action(db, uuid, ctx.request_id, "detach_volume", ctx.project_id, ctx.user_id)
        await state.volumes.delete_attachment(attachment_id, context=ctx)
        await db.execute(BQ.delete, bdm["id"])
        await instances.finish_action(db, uuid, ctx.request_id)
        return
    try:
        await state.volumes.begin_detach(attachment_id, context=ctx)
    except errors.Conflict as exc:
        raise errors.InvalidInput(f"Invalid volume: {exc.message}") from None
    try:
        await instances.start_action(db, uuid, ctx.request_id, "detach_volume", ctx.project_id, ctx.user_id)
        await state.compute.detach_volume(row["host"], uuid, volume_id, attachment_id, context=ctx)
    except Exception:
        await state.volumes.roll_detaching_back(attachment_id, context=ctx)
        await instances.finish_action(db, uuid, ctx.request_id, "Error")
        raise


def target_of(device_name: str | None) -> str:
    """"/dev/vdb" → "vdb" (compute's volume_disks.target_of; roles do not share insides)."""
    return (device_name or "").rsplit("/", 1)[-1]


def _check_changeable(ctx: RequestContext, row: asyncpg.Record, action: str) -> None:
    uuid = row["uuid"]
    if row["locked"] and not ctx.is_admin:
        raise errors.Conflict(f"Instance {uuid} is locked.")
    if row["task_state"] is not None:
        raise errors.Conflict(f"Cannot '{action}' instance {uuid} while it is in task_state {row['task_state']}")
    if row["vm_state"] not in ALLOWED or (row["host"] is None and row["vm_state"] != VmState.SHELVED_OFFLOADED):
        raise errors.Conflict(f"Cannot '{action}' instance {uuid} while it is in vm_state {row['vm_state']}")


async def _mapping(db: Pool, instance_uuid: str, volume_id: str) -> asyncpg.Record | None:
    volume_uuid = parse_uuid(volume_id)
    if volume_uuid is None:
        return None
    bdm = await db.fetchrow(BQ.get_by_volume, instance_uuid, volume_uuid)
    return bdm if bdm is not None and bdm["destination_type"] == "volume" else None


def _not_attached(server_id: str, volume_id: str) -> errors.NotFound:
    return errors.NotFound(f"Instance {server_id} is not attached to volume {volume_id}")
