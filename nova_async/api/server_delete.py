"""Deleting a server: mark it `deleting` atomically, then hand the teardown to whoever
holds it — its compute host, or the conductor while it is still being scheduled. A server
whose compute host is down is deleted here, as Nova does (its "local delete"). A server
that never got anywhere (ERROR without a host) is finished here, and so is a shelved
offloaded one (no host, no guest: its ports and volumes are all it holds). A shelved
server's image goes with it, as in Nova."""

from __future__ import annotations

import structlog

from nova_async.api import lookup, service_store
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.states import VmState
from nova_async.db import instances
from nova_async.db.queries import queries

IQ = queries("instances")
log = structlog.get_logger("api.server_delete")


async def delete(state: ApiState, ctx: RequestContext, uuid: str, *, again: bool = True) -> None:
    db, row = await lookup.visible_instance(state, ctx, uuid)
    if row["locked"] and not ctx.is_admin:
        raise errors.Conflict(f"Instance {uuid} is locked.")
    await state.hooks.pre("pre_delete", row)
    async with db.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(IQ.mark_deleting, uuid)
        if row is not None:
            await instances.start_action(conn, uuid, ctx.request_id, "delete", ctx.project_id, ctx.user_id)
    if row is None:
        if again and await state.cells.instance_db(uuid) is not db:
            # It moved to another cell (no host found) while we looked: delete it there.
            return await delete(state, ctx, uuid, again=False)
        raise lookup.not_found(uuid)
    if row["shelved_image_id"]:
        try:
            await state.images.delete(row["shelved_image_id"])
        except Exception as exc:
            log.warning("could not delete the shelved server's image", image_id=row["shelved_image_id"],
                        error=str(exc))
    if row["host"] and await service_store.compute_up(state.pool, state.settings.scheduler.service_down_time,
                                                      row["host"]):
        await state.compute.terminate(row["host"], uuid, ctx)
    elif row["host"]:
        await _delete_locally(state, db, row, ctx)
    elif row["vm_state"] == VmState.SHELVED_OFFLOADED:
        await state.networks.deallocate(uuid)
        await instances.release_volumes(db, state.volumes, uuid)
        await instances.finish_unhosted_delete(db, state.pool, state.placement, uuid)
        await instances.finish_action(db, uuid, ctx.request_id)
    elif row["vm_state"] != VmState.BUILDING:
        # Never scheduled (or scheduling failed): nothing is held anywhere but maybe a claim.
        await instances.finish_unhosted_delete(db, state.pool, state.placement, uuid)
        await instances.finish_action(db, uuid, ctx.request_id)
    # else: still being scheduled; the conductor sees `deleting` and finishes the delete.


async def _delete_locally(state: ApiState, db, row, ctx: RequestContext) -> None:
    """The server's compute host is down (or its service is gone): deleted here, at once, as
    Nova's local delete (db/instances.delete_locally)."""
    uuid = str(row["uuid"])
    log.warning("deleting a server whose compute host is down, here", instance_uuid=uuid, host=row["host"])
    await instances.delete_locally(db, state.pool, state.placement, state.networks, state.volumes, uuid)
    await instances.finish_action(db, uuid, ctx.request_id)
