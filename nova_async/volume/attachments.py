"""Volume attachments: the states a volume goes through while a server takes it and lets it
go, kept by the volume role for the compute API and compute hosts (bus) and for Cinder's
attachments API (handlers/attachments.py).

    reserve          volume available → reserved        attachment reserved
    connect          reserved → attaching               attaching, with connector and connection_info
    complete         attaching → in-use                 attached, attached_at
    begin_detach     in-use → detaching                 detaching
    roll back        detaching → in-use                 attached
    delete           → available (no attachment left)   gone

Each change runs in one transaction that first locks the volume's row, then changes the
volume with a conditional UPDATE from the states it may leave. A volume delete or extend
(volumes.py) also changes that row conditionally, so whichever commits first wins and the
other finds the volume in a state it may not leave: a 409, never both. The unique index
volume_attachments_one_unless_multiattach is the last guard; its violation is a 409 too.

A reserve whose API died before it wrote the server's block device mapping leaves a
`reserved` attachment nothing will ever complete or delete: `clean_up_reserved` deletes such
attachments once they are a few minutes old and their instance has no mapping of the volume
(the role runs it at start and every few minutes)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import structlog

from nova_async.common import errors, lease
from nova_async.db.cells import Cells
from nova_async.db.queries import queries
from nova_async.volume import messages as m
from nova_async.volume import notify
from nova_async.volume.state import VolumeApi

Q = queries("volume_attachments")
log = structlog.get_logger("volume")

# An attachment reserved this long ago without a block device mapping is an orphan. A boot
# or an attach writes its mapping right after the reserve: seconds, not minutes.
RESERVED_ORPHAN_AFTER = 300.0
CLEAN_UP_EVERY = 180.0


def _uuid(value: Any) -> str | None:
    try:
        return str(uuid.UUID(str(value)))
    except (ValueError, TypeError):
        return None


def _volume_not_found(volume_id: str) -> errors.NotFound:
    return errors.NotFound(f"Volume {volume_id} could not be found.", code="volume_not_found")


def _attachment_not_found(attachment_id: str) -> errors.NotFound:
    return errors.NotFound(f"Attachment {attachment_id} could not be found.", code="attachment_not_found")


def _conflict(what: str) -> errors.Conflict:
    return errors.Conflict(f"Invalid volume: {what}", code="invalid_volume")


async def can_delete(conn: asyncpg.Connection, volume_id: str) -> bool:
    """Whether a volume may be deleted as far as attachments go. A delete must decide this
    inside the transaction of its own conditional UPDATE, after locking the volume's row
    (SELECT … FOR UPDATE, as reserve does), or fold the condition into that UPDATE:

        UPDATE volumes SET status = 'deleting' …
         WHERE id = $1 AND status = ANY('{available,error,error_deleting,error_extending}')
           AND NOT EXISTS (SELECT 1 FROM volume_attachments a WHERE a.volume_id = volumes.id)

    Reserve only ever attaches a volume it moved out of `available` in the same
    transaction, so the status test alone already refuses whichever of the two commits
    second; the NOT EXISTS keeps a volume in an error state with a leftover attachment."""
    return bool(await conn.fetchval(Q.can_delete_volume, volume_id))


# --- the changes ---------------------------------------------------------------------------


async def reserve(api: VolumeApi, *, volume_id: str, instance_uuid: str, project_id: str, is_admin: bool,
                  made_by: str, mode: str = "rw") -> tuple[asyncpg.Record, asyncpg.Record]:
    """An attachment of the volume for the instance: (attachment, volume). `made_by` is
    "compute" (the bus) or "volume-api" (a user): only compute's are cleaned up when nothing
    maps them."""
    vid, iid = _uuid(volume_id), _uuid(instance_uuid)
    if vid is None:
        raise _volume_not_found(volume_id)
    if iid is None:
        raise errors.InvalidInput(f"Invalid input received: instance_uuid {instance_uuid!r} is not a UUID.")
    async with api.pool.acquire() as conn, conn.transaction():
        volume = await conn.fetchrow(Q.lock_volume, vid)
        if volume is None or not (is_admin or volume["project_id"] == project_id):
            raise _volume_not_found(volume_id)
        reserved = await conn.fetchrow(Q.reserve_volume, vid)
        if reserved is None:
            raise _conflict(f"Volume {vid} status must be available to reserve, but the current status is: "
                            f"{volume['status']}.")
        try:
            async with conn.transaction():   # a savepoint: the violation is ours to report
                attachment = await conn.fetchrow(Q.insert_attachment, str(uuid.uuid4()), vid, iid,
                                                 volume["project_id"], volume["multiattach"], mode, made_by)
        except asyncpg.UniqueViolationError:
            raise _conflict(f"Volume {vid} is attached already"
                            + (" to this instance." if volume["multiattach"] else ".")) from None
    log.info("volume reserved", volume_id=vid, instance_uuid=iid, attachment_id=str(attachment["id"]))
    return attachment, reserved


async def connect(api: VolumeApi, attachment_id: str, connector: dict[str, Any],
                  mountpoint: str = "") -> tuple[asyncpg.Record, m.ConnectionInfo]:
    """The host's connector recorded and the connection it gets: (attachment, connection)."""
    host = connector.get("host") if isinstance(connector, dict) else None
    if not isinstance(host, str) or not host:
        raise errors.InvalidInput("Invalid input received: the connector must name its host.")
    async with api.pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, attachment_id)
        if row["status"] in ("reserved", "attaching"):
            if await conn.fetchrow(Q.set_volume_status, row["volume_id"], ["reserved", "attaching"],
                                   "attaching") is None and not row["multiattach"]:
                raise _conflict(f"Volume {row['volume_id']} status must be reserved to attach, but the current "
                                f"status is: {row['volume_status']}.")
        elif row["status"] != "attached":
            raise _conflict(f"Attachment {attachment_id} is {row['status']}; it cannot be connected.")
        found = api.store.connection(str(row["volume_id"]))
        info = m.ConnectionInfo(driver_volume_type=found.driver_volume_type, device_path=found.path,
                                disk_kind=found.kind, format=found.format, volume_id=str(row["volume_id"]),
                                access_mode=row["attach_mode"])
        updated = await conn.fetchrow(Q.connect_attachment, row["id"], connector, info.as_cinder(), host,
                                      mountpoint or None)
    if row["status"] == "reserved":
        await notify.notify(api, "volume.attach.start", str(row["volume_id"]),
                            instance_uuid=str(row["instance_uuid"]), attachment_id=str(row["id"]), host=host)
    log.info("volume attachment connected", attachment_id=str(row["id"]), volume_id=str(row["volume_id"]),
             host=host)
    return updated, info


async def complete(api: VolumeApi, attachment_id: str) -> asyncpg.Record:
    """The guest has the disk: attachment attached, volume in-use. Repeating it is fine.
    A reserved attachment (no connector yet) may be completed too, as Cinder allows: Nova
    does so for a volume attached to a shelved offloaded server, which is connected on the
    host that unshelves it."""
    async with api.pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, attachment_id)
        if row["status"] == "attached":
            return row
        if row["status"] not in ("attaching", "reserved"):
            raise _conflict(f"Attachment {attachment_id} is {row['status']}; only a reserved or attaching "
                            "attachment can be completed.")
        await conn.execute(Q.set_volume_status, row["volume_id"], ["attaching", "reserved"], "in-use")
        done = await conn.fetchrow(Q.set_attachment_status, row["id"], ["attaching", "reserved"], "attached")
    await notify.notify(api, "volume.attach.end", str(row["volume_id"]), instance_uuid=str(row["instance_uuid"]),
                        attachment_id=str(row["id"]), mountpoint=row["mountpoint"] or "",
                        host=row["attached_host"] or "")
    log.info("volume attached", attachment_id=str(row["id"]), volume_id=str(row["volume_id"]),
             instance_uuid=str(row["instance_uuid"]))
    return done


async def begin_detach(api: VolumeApi, attachment_id: str) -> None:
    """A detach starts: volume in-use → detaching (409 unless it is attached)."""
    async with api.pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, attachment_id)
        if row["status"] == "detaching":
            return
        if row["status"] != "attached":
            raise _conflict(f"Attachment {attachment_id} is {row['status']}, not attached.")
        if await conn.fetchrow(Q.set_volume_status, row["volume_id"], ["in-use"], "detaching") is None \
                and not row["multiattach"]:
            raise _conflict(f"Volume {row['volume_id']} status must be in-use to detach, but the current status "
                            f"is: {row['volume_status']}.")
        await conn.execute(Q.set_attachment_status, row["id"], ["attached"], "detaching")
    await notify.notify(api, "volume.detach.start", str(row["volume_id"]),
                        instance_uuid=str(row["instance_uuid"]), attachment_id=str(row["id"]))


async def roll_detaching_back(api: VolumeApi, attachment_id: str) -> None:
    """A detach failed and the guest still has the disk: detaching → in-use / attached."""
    async with api.pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, attachment_id)
        if row["status"] == "attached":
            return
        if row["status"] != "detaching":
            raise _conflict(f"Attachment {attachment_id} is {row['status']}, not detaching.")
        await conn.execute(Q.set_volume_status, row["volume_id"], ["detaching"], "in-use")
        await conn.execute(Q.set_attachment_status, row["id"], ["detaching"], "attached")


async def delete(api: VolumeApi, attachment_id: str) -> asyncpg.Record | None:
    """The attachment deleted, whatever its state (a failed attach deletes a reserved or
    attaching one); the volume available when no other attachment is left. Deleting one that
    is gone is fine (None)."""
    aid = _uuid(attachment_id)
    if aid is None:
        return None
    async with api.pool.acquire() as conn, conn.transaction():
        row = await _lock(conn, aid)
        if row is None:
            return None
        await conn.execute(Q.delete_attachment, aid)
        await conn.execute(Q.settle_volume_after_delete, row["volume_id"])
    # A detach that began (begin_detach) said detach.start then; one deleted straight from
    # attached says both now. A failed attach (reserved, attaching) was never attached.
    if row["status"] == "attached":
        await notify.notify(api, "volume.detach.start", str(row["volume_id"]),
                            instance_uuid=str(row["instance_uuid"]), attachment_id=aid)
    if row["status"] in ("attached", "detaching"):
        await notify.notify(api, "volume.detach.end", str(row["volume_id"]),
                            instance_uuid=str(row["instance_uuid"]), attachment_id=aid)
    log.info("volume attachment deleted", attachment_id=aid, volume_id=str(row["volume_id"]),
             instance_uuid=str(row["instance_uuid"]), was=row["status"])
    return row


async def _lock(conn: asyncpg.Connection, attachment_id: str) -> asyncpg.Record | None:
    """The attachment (None when there is none), its volume's row locked, then its own. An
    attachment never changes volume, so the volume read before the lock is still its own."""
    volume_id = await conn.fetchval(Q.volume_of_attachment, attachment_id)
    if volume_id is None:
        return None
    await conn.execute(Q.lock_volume, volume_id)
    return await conn.fetchrow(Q.lock_attachment, attachment_id)


async def _locked(conn: asyncpg.Connection, attachment_id: str) -> asyncpg.Record:
    aid = _uuid(attachment_id)
    row = await _lock(conn, aid) if aid else None
    if row is None:
        raise _attachment_not_found(attachment_id)
    return row


# --- reading --------------------------------------------------------------------------------


async def get(api: VolumeApi, attachment_id: str, *, project_id: str | None) -> asyncpg.Record:
    """The attachment, if `project_id` owns its volume (None: an admin, any)."""
    aid = _uuid(attachment_id)
    row = await api.pool.fetchrow(Q.get_attachment, aid) if aid else None
    if row is None or (project_id is not None and row["volume_project"] != project_id):
        raise _attachment_not_found(attachment_id)
    return row


async def find(api: VolumeApi, *, project_id: str | None, volume_id: str | None = None,
               instance_uuid: str | None = None, status: str | None = None) -> list[asyncpg.Record]:
    vid = _uuid(volume_id) if volume_id is not None else None
    iid = _uuid(instance_uuid) if instance_uuid is not None else None
    if (volume_id is not None and vid is None) or (instance_uuid is not None and iid is None):
        return []
    return await api.pool.fetch(Q.visible, project_id, vid, iid, status)


async def of_volume(api: VolumeApi, volume_id: str) -> list[asyncpg.Record]:
    return await api.pool.fetch(Q.of_volume, volume_id)


async def of_instance(api: VolumeApi, instance_uuid: str) -> list[asyncpg.Record]:
    iid = _uuid(instance_uuid)
    return await api.pool.fetch(Q.of_instance, iid) if iid else []


# --- recovery -------------------------------------------------------------------------------


async def clean_up_reserved(api: VolumeApi, cells: Cells, older_than: float = RESERVED_ORPHAN_AFTER) -> list[str]:
    """Delete the attachments compute reserved more than `older_than` seconds ago whose
    instance has no block device mapping of the volume in its cell (or no cell: the instance
    is gone); their volumes become available again. The ids of those deleted. Reservations
    made through the volume API are their makers' to complete or delete."""
    removed: list[str] = []
    for row in await api.pool.fetch(Q.stale_reserved, older_than):
        instance_uuid = str(row["instance_uuid"])
        cell = await cells.of_instance(instance_uuid)
        if cell is not None and await cell.pool.fetchval(Q.instance_maps_volume, instance_uuid, row["volume_id"]):
            continue
        # Deleted only if still reserved: a connect that came meanwhile keeps it.
        async with api.pool.acquire() as conn, conn.transaction():
            current = await _lock(conn, row["id"])
            if current is None or current["status"] != "reserved":
                continue
            await conn.execute(Q.delete_attachment, row["id"])
            await conn.execute(Q.settle_volume_after_delete, row["volume_id"])
        log.warning("deleted a reserved volume attachment no server maps (its API stopped before it recorded "
                    "the mapping)", attachment_id=str(row["id"]), volume_id=str(row["volume_id"]),
                    instance_uuid=instance_uuid)
        removed.append(str(row["id"]))
    return removed


# --- the views shared by the bus and the HTTP API --------------------------------------------


def record(row: asyncpg.Record) -> m.AttachmentRecord:
    return m.AttachmentRecord(attachment_id=str(row["id"]), volume_id=str(row["volume_id"]), status=row["status"],
                              volume_status=row["volume_status"], connection_info=row["connection_info"] or {})


# --- the role's part: bus handlers and the clean-up task -----------------------------------


def bus_handlers(role: Any) -> dict[type, Any]:
    """The volume role's handlers for the attachment messages (role: the VolumeRole, with its
    VolumeApi as `api`)."""
    api: VolumeApi = role.api

    async def reserve_volume(msg: m.ReserveVolume, ctx: Any) -> m.AttachmentInfo:
        attachment, volume = await reserve(api, volume_id=msg.volume_id, instance_uuid=msg.instance_uuid,
                                           project_id=msg.project_id, is_admin=msg.is_admin, made_by="compute")
        from nova_async.volume.role import info   # role.py imports this module
        return m.AttachmentInfo(attachment_id=str(attachment["id"]), volume=info(volume))

    async def connect_attachment(msg: m.ConnectAttachment, ctx: Any) -> m.ConnectionInfo:
        _, connection = await connect(api, msg.attachment_id, msg.connector, msg.mountpoint)
        return connection

    async def complete_attachment(msg: m.CompleteAttachment, ctx: Any) -> None:
        await complete(api, msg.attachment_id)

    async def begin_detach_(msg: m.BeginDetach, ctx: Any) -> None:
        await begin_detach(api, msg.attachment_id)

    async def roll_detaching_back_(msg: m.RollDetachingBack, ctx: Any) -> None:
        await roll_detaching_back(api, msg.attachment_id)

    async def delete_attachment(msg: m.DeleteAttachment, ctx: Any) -> None:
        await delete(api, msg.attachment_id)

    async def volumes_of_instance(msg: m.VolumesOfInstance, ctx: Any) -> m.AttachmentList:
        return m.AttachmentList(attachments=[record(r) for r in await of_instance(api, msg.instance_uuid)])

    return {m.ReserveVolume: reserve_volume, m.ConnectAttachment: connect_attachment,
            m.CompleteAttachment: complete_attachment, m.BeginDetach: begin_detach_,
            m.RollDetachingBack: roll_detaching_back_, m.DeleteAttachment: delete_attachment,
            m.VolumesOfInstance: volumes_of_instance}


async def keep_reserved_clean(role: Any) -> None:
    """The role's task: clean_up_reserved at start and every CLEAN_UP_EVERY seconds until the
    role stops, in one copy of the role at a time (common/lease.py). A failure (the database
    away) is logged and tried again next time."""
    await lease.periodic(role.deps.locks, "volume:reserved-attachments",
                         lambda: clean_up_reserved(role.api, role.cells),
                         seconds=CLEAN_UP_EVERY, stopping=role.stopping)
