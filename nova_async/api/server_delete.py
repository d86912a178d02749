"""Deleting a server: mark it `deleting` atomically, then hand the teardown to whoever
holds it — its compute host, or the conductor while it is still being scheduled. A server
that never got anywhere (ERROR without a host) is finished here."""

from __future__ import annotations

from nova_async.api import lookup
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.states import VmState
from nova_async.db import instances
from nova_async.db.queries import queries

IQ = queries("instances")


async def delete(state: ApiState, ctx: RequestContext, uuid: str, *, again: bool = True) -> None:
    db, row = await lookup.visible_instance(state, ctx, uuid)
    if row["locked"] and not ctx.is_admin:
        raise errors.Conflict(f"Instance {uuid} is locked.")
    async with db.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(IQ.mark_deleting, uuid)
        if row is None and again and await state.cells.instance_db(uuid) is not db:
            # It moved to another cell (no host found) while we looked: delete it there.
            return await delete(state, ctx, uuid, again=False)
        if row is None:
            raise lookup.not_found(uuid)
        await instances.start_action(conn, uuid, ctx.request_id, "delete", ctx.project_id, ctx.user_id)
    if row["host"]:
        await state.compute.terminate(row["host"], uuid, ctx)
    elif row["vm_state"] != VmState.BUILDING:
        # Never scheduled (or scheduling failed): nothing is held anywhere but maybe a claim.
        await instances.finish_unhosted_delete(db, state.pool, state.placement, uuid)
        await instances.finish_action(db, uuid, ctx.request_id)
    # else: still being scheduled; the conductor sees `deleting` and finishes the delete.
