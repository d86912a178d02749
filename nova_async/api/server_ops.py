"""Server actions that change a server's state in place, apart from their HTTP resource
(handlers/server_actions.py): the power actions, `rebuild`, and `lock`/`unlock`; and the
one that changes nothing, the console's output.

A power action or a rebuild claims the instance in one transaction — compare-and-swap from
"no task, one of the allowed vm_states" to the action's task_state, so of two concurrent
requests exactly one wins and the other is a 409 — and records the instance action; then it
hands the work to the instance's compute host, which ends the task_state. If that hand-over
fails, nobody will end the task: the instance is given back rather than left stuck."""

from __future__ import annotations

from typing import Any

from nova_async.api import keypair_store, lookup, quotas, server_store
from nova_async.api.server_create import find_image, usable_image
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.states import TaskState, VmState
from nova_async.compute.messages import PowerAction, PowerOp, RebootType
from nova_async.db import instances
from nova_async.db.queries import queries

IQ = queries("instances")
AQ = queries("actions")
BQ = queries("block_devices")

# Where each power action may start from (Nova's check_instance_state); any action also
# needs task_state NULL.
_ALLOWED = {
    PowerOp.STOP: frozenset({VmState.ACTIVE, VmState.ERROR}),
    PowerOp.START: frozenset({VmState.STOPPED}),
    PowerOp.PAUSE: frozenset({VmState.ACTIVE}),
    PowerOp.UNPAUSE: frozenset({VmState.PAUSED}),
    PowerOp.SUSPEND: frozenset({VmState.ACTIVE}),
    PowerOp.RESUME: frozenset({VmState.SUSPENDED}),
}
_REBOOT_ALLOWED = {
    RebootType.SOFT: frozenset({VmState.ACTIVE}),
    RebootType.HARD: frozenset({VmState.ACTIVE, VmState.STOPPED, VmState.PAUSED, VmState.SUSPENDED, VmState.ERROR}),
}


def allowed_vm_states(op: PowerOp, reboot_type: RebootType = RebootType.SOFT) -> frozenset[VmState]:
    """The vm_states `op` may start from."""
    if op is PowerOp.REBOOT:
        return _REBOOT_ALLOWED[reboot_type]
    return _ALLOWED[op]


async def power(state: ApiState, ctx: RequestContext, uuid: str, op: PowerOp,
                reboot_type: RebootType = RebootType.SOFT) -> None:
    """Claim the instance for `op` and hand it to the instance's host."""
    db, row = await lookup.visible_instance(state, ctx, uuid)
    if row["locked"] and not ctx.is_admin:
        raise errors.Conflict(f"Instance {uuid} is locked.")
    await state.hooks.pre("pre_action", row, action=op.value)
    msg = PowerAction(instance_uuid=uuid, action=op, reboot_type=reboot_type)
    async with db.acquire() as conn, conn.transaction():
        allowed = sorted(allowed_vm_states(op, reboot_type))
        claimed = await conn.fetchrow(AQ.begin, uuid, msg.task_state, allowed)
        if claimed is None:
            raise _refusal(await conn.fetchrow(IQ.get, uuid), op, uuid)
        await instances.start_action(conn, uuid, ctx.request_id, op.value, ctx.project_id, ctx.user_id)
    try:
        await state.compute.power_action(claimed["host"], uuid, op, reboot_type, ctx)
    except Exception:
        # Nobody will end the task: give the instance back rather than leave it stuck.
        await db.execute(AQ.release, uuid, msg.task_state)
        await instances.finish_action(db, uuid, ctx.request_id, "Error")
        raise


async def rebuild(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, Any]) -> dict[str, Any] | None:
    """Claim the instance for a rebuild (task_state 'rebuilding', from active, stopped or
    error), recording the new image and whatever else `value` (the request's `rebuild`)
    changes in that same update, and hand it to the instance's host (with
    `preserve_ephemeral`: a host of a release before it answers 409, the claim undone); the
    server as shown afterwards (lookup.shown)."""
    db, row = await lookup.visible_instance(state, ctx, uuid)
    if row["locked"] and not ctx.is_admin:
        raise errors.Conflict(f"Instance {uuid} is locked.")
    if row["image_ref"]:
        image_ref = (await usable_image(state, ctx, value["imageRef"], row["flavor"])).id
    else:
        image_ref = await _volume_backed_rebuild(state, ctx, db, row, value["imageRef"])
    key_data = await keypair_store.key_for_boot(state.pool, ctx.user_id, value.get("key_name"))
    if "metadata" in value:
        quotas.check_metadata(await quotas.limits(state.pool, state.settings.quota, row["project_id"]),
                              value["metadata"])
    fields = ("name", "metadata", "user_data", "key_name", "description", "accessIPv4", "accessIPv6")
    async with db.acquire() as conn, conn.transaction():
        claimed = await conn.fetchrow(
            AQ.begin_rebuild, uuid, image_ref, value.get("name"), value.get("metadata"), value.get("user_data"),
            value.get("key_name"), key_data, value.get("description"), value.get("accessIPv4"),
            value.get("accessIPv6"), *(f in value for f in fields), server_store.auto_disk_config(value),
            value.get("preserve_ephemeral", False))
        if claimed is None:
            raise _refusal(await conn.fetchrow(IQ.get, uuid), "rebuild", uuid)
        await instances.start_action(conn, uuid, ctx.request_id, "rebuild", ctx.project_id, ctx.user_id)
    try:
        await state.compute.rebuild(claimed["host"], uuid, ctx, preserve_ephemeral=claimed["preserve_ephemeral"])
    except Exception:
        await db.execute(AQ.release, uuid, TaskState.REBUILDING)
        await instances.finish_action(db, uuid, ctx.request_id, "Error")
        raise
    return await lookup.shown(state, db, uuid)


async def _volume_backed_rebuild(state: ApiState, ctx: RequestContext, db: Any, row: Any, ref: str) -> str:
    """A volume-backed server is rebuilt around the same root volume, so only with the image
    that volume was made from (Nova's rule before 2.93, which would re-image the volume;
    we do not, at any microversion). Its image_ref stays "" (the instance keeps no image)."""
    image = await find_image(state, ctx, ref)
    root = next((b for b in await db.fetch(BQ.of_instance, row["uuid"])
                 if b["boot_index"] == 0 and b["destination_type"] == "volume" and b["volume_id"]), None)
    volume_image = ""
    if root is not None:
        volume = await state.volumes.get(str(root["volume_id"]), row["project_id"], is_admin=True)
        volume_image = volume.image_id or volume.image_metadata.get("image_id", "")
    if image.id != volume_image:
        raise errors.InvalidInput("Unable to rebuild with a different image for a volume-backed server.")
    return ""


async def set_lock(state: ApiState, ctx: RequestContext, uuid: str, *, locking: bool,
                   reason: str | None = None) -> None:
    """Lock (with an optional reason) or unlock the instance. A locked instance refuses
    members' actions, deletes and metadata changes until unlocked; an admin's lock of
    another project's server only an admin can lift."""
    db, row = await lookup.visible_instance(state, ctx, uuid)
    if not locking and row["locked_by"] == "admin" and not ctx.is_admin:
        raise errors.Forbidden(f"Instance {uuid} was locked by an admin; only an admin can unlock it.")
    by = ("admin" if ctx.is_admin and ctx.project_id != row["project_id"] else "owner") if locking else None
    await db.execute(AQ.set_lock, uuid, locking, by, reason if locking else None)


async def console_output(state: ApiState, ctx: RequestContext, uuid: str, length: int | str | None) -> str:
    """The tail of the guest's console, `length` lines of it (-1 or None: all), from the
    instance's host (a bus call)."""
    _, row = await lookup.visible_instance(state, ctx, uuid)
    # The schema let through an integer or a string of digits, at least -1 when an integer.
    lines = None if length is None else int(length)
    if lines is not None and lines < -1:
        raise errors.InvalidInput(f"Invalid input for field/attribute length. Value: {length}. "
                                  "It must be -1 (everything) or a number of lines.")
    # Nova's check_instance_host: an instance no host took yet has no console (409).
    if row["host"] is None or row["task_state"] == TaskState.DELETING:
        raise errors.Conflict(f"Instance {uuid} is not ready: it has no console yet.")
    return await state.compute.console_output(row["host"], uuid, None if lines == -1 else lines, ctx)


def _admin_only(ctx: RequestContext, action: str) -> None:
    if not ctx.is_admin:
        raise errors.Forbidden(f"Policy doesn't allow os_compute_api:{action} to be performed.")


async def reset_state(state: ApiState, ctx: RequestContext, uuid: str, vm_state: str) -> None:
    """An admin's os-resetState: the server's vm_state set to `vm_state` (active or error) and
    its task cleared, whatever it was doing; nothing is asked of its host."""
    _admin_only(ctx, "os-admin-actions:reset_state")
    db, _ = await lookup.visible_instance(state, ctx, uuid)
    if await db.fetchval(AQ.reset_state, uuid, VmState(vm_state)) is None:
        raise lookup.not_found(uuid)


async def inject_network_info(state: ApiState, ctx: RequestContext, uuid: str) -> None:
    """An admin's injectNetworkInfo: guests here read their network from DHCP and the metadata
    service, which always have it, so there is nothing to push (Nova's libvirt driver does
    nothing either)."""
    _admin_only(ctx, "os-admin-actions:inject_network_info")
    await lookup.visible_instance(state, ctx, uuid)


async def soft_deleted_only(state: ApiState, ctx: RequestContext, uuid: str, action: str) -> None:
    """forceDelete and restore act on a soft-deleted server. Deletes here are never soft
    (Nova's reclaim_instance_interval 0, its default), so there is none: 409, as Nova answers
    for a server in any other state."""
    _, row = await lookup.visible_instance(state, ctx, uuid)
    if row["locked"] and not ctx.is_admin:
        raise errors.Conflict(f"Instance {uuid} is locked.")
    raise errors.Conflict(f"Cannot '{action}' instance {uuid} while it is in vm_state {row['vm_state']}")


def _refusal(row, op: PowerOp | str, uuid: str) -> errors.NovaAsyncError:
    if row is None:
        return lookup.not_found(uuid)
    if row["task_state"] is not None:
        return errors.Conflict(f"Cannot '{op}' instance {uuid} while it is in task_state {row['task_state']}")
    if row["host"] is None:
        return errors.Conflict(f"Cannot '{op}' instance {uuid}: it is not on any host.")
    return errors.Conflict(f"Cannot '{op}' instance {uuid} while it is in vm_state {row['vm_state']}")
