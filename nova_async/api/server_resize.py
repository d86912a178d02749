"""Server actions that change what a server is made of or where it runs: `resize` (with
`confirmResize` and `revertResize`), `migrate` (a cold migration: a resize to the same
flavor on another host, confirmed or reverted the same way), `createImage` and
`createBackup` (a snapshot whose host then keeps only the newest `rotation` backups).

`resize` checks the new flavor (it exists, differs, has no smaller root or ephemeral disk —
disks only grow, as with Nova's libvirt driver), then, under the project's quota locks (those
a boot takes: quotas.py), in one transaction claims the server (task_state resize_prep, from
ACTIVE or SHUTOFF), checks that the project's quota takes the growth, records the migration
with the old and new flavor, and starts the action; the
conductor takes it from there (conductor/resize.py). The server then waits in
VERIFY_RESIZE: `confirmResize` (204) keeps the new flavor, `revertResize` (202) goes back.
Of a confirm and a revert racing, exactly one wins the migration's row.

`createImage` makes the image first (queued, private, with Nova's snapshot properties and
the base image's kernel/ramdisk so the snapshot boots like the original), then claims the
server (task_state image_snapshot) and asks its host to fill the image; 202 with the
image's id (2.45+) or a Location header naming it."""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

from aiohttp import web

from nova_async.api import flavor_store, lookup, quotas, server_store, service_store, volume_backed_image
from nova_async.api.microversion import Version
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.states import TaskState, VmState
from nova_async.common import web as w
from nova_async.common.context import RequestContext
from nova_async.compute.messages import ResizeStepName
from nova_async.db import instances
from nova_async.db.queries import queries
from nova_async.hooks import runner as hooks
from nova_async.image.messages import CreateImage, ImageInfo
from nova_async.scheduler.messages import Flavor

IQ = queries("instances")
MQ = queries("migrations")

RESIZE_SCHEMA = {
    "type": "object", "required": ["flavorRef"], "additionalProperties": False,
    "properties": {"flavorRef": {"type": ["string", "integer"], "minLength": 1},
                   "OS-DCF:diskConfig": {"enum": ["AUTO", "MANUAL"]}}}
CREATE_BACKUP_SCHEMA = {
    "type": "object", "required": ["name", "backup_type", "rotation"], "additionalProperties": False,
    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[^\\x00-\\x1f]*$"},
                   "backup_type": {"type": "string"},
                   "rotation": {"type": ["integer", "string"], "pattern": "^[0-9]+$", "minimum": 0},
                   "metadata": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 255},
                                "propertyNames": {"minLength": 1, "maxLength": 255}}}}
CREATE_IMAGE_SCHEMA = {
    "type": "object", "required": ["name"], "additionalProperties": False,
    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[^\\x00-\\x1f]*$"},
                   "metadata": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 255},
                                "propertyNames": {"minLength": 1, "maxLength": 255}}}}

# Base-image properties a snapshot does not inherit: they describe the upload, not the disk.
_NOT_INHERITED = ("owner_specified.", "os_hash", "image_type", "instance_uuid", "base_image_ref", "image_location",
                  "user_id", "owner_id", "owner_project_name", "owner_user_name")


async def _new_flavor(state: ApiState, ctx: RequestContext, ref: Any, old: Flavor,
                      volume_backed: bool = False) -> Flavor:
    flavor_id = str(ref).rsplit("/", 1)[-1]
    try:
        row = await flavor_store.visible(state.pool, ctx, flavor_id)
    except errors.NotFound:
        raise errors.InvalidInput(f"Unable to find flavor {flavor_id}.") from None
    if row["disabled"]:
        raise errors.InvalidInput(f"Flavor {flavor_id} is disabled.")
    new = Flavor.of_flavor(row)
    if new.id == old.id:
        raise errors.InvalidInput("When resizing, instances must change flavor!")
    # A volume-backed server's root is its volume, whatever the flavor's disk says (Nova).
    if new.root_gb < old.root_gb and not volume_backed:
        raise errors.InvalidInput(f"Resize error: Unable to resize disk down: flavor {new.name} has "
                                  f"a {new.root_gb} GiB root disk, the server {old.root_gb} GiB.")
    if new.ephemeral_gb < old.ephemeral_gb:
        raise errors.InvalidInput(f"Resize error: Unable to resize disk down: flavor {new.name} has "
                                  f"a {new.ephemeral_gb} GiB ephemeral disk, the server "
                                  f"{old.ephemeral_gb} GiB.")
    return new


def _growth(old: Flavor, new: Flavor) -> dict[str, int]:
    """What a resize from `old` to `new` adds to the project's cores and ram (what shrinks adds nothing)."""
    return {"cores": max(0, new.vcpus - old.vcpus), "ram": max(0, new.memory_mb - old.memory_mb)}


async def resize(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, Any]) -> web.Response:
    db, row = await server_store.changeable(state, ctx, uuid)
    old = Flavor.from_row(row["flavor"])
    new = await _new_flavor(state, ctx, value["flavorRef"], old, volume_backed=not row["image_ref"])
    await state.hooks.pre("pre_resize", row, flavor=lambda: hooks.flavor(new))
    # Under the project's quota locks, as a boot: two upsizes (or an upsize and a boot) cannot
    # both take the last cores; the migration, which keeps the growth counted, commits first.
    async with quotas.growing(state.pool, state.cells, state.settings.quota, row["project_id"]) as room:
        migration_uuid = await _claim(ctx, db, uuid, new, "resize", room=room,
                                      auto_disk_config=server_store.auto_disk_config(value))
    return await _hand_over(state, ctx, db, uuid, migration_uuid)


MIGRATE_SCHEMA = w.validator({"type": ["object", "null"], "additionalProperties": False, "properties": {
    "host": {"type": ["string", "null"], "minLength": 1, "maxLength": 255}}})


async def migrate(state: ApiState, ctx: RequestContext, uuid: str, value: Any, version: Version) -> web.Response:
    """A cold migration (admin): the server, its flavor unchanged, to another host, the one
    named (from 2.56) or the scheduler's pick; then VERIFY_RESIZE, as a resize. A project's
    manager may migrate its servers too, but only an admin may name the host."""
    if not ctx.is_manager:
        raise errors.Forbidden("Policy doesn't allow os_compute_api:os-migrate-server:migrate to be performed.")
    host = None
    if version >= (2, 56):
        w.check(MIGRATE_SCHEMA, value)
        host = (value or {}).get("host")
    if host is not None and not ctx.is_admin:
        raise errors.Forbidden("Policy doesn't allow os_compute_api:os-migrate-server:migrate:host to be performed.")
    db, row = await server_store.changeable(state, ctx, uuid)
    if host is not None:
        if not await service_store.compute_host_exists(state.pool, host):
            raise errors.InvalidInput(f"Compute host {host} could not be found.")
        if host == row["host"]:
            raise errors.InvalidInput("The target host can't be the same one.")
    migration_uuid = await _claim(ctx, db, uuid, Flavor.from_row(row["flavor"]), "migrate",
                                  migration_type="migration", dest=host)
    return await _hand_over(state, ctx, db, uuid, migration_uuid)


async def _claim(ctx: RequestContext, db, uuid: str, new: Flavor, action: str, *,
                 room: quotas.Room | None = None, migration_type: str = "resize", dest: str | None = None,
                 auto_disk_config: bool | None = None) -> str:
    """Claim the server (task_state resize_prep, from ACTIVE or SHUTOFF), check that the
    project's quota takes what `new` adds to the flavor claimed (when there is a `room` to
    check), and record the migration and the action: one transaction of the cell, committed
    when this returns; the migration's uuid."""
    migration_uuid = str(uuidlib.uuid4())
    async with db.acquire() as conn, conn.transaction():
        claimed = await conn.fetchrow(MQ.begin_resize, uuid, auto_disk_config)
        if claimed is None:
            raise lookup.refusal(await conn.fetchrow(IQ.get, uuid), action, uuid)
        if room is not None:
            room.check(_growth(Flavor.from_row(claimed["flavor"]), new))
        await conn.execute(MQ.insert_migration, migration_uuid, uuid, claimed["host"], claimed["node"],
                           claimed["flavor"], new, claimed["request_spec"], claimed["vm_state"],
                           claimed["project_id"], claimed["user_id"], migration_type, dest)
        await instances.start_action(conn, uuid, ctx.request_id, action, ctx.project_id, ctx.user_id)
    return migration_uuid


async def _hand_over(state: ApiState, ctx: RequestContext, db, uuid: str, migration_uuid: str) -> web.Response:
    """The claimed move to the conductor; when it cannot be told, the claim is undone."""
    try:
        await state.conductor.resize(uuid, migration_uuid, ctx)
    except Exception:
        await db.execute(MQ.set_migration_status, migration_uuid, "error", ["pre-migrating"])
        await db.execute(MQ.release_resize, uuid, [TaskState.RESIZE_PREP])
        await instances.finish_action(db, uuid, ctx.request_id, "Error")
        raise
    return web.Response(status=202)


async def _finished_migration(state: ApiState, ctx: RequestContext, uuid: str, action: str, query: str):
    """Claim the server's finished resize for a confirm or a revert (409 when it is not in
    VERIFY_RESIZE, 400 when it is but no resize waits, as Nova answers)."""
    db, row = await server_store.changeable(state, ctx, uuid)
    async with db.acquire() as conn, conn.transaction():
        migration = await conn.fetchrow(query, uuid)
        if migration is None:
            current = await conn.fetchrow(IQ.get, uuid)
            if current is not None and current["vm_state"] == VmState.RESIZED and current["task_state"] is None:
                raise errors.InvalidInput("Instance has not been resized.")
            raise lookup.refusal(current, action, uuid)
        if action == "revertResize" and await conn.fetchrow(MQ.begin_revert_instance, uuid) is None:
            raise lookup.refusal(await conn.fetchrow(IQ.get, uuid), action, uuid)
        await instances.start_action(conn, uuid, ctx.request_id, action, ctx.project_id, ctx.user_id)
    return row, migration


async def confirm_resize(state: ApiState, ctx: RequestContext, uuid: str, _value: None) -> web.Response:
    _row, migration = await _finished_migration(state, ctx, uuid, "confirmResize", MQ.begin_confirm)
    await state.compute.resize_step(migration["source_compute"], uuid, str(migration["uuid"]),
                                    ResizeStepName.CONFIRM, ctx)
    return web.Response(status=204)


async def revert_resize(state: ApiState, ctx: RequestContext, uuid: str, _value: None) -> web.Response:
    _row, migration = await _finished_migration(state, ctx, uuid, "revertResize", MQ.begin_revert_migration)
    await state.compute.resize_step(migration["dest_compute"], uuid, str(migration["uuid"]),
                                    ResizeStepName.REVERT, ctx)
    return web.Response(status=202)


async def create_image(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, Any],
                       version: Version) -> web.Response:
    return await _snapshot(state, ctx, uuid, value, version, action="createImage", image_type="snapshot")


async def create_backup(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, Any],
                        version: Version) -> web.Response:
    """createBackup: a snapshot of type backup; once it is uploaded, the host keeps the newest
    `rotation` backups of the server of that backup_type and deletes the rest, as Nova."""
    return await _snapshot(state, ctx, uuid, value, version, action="createBackup", image_type="backup",
                           forced={"backup_type": value["backup_type"]}, rotation=int(value["rotation"]))


async def snapshot_image(state: ApiState, ctx: RequestContext, row, name: str, image_type: str,
                         metadata: dict[str, str], forced: dict[str, str] | None = None) -> ImageInfo:
    """A new queued image for a snapshot of the server's root disk (createImage, createBackup,
    shelve): private to its project, with Nova's snapshot properties and what it inherits
    from the image the server was booted from (kernel, ramdisk…), so it boots like it."""
    properties: dict[str, str] = {}
    min_disk = min_ram = 0
    try:
        base = await state.images.get(row["image_ref"], row["project_id"], is_admin=True)
    except errors.NotFound:
        base = None  # deleted since the boot: nothing to inherit
    if base is not None:
        properties = {k: v for k, v in base.properties.items() if not k.startswith(_NOT_INHERITED)}
        min_disk, min_ram = base.min_disk, base.min_ram
    properties.update({"image_type": image_type, "instance_uuid": str(row["uuid"]),
                       "base_image_ref": row["image_ref"] or "", "image_location": "snapshot",
                       "user_id": ctx.user_id, "owner_id": row["project_id"]})
    # As Nova: the caller's metadata wins over what the snapshot records of itself, except
    # what `forced` holds (a backup's type, which its rotation goes by).
    properties.update({**metadata, **(forced or {})})
    return await state.images.create(CreateImage(
        name=name, project_id=row["project_id"], properties=properties,
        min_disk=max(min_disk, row["flavor"]["root_gb"]), min_ram=min_ram))


async def _snapshot(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, Any], version: Version, *,
                    action: str, image_type: str, forced: dict[str, str] | None = None,
                    rotation: int | None = None) -> web.Response:
    db, row = await server_store.changeable(state, ctx, uuid)
    if row["task_state"] is not None or row["vm_state"] not in (
            VmState.ACTIVE, VmState.STOPPED, VmState.PAUSED, VmState.SUSPENDED):
        raise lookup.refusal(row, action, uuid)
    if not row["image_ref"] and rotation is not None:
        raise errors.InvalidInput("Backup is not supported for volume-backed instances.")
    if "metadata" in value:
        quotas.check_metadata(await quotas.limits(state.pool, state.settings.quota, row["project_id"]),
                              value["metadata"])
    if not row["image_ref"]:
        image_id = await volume_backed_image.create(state, ctx, db, row, value["name"],
                                                    dict(value.get("metadata") or {}),
                                                    {"image_type": image_type, "instance_uuid": uuid,
                                                     "user_id": ctx.user_id, "owner_id": row["project_id"]})
        return _snapshot_answer(state, image_id, version)
    image = await snapshot_image(state, ctx, row, value["name"], image_type, value.get("metadata") or {}, forced)
    try:
        async with db.acquire() as conn, conn.transaction():
            claimed = await conn.fetchrow(MQ.begin_snapshot, uuid)
            if claimed is None:
                raise lookup.refusal(await conn.fetchrow(IQ.get, uuid), action, uuid)
            await conn.execute(MQ.insert_snapshot, image.id, uuid, ctx.request_id)
            await instances.start_action(conn, uuid, ctx.request_id, action, ctx.project_id, ctx.user_id)
    except BaseException:
        await state.images.delete(image.id)
        raise
    try:
        await state.compute.snapshot(claimed["host"], uuid, image.id, ctx, rotation=rotation)
    except Exception:
        await db.execute(MQ.release_resize, uuid, [TaskState.IMAGE_SNAPSHOT])
        await db.execute(MQ.delete_snapshot, image.id)
        await state.images.delete(image.id)
        await instances.finish_action(db, uuid, ctx.request_id, "Error")
        raise
    return _snapshot_answer(state, image.id, version)


def _snapshot_answer(state: ApiState, image_id: str, version: Version) -> web.Response:
    if version >= (2, 45):
        return w.dump({"image_id": image_id}, status=202)
    return web.Response(status=202, headers={"Location": f"{state.base_url}/image/v2/images/{image_id}"})
