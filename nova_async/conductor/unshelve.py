"""The conductor's part of an unshelve (Nova's conductor unshelve_instance).

A SHELVED server still has its host, its guest and its allocation: the unshelve goes to that
host, which starts it again. A SHELVED_OFFLOADED server has none of them: it is scheduled
like a boot — the scheduler picks a host for its flavor in its own cell, honouring the
availability zone and the host the request named (its request spec says them), and claims
the resources in placement — then the host is recorded and the unshelve goes there, which
spawns it. When no host takes it, it stays SHELVED_OFFLOADED with no task, and its action
says why, as in Nova. A member of a server group is placed under its group's policy, as Nova's
scheduler places it: the other members count, its own last host does not (it has none).

Every step can run again: a restart that interrupts it finds the server still unshelving
with no host, and `resume` sends it through again (any claim an interrupted attempt made is
dropped first, so nothing is held twice). One copy of the conductor at a time schedules it,
under the instance's lock (claims.py), reading the row again once it holds it: a copy of the
request that comes later (redelivered, or another copy's pick-up) finds the host given."""

from __future__ import annotations

import traceback

import msgspec
import structlog

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.states import TaskState
from nova_async.compute.client import ComputeClient
from nova_async.conductor.claims import Held, SchedulingClaims
from nova_async.conductor.messages import UnshelveRequest
from nova_async.db import instances
from nova_async.db.cells import Cell, Cells
from nova_async.db.queries import queries
from nova_async.placement.client import PlacementClient
from nova_async.scheduler.client import SchedulerClient
from nova_async.scheduler.messages import RequestSpec

log = structlog.get_logger("conductor.unshelve")
IQ = queries("instances")
GQ = queries("server_groups")
SQ = queries("shelve")


class Unshelver:
    def __init__(self, cells: Cells, placement: PlacementClient, scheduler: SchedulerClient,
                 compute: ComputeClient, claims: SchedulingClaims) -> None:
        self.cells = cells
        self.claims = claims
        self.placement = placement
        self.scheduler = scheduler
        self.compute = compute

    async def unshelve(self, msg: UnshelveRequest, ctx: RequestContext) -> None:
        uuid = msg.instance_uuid
        cell = await self.cells.of_instance(uuid)
        if cell is None:
            log.info("unshelve skipped: the instance is not mapped to a cell", instance_uuid=uuid)
            return

        async def unscheduled() -> bool:
            row = await cell.pool.fetchrow(IQ.get, uuid)
            return row is not None and row["task_state"] == TaskState.UNSHELVING and row["host"] is None

        async with self.claims.waiting_for(uuid, unscheduled) as held:
            row = await cell.pool.fetchrow(IQ.get, uuid)
            if row is None or row["task_state"] != TaskState.UNSHELVING:
                log.info("unshelve skipped", instance_uuid=uuid, task_state=row and row["task_state"])
                return
            if row["host"] is not None:
                # SHELVED (still on its host), or offloaded and placed already: that host's work.
                await self.compute.unshelve(row["host"], uuid, row["node"] or "", ctx)
                return
            if held:
                await self._schedule(cell, row, held, ctx)

    async def _schedule(self, cell: Cell, row, held: Held, ctx: RequestContext) -> None:
        db, uuid = cell.pool, str(row["uuid"])
        spec = msgspec.structs.replace(RequestSpec.from_stored(row["request_spec"], row["flavor"]),
                                       cell=cell.uuid)
        try:
            async with instances.event(db, uuid, ctx.request_id, "conductor_unshelve_instance"):
                # An offloaded server holds nothing; a claim is an interrupted attempt's, and
                # the host its group recorded is the one it left (the scheduler records the new one).
                await self.placement.delete_allocations(uuid)
                await self.cells.api.execute(GQ.set_member_host, uuid, None)
                [selection] = await self.scheduler.select_destinations([uuid], spec, ctx,
                                                                       holders=held.holders([uuid]))
        except Exception as exc:
            await self._refuse(db, uuid, ctx.request_id, exc)
            return
        chosen = selection.chosen
        if not held.still_ours():
            # another copy may have it now; left unshelving with no host (its claim standing,
            # which the next attempt drops first) for the pick-up after the database's return
            log.warning("lost the scheduling lock of the unshelve (database connection); leaving it "
                        "to be scheduled again", instance_uuid=uuid)
            return
        if await db.fetchrow(SQ.set_unshelve_host, uuid, chosen.host, chosen.node) is None:
            log.info("unshelve taken over (deleted meanwhile); giving the claim back", instance_uuid=uuid)
            await self.placement.delete_allocations(uuid)
            return
        log.info("unshelve scheduled", instance_uuid=uuid, host=chosen.host)
        await self.compute.unshelve(chosen.host, uuid, chosen.node, ctx)

    async def _refuse(self, db, uuid: str, request_id: str, exc: Exception) -> None:
        if isinstance(exc, errors.SchedulingAbandoned):
            # this process's lock went (database connection): the copy that has it now goes on
            log.warning("lost the scheduling lock of the unshelve; leaving it to the copy that holds it",
                        instance_uuid=uuid)
            return
        reason = exc.message if isinstance(exc, errors.NovaAsyncError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, errors.NovaAsyncError):
            log.error("unshelve failed unexpectedly", instance_uuid=uuid, exc_info=exc)
        log.warning("unshelve found no host", instance_uuid=uuid, reason=reason)
        await self.placement.delete_allocations(uuid)
        async with db.acquire() as conn, conn.transaction():
            if await conn.fetchrow(SQ.release, uuid, [TaskState.UNSHELVING]) is not None:
                await conn.execute(IQ.add_fault, uuid, exc.status if isinstance(exc, errors.NovaAsyncError) else 500,
                                   f"Unshelve failed: {reason}"[:1000],
                                   "".join(traceback.format_exception(exc))[:10000], None)
        await instances.finish_action(db, uuid, request_id, "Error")

    async def resume(self, cast) -> None:
        """Unshelves of offloaded servers a restart caught before they had a host: again."""
        for r in await self.cells.gather(SQ.unscheduled_unshelves, cell0=False):
            ctx = RequestContext(user_id=r["user_id"], project_id=r["project_id"], request_id=r["request_id"] or "")
            log.info("resuming an interrupted unshelve", instance_uuid=str(r["uuid"]))
            await cast(UnshelveRequest(instance_uuid=str(r["uuid"])), ctx)

