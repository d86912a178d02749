"""The conductor's part of a resize: a host for the new flavor, with the old one kept.

As Nova does it: first the instance's allocation (the old flavor) moves to the migration's
uuid in placement, in one transaction, so the old resources stay held for a revert; then
the scheduler picks a host for the new flavor and claims it for the instance. The
migration records the destination and the resize goes to the instance's current host,
which does the rest (compute/resize.py). Same host or not is the scheduler's choice,
unless `compute.allow_resize_to_same_host` is off or it is a cold migration (the same
flavor, `migrate`): then the current host is excluded the way a `different_host` hint
would exclude it, and a cold migration its admin aimed at a host goes there or nowhere.

When no host takes the new flavor the allocation moves back to the instance, the server
stays as it was (ACTIVE or SHUTOFF, no task) and the action records why, as in Nova.
A member of a server group is placed under its group's policy again (scheduler/server_groups.py).

Every step can run again: a restart that interrupts it finds the instance still in
`resize_prep` with its migration `pre-migrating`, and `resume` sends it through again. One
copy of the conductor at a time schedules it, under the instance's lock (claims.py); a
migration that has its destination already is not scheduled again. If its source host has
not begun it either (the task still `resize_prep`), the copy that chose the destination may
have died before telling that host: the resize step is sent to the source host again, which
runs it once (its first step moves the task on, and a later copy finds nothing to do)."""

from __future__ import annotations

import traceback

import msgspec
import structlog

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.states import TaskState
from nova_async.compute.client import ComputeClient
from nova_async.compute.messages import ResizeStepName
from nova_async.conductor.claims import Held, SchedulingClaims
from nova_async.conductor.messages import ResizeInstance
from nova_async.db import instances
from nova_async.db.cells import Cell, Cells
from nova_async.db.queries import queries
from nova_async.placement.client import PlacementClient
from nova_async.scheduler.client import SchedulerClient
from nova_async.scheduler.messages import RequestSpec

log = structlog.get_logger("conductor.resize")
IQ = queries("instances")
MQ = queries("migrations")


def resize_spec(old_spec: dict, flavor: dict, instance_uuid: str, *, same_host: bool,
                cell: str | None = None, requested_host: str | None = None) -> RequestSpec:
    spec = RequestSpec.from_stored(old_spec, flavor)
    hints = dict(spec.scheduler_hints)
    if not same_host:
        hints["different_host"] = [*hints.get("different_host", []), instance_uuid]
    # The group stays: its policy is checked again, as Nova's scheduler does on a move.
    return msgspec.structs.replace(spec, scheduler_hints=hints, cell=cell,
                                   requested_host=requested_host)


async def hold_old_allocation(placement: PlacementClient, instance_uuid: str, migration_uuid: str,
                              project_id: str, user_id: str) -> None:
    """Move the instance's allocation to the migration (done already: nothing to do)."""
    if await placement.allocations(migration_uuid):
        return
    if not await placement.move_allocations(instance_uuid, migration_uuid, project_id, user_id,
                                            source_type="INSTANCE", target_type="MIGRATION"):
        raise errors.Conflict(f"Instance {instance_uuid} holds no resources in placement to resize from.")


async def give_back_allocation(placement: PlacementClient, instance_uuid: str, migration_uuid: str,
                               project_id: str, user_id: str) -> None:
    """The migration's allocation (the old flavor) back to the instance, replacing whatever
    the instance holds (its new flavor's claim); nothing to do when it was given back."""
    await placement.move_allocations(migration_uuid, instance_uuid, project_id, user_id,
                                     source_type="MIGRATION", target_type="INSTANCE")


async def _read(db, uuid: str, mig_uuid: str):
    return await db.fetchrow(IQ.get, uuid), await db.fetchrow(MQ.get_migration, mig_uuid)


def _unscheduled(row, migration) -> bool:
    """Whether the resize still waits for a destination."""
    return _before_source(row, migration) and migration["dest_compute"] is None


def _unsent(row, migration) -> bool:
    """Whether the resize has its destination and its source host has not begun: the copy that
    chose it died before it told the source host, or the source host has not had its turn."""
    return _before_source(row, migration) and migration["dest_compute"] is not None


def _before_source(row, migration) -> bool:
    # The source host's first step moves the task on (compute/resize.py).
    return (row is not None and migration is not None and row["task_state"] == TaskState.RESIZE_PREP
            and migration["status"] == "pre-migrating")


class Resizer:
    def __init__(self, cells: Cells, placement: PlacementClient, scheduler: SchedulerClient,
                 compute: ComputeClient, claims: SchedulingClaims, same_host: bool) -> None:
        self.cells = cells
        self.claims = claims
        self.placement = placement
        self.scheduler = scheduler
        self.compute = compute
        self.same_host = same_host

    async def resize(self, msg: ResizeInstance, ctx: RequestContext) -> None:
        uuid, mig_uuid = msg.instance_uuid, msg.migration_uuid
        # A resize stays in the instance's cell (Nova's default too: no cross-cell resize).
        cell = await self.cells.of_instance(uuid)
        if cell is None:
            log.info("resize skipped: the instance is not mapped to a cell", instance_uuid=uuid)
            return
        db = cell.pool

        async def pending() -> bool:
            return _before_source(*await _read(db, uuid, mig_uuid))

        async with self.claims.waiting_for(uuid, pending) as held:
            row, migration = await _read(db, uuid, mig_uuid)
            if held and _unsent(row, migration):
                # The lock was free, so whoever chose the destination is gone (or handed it on
                # and the source host has not started yet: its steps run once per state).
                log.info("resize placed but not begun on its source host; handing it on again",
                         instance_uuid=uuid, source=row["host"], dest=migration["dest_compute"])
                await self.compute.resize_step(row["host"], uuid, mig_uuid, ResizeStepName.RESIZE, ctx)
                return
            if not held or not _unscheduled(row, migration):
                log.info("resize skipped", instance_uuid=uuid, task_state=row and row["task_state"],
                         migration_status=migration and migration["status"],
                         dest=migration and migration["dest_compute"])
                return
            await self._resize(cell, row, migration, held, ctx)

    async def _resize(self, cell: Cell, row, migration, held: Held, ctx: RequestContext) -> None:
        db, uuid, mig_uuid = cell.pool, str(row["uuid"]), str(migration["uuid"])
        project_id, user_id = row["project_id"], row["user_id"]
        try:
            async with instances.event(db, uuid, ctx.request_id, "conductor_migrate_server"):
                await hold_old_allocation(self.placement, uuid, mig_uuid, project_id, user_id)
                # A cold migration always leaves its host; a resize may stay (allow_resize_to_same_host).
                cold = migration["migration_type"] == "migration"
                spec = resize_spec(row["request_spec"], migration["new_flavor"], uuid,
                                   same_host=self.same_host and not cold, cell=cell.uuid,
                                   requested_host=migration["requested_dest"])
                try:
                    [selection] = await self.scheduler.select_destinations([uuid], spec, ctx,
                                                                           holders=held.holders([uuid]))
                except BaseException:
                    await give_back_allocation(self.placement, uuid, mig_uuid, project_id, user_id)
                    raise
        except Exception as exc:
            await self._refuse(db, uuid, mig_uuid, ctx.request_id, exc)
            return
        chosen = selection.chosen
        if not held.still_ours():
            # another copy may have it now; left in resize_prep (its claims standing, which
            # the next attempt replaces) for the pick-up after the database's return
            log.warning("lost the scheduling lock of the resize (database connection); leaving it "
                        "to be scheduled again", instance_uuid=uuid)
            return
        await db.execute(MQ.set_migration_dest, mig_uuid, chosen.host, chosen.node)
        log.info("resize scheduled", instance_uuid=uuid, source=row["host"], dest=chosen.host)
        await self.compute.resize_step(row["host"], uuid, mig_uuid, ResizeStepName.RESIZE, ctx)

    async def _refuse(self, db, uuid: str, mig_uuid: str, request_id: str, exc: Exception) -> None:
        if isinstance(exc, errors.SchedulingAbandoned):
            # this process's lock went (database connection): the copy that has it now goes on
            log.warning("lost the scheduling lock of the resize; leaving it to the copy that holds it",
                        instance_uuid=uuid)
            return
        reason = exc.message if isinstance(exc, errors.NovaAsyncError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, errors.NovaAsyncError):
            log.error("resize failed unexpectedly", instance_uuid=uuid, exc_info=exc)
        log.warning("resize refused", instance_uuid=uuid, reason=reason)
        code = exc.status if isinstance(exc, errors.NovaAsyncError) else 500
        await db.execute(IQ.add_fault, uuid, code, f"Resize failed: {reason}"[:1000],
                         "".join(traceback.format_exception(exc))[:10000], None)
        await db.execute(MQ.set_migration_status, mig_uuid, "error", ["pre-migrating"])
        await db.execute(MQ.release_resize, uuid, [TaskState.RESIZE_PREP])
        await instances.finish_action(db, uuid, request_id, "Error")

    async def resume(self, cast) -> None:
        """Resizes a restart caught before a compute host had them: send them through again."""
        for r in await self.cells.gather(MQ.unscheduled_resizes, cell0=False):
            ctx = RequestContext(user_id=r["user_id"], project_id=r["project_id"], request_id=r["request_id"] or "")
            log.info("resuming an interrupted resize", instance_uuid=str(r["uuid"]))
            await cast(ResizeInstance(instance_uuid=str(r["uuid"]), migration_uuid=str(r["migration_uuid"])), ctx)
