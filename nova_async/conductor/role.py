"""The super conductor: turns accepted boot requests into claimed hosts and builds.

For each `schedule_and_build_instances` it asks the scheduler for destinations (claims
included), records where each instance lives, and casts the build to that compute host.
A build that fails on its host comes back as `reschedule_instance`: its claim moves to the
first alternate the scheduler offered that takes it (one atomic replace in placement), and
the build is cast there; with none left the instance is ERROR, saying where it was tried.
A delete that arrives while an instance is still being scheduled is finished here.
Each instance is scheduled by one copy of this role at a time, however many run and however
often its request arrives: under its lock, its row read again once held (claims.py).
A resize (`resize_instance`) is scheduled here too, see resize.py, and an unshelve, see
unshelve.py. At start it resumes boot requests, resizes and unshelves a previous run accepted
but never scheduled,
and again each time the database (or the message broker) comes back after an outage (of
several copies, the one that holds the lease `conductor:resume` does, see common/lease.py):
scheduling that a database outage cut off is left as it was (building, no host) for that
pick-up, not failed."""

from __future__ import annotations

import asyncio
import functools

import structlog

from nova_async.common import errors, lease, metrics
from nova_async.common.context import RequestContext
from nova_async.common.states import TaskState, VmState
from nova_async.compute.client import ComputeClient
from nova_async.conductor.claims import Held, SchedulingClaims
from nova_async.conductor.client import TOPIC
from nova_async.conductor.messages import (RescheduleInstance, ResizeInstance, ScheduleAndBuildInstances,
                                          UnshelveRequest)
from nova_async.conductor import stranded
from nova_async.conductor.resize import Resizer
from nova_async.conductor.unshelve import Unshelver
from nova_async.db import instances, statistics
from nova_async.db.coalesce import Coalesced
from nova_async.db.cells import Cell
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.network.client import NetworkClient
from nova_async.placement.client import PlacementClient, settled_claim
from nova_async.role import Role
from nova_async.scheduler.client import SchedulerClient
from nova_async.scheduler.messages import SELECT_EVENT, RequestSpec
from nova_async.volume.client import VolumeClient

log = structlog.get_logger("conductor")
Q = queries("instances")
CQ = queries("conductor")
GQ = queries("server_groups")
BQ = queries("block_devices")
EVENT = "conductor_schedule_and_build_instances"
# The write that gives an instance its host, shared by the boots that reach it at once.
SET_HOST = Coalesced(CQ.set_hosts)
# The rows of the boots being scheduled, read together (once each is held).
ROWS_TO_SCHEDULE = Coalesced(CQ.rows_to_schedule, shared=1)
TIDY_INTERVAL = 60.0  # seconds; tidy() leaves unmapped rows alone for their first minute
# Boot requests handled at once. A request spends nearly all its time here waiting for the
# scheduler, whose batches take whatever requests are waiting: at 64 (a thread pool's size,
# as oslo.messaging's), 64 requests in the scheduler for ~0.3 s each capped boots at ~210/s,
# and requests beyond them queued here untouched. The database pool bounds the work itself.
CONCURRENCY = 256


class ConductorRole(Role):
    name = "conductor"
    stop_tier = 0

    def __init__(self, deps) -> None:
        super().__init__(deps)
        self.scheduler = SchedulerClient(self.bus)
        self.compute = ComputeClient(self.bus)
        self.placement = PlacementClient(self.bus)
        self.volumes = VolumeClient(self.bus)
        self.network = NetworkClient(self.bus)
        # Which instances this process is scheduling: over RabbitMQ a request can arrive
        # twice, and at two copies of this role (redelivered after a crash, recast by a pick-up);
        # there, copies in other processes take over what a dead one held (claims.py).
        self.claims = SchedulingClaims(deps.locks, fenced=self.bus.delivers_calls_twice)
        self.resizer = Resizer(self.cells, self.placement, self.scheduler, self.compute, self.claims,
                               self.settings.compute.allow_resize_to_same_host)
        self.unshelver = Unshelver(self.cells, self.placement, self.scheduler, self.compute, self.claims)
        self.stranded = stranded.Stranded(self.cells, self.bus, self.placement, self.network, self.volumes,
                                          self.settings.scheduler.service_down_time)
        # each database's inserted rows at the statistics' last look (db/statistics.py)
        self._statistics_seen: dict[Pool, int] = {}
        self.handlers = {ScheduleAndBuildInstances: self.schedule_and_build_instances,
                         RescheduleInstance: self.reschedule_instance,
                         ResizeInstance: self.resizer.resize,
                         UnshelveRequest: self.unshelver.unshelve}

    async def run(self) -> None:
        self.ready.set()
        await self.cells.tidy()
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._tidy_cells(), name="conductor:tidy-cells")
            # Global jobs, in one conductor at a time (common/lease.py).
            tg.create_task(lease.periodic(self.deps.locks, "conductor:tidy-cells", self.cells.tidy,
                                          seconds=TIDY_INTERVAL, stopping=self.stopping, at_once=False),
                           name="conductor:tidy-cells-lease")
            down_time = self.settings.scheduler.service_down_time
            tg.create_task(lease.periodic(self.deps.locks, "conductor:stranded", self.stranded.pick_up,
                                          seconds=stranded.interval(down_time), stopping=self.stopping,
                                          at_once=False),
                           name="conductor:stranded")
            tg.create_task(lease.Lease(self.deps.locks, "conductor:resume").run(self._lead_resume, self.stopping),
                           name="conductor:resume")
            tg.create_task(lease.periodic(self.deps.locks, "conductor:statistics", self._refresh_statistics,
                                          seconds=statistics.INTERVAL, stopping=self.stopping, at_once=False),
                           name="conductor:statistics")
            # returns once the role is stopping: so does tidy
            await self.serve(TOPIC, self.dispatch, concurrency=CONCURRENCY)

    async def _refresh_statistics(self) -> None:
        await statistics.refresh([self.cells.api, *(cell.pool for cell in self.cells.all())],
                                 self._statistics_seen)

    async def _lead_resume(self) -> None:
        """What the conductor that holds the resume lease does: resume once when it takes it
        (at start, or when the copy that held it died: what that one had taken RabbitMQ
        redelivers, and a second copy changes nothing), then after each outage. The other
        copies leave it to that one: each would otherwise cast every unscheduled request again."""
        try:
            await self._resume()
        except Exception:
            log.exception("resuming interrupted work failed; trying again at the next return")
        await self.after_each_return(self._resume)

    async def _resume(self) -> None:
        await self._resume_unscheduled()
        await self._finish_unhosted_deletes()
        await self.resizer.resume(lambda msg, ctx: self.bus.cast(TOPIC, msg, context=ctx))
        await self.unshelver.resume(lambda msg, ctx: self.bus.cast(TOPIC, msg, context=ctx))

    async def _tidy_cells(self) -> None:
        """Again and again, not only at start: a boot whose API transaction failed to commit
        after its rows reached the cell (a database blip, not a crash) leaves rows nobody
        maps, listed and counted until they are removed. That is done by the conductor that
        holds the lease (run()); every copy opens the cells another process created since."""
        while not await self.sleep_unless_stopping(TIDY_INTERVAL):
            try:
                await self.cells.refresh()
            except Exception:
                log.exception("refreshing the cells failed; trying again next time")

    async def schedule_and_build_instances(self, msg: ScheduleAndBuildInstances, ctx: RequestContext) -> None:
        async with self.claims.holding(msg.instance_uuids) as held:
            if len(held.uuids) < len(msg.instance_uuids):
                # that copy read their rows once it held them: it finishes, or dies and the
                # request it was handling comes to a copy that lives (claims.py)
                log.info("another copy is scheduling instances of the request; left to it",
                         instances=[u for u in msg.instance_uuids if u not in held])
            # A boot request's instances are all in one cell: the one the API wrote them into,
            # which it names. Nothing moves an instance before it has a host, so whatever is not
            # found there (a copy of the request redelivered after a move) is looked up.
            remaining = [u for u in msg.instance_uuids if u in held]
            if msg.cell_uuid is not None and remaining:
                found = await self._schedule_in(await self.cells.get(msg.cell_uuid), remaining, held, ctx)
                remaining = [u for u in remaining if u not in found]
            if not remaining:
                return
            for cell, uuids in (await self.cells.group_by_cell(remaining)).items():
                await self._schedule_in(cell, sorted(uuids, key=msg.instance_uuids.index), held, ctx)

    async def _schedule_in(self, cell: Cell, instance_uuids: list[str], held: Held,
                           ctx: RequestContext) -> set[str]:
        """Schedule and build those of the instances (held by this process) that are in `cell`
        and still need it; the uuids of those found there. Read here, under the locks: the
        rows say what is left to do, whatever the message says."""
        read = await ROWS_TO_SCHEDULE.each(cell.pool, [(u, EVENT) for u in instance_uuids])
        found_rows = sorted((r for r in read if r is not None), key=lambda r: r["launch_index"])
        rows = [r for r in found_rows if r["vm_state"] == VmState.BUILDING and r["host"] is None
                and r["task_state"] != TaskState.DELETING]
        placed = [str(r["uuid"]) for r in found_rows
                  if r["task_state"] != TaskState.DELETING and r["host"] is not None]
        if placed:
            log.info("instances of the request are scheduled already; not again", instances=placed)
            await self._build_again_where_never_begun(cell, placed, ctx)
        for row in found_rows:  # a hosted one is its host's to delete
            if row["task_state"] == TaskState.DELETING and row["host"] is None:
                await self._finish_delete(cell.pool, str(row["uuid"]))
        if rows:
            await self._schedule_and_build(cell, rows, held, ctx)
        return {str(r["uuid"]) for r in found_rows}

    async def _schedule_and_build(self, cell: Cell, rows: list, held: Held, ctx: RequestContext) -> None:
        uuids = [str(r["uuid"]) for r in rows]
        db = cell.pool
        spec = RequestSpec.from_stored(rows[0]["request_spec"], rows[0]["flavor"])
        request_id = ctx.request_id
        if any(r["open_step"] for r in rows):
            # Held, so a step still open is a dead copy's: scheduled again here, and shown once.
            log.info("taking over scheduling a stopped conductor left open", instances=uuids)
            await db.execute(CQ.take_over_steps, uuids, EVENT, SELECT_EVENT)
        try:
            async with instances.events(db, uuids, request_id, EVENT):
                selections = await self.scheduler.select_destinations(
                    uuids, spec, ctx, cell_uuid=cell.uuid, holders=held.holders(uuids),
                    before_asking_again=functools.partial(db.execute, CQ.forget_decisions, uuids, SELECT_EVENT,
                                                          request_id))
        except errors.DatabaseUnavailable:
            # Not the request's fault: it stays unscheduled, and is scheduled again once the
            # database is back (perhaps this process never saw it go: the error may come
            # from the scheduler's, so the probe is told to look).
            self.pool.health.suspect()
            raise
        except errors.SchedulingAbandoned:
            for uuid in uuids:  # this process's lock went: the copy that has it now decides
                self._lost_lock(uuid)
            return None
        except Exception as exc:
            if isinstance(exc, errors.NoValidHost):
                message = exc.message
            else:
                log.exception("scheduling failed unexpectedly", instances=uuids)
                detail = exc.message if isinstance(exc, errors.NovaAsyncError) else repr(exc)
                message = f"Scheduling failed: {detail}"
            log.warning("scheduling failed", instances=uuids, reason=message)
            for uuid in uuids:
                if not held.still_ours():
                    self._lost_lock(uuid)
                    continue
                await self._never_scheduled(cell, uuid, message, request_id)
            return None
        for selection in selections:
            uuid, chosen = selection.instance_uuid, selection.chosen
            if not held.still_ours():
                self._lost_lock(selection.instance_uuid)
                continue
            target = await self.cells.of_host(chosen.host) or cell
            if target is not cell:  # the host is in another cell: the instance moves there first
                await self.cells.move(uuid, cell, target)
            placed = await SET_HOST(target.pool, uuid, chosen.host, chosen.node)
            if placed is None:  # deleted while we scheduled: give the claim back
                await self._finish_delete(target.pool, uuid)
                continue
            # debug: the scheduler's "scheduled" line already names every host of the request
            log.debug("instance scheduled", instance_uuid=uuid, host=chosen.host)
            await self.compute.build_and_run(chosen.host, chosen.node, uuid, selection.alternates, ctx)
        return None

    async def _build_again_where_never_begun(self, cell: Cell, uuids: list[str], ctx: RequestContext) -> None:
        """Cast the build again of those of `uuids` whose host never began it: the conductor
        that placed them died before its cast left (this request is its, redelivered). A
        cast that did leave and is only queued on the host is harmless twice: the host
        builds an instance once, and skips a build of one no longer building."""
        for row in await cell.pool.fetch(CQ.builds_never_begun, uuids):
            log.warning("instance placed but its build never begun; casting it again",
                        instance_uuid=str(row["uuid"]), host=row["host"])
            await self.compute.build_and_run(row["host"], row["node"], str(row["uuid"]), [], ctx)

    @staticmethod
    def _lost_lock(uuid: str) -> None:
        # Another copy may be scheduling it now; it stays unscheduled (its claim standing, which
        # the next scheduling replaces) for the pick-up after the database's return.
        log.warning("lost the scheduling lock of the instance (database connection); leaving it "
                    "to be scheduled again", instance_uuid=uuid)

    async def _never_scheduled(self, cell: Cell, uuid: str, message: str, request_id: str) -> None:
        """ERROR with the scheduler's explanation, then into cell0, which keeps the instances
        that never got a host. In that order, under the row's lock: a crash between the two
        leaves an ERROR server in its first cell (still listed, shown and deletable), never
        one building forever in cell0, where nothing resumes it; and a delete that arrived
        meanwhile is finished instead."""
        async with cell.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(Q.get_for_update, uuid)
            if row is None:
                return
            deleting = row["task_state"] == TaskState.DELETING
            if not deleting:
                await instances.set_error(conn, uuid, message, code=500)
                await instances.finish_action(conn, uuid, request_id)
        if deleting:
            await self._finish_delete(cell.pool, uuid)
            return
        metrics.build_finished("error")
        await self._give_back_volumes(cell.pool, uuid)
        await self.cells.move(uuid, cell, self.cells.cell0)
        # A delete that came after the ERROR and before the move marked the row the move
        # carried, and then finished nothing where the row no longer was: finish it here.
        cell0 = self.cells.cell0.pool
        moved = await cell0.fetchrow(Q.get, uuid)
        if moved is not None and moved["task_state"] == TaskState.DELETING:
            await self._finish_delete(cell0, uuid)

    async def _give_back_volumes(self, db, uuid: str) -> None:
        """The volumes the API reserved for an instance that got no host (or was deleted
        before it got one) are available again, and its mappings go: it never had the volumes,
        and a delete of a server without a host (API or cell0) lets go of nothing. A volume a
        host made for it before handing the build back (a reschedule that then found no host)
        goes when it was to go with the instance, as at a delete."""
        for bdm in await db.fetch(BQ.of_instance, uuid):
            if bdm["attachment_id"] is not None:
                await self.volumes.delete_attachment(str(bdm["attachment_id"]))
            # one made by a build that was then rescheduled, to go with the instance
            if bdm["volume_id"] is not None and bdm["source_type"] != "volume" and bdm["delete_on_termination"]:
                await self.volumes.delete(str(bdm["volume_id"]))
            await db.execute(BQ.delete, bdm["id"])

    async def reschedule_instance(self, msg: RescheduleInstance, ctx: RequestContext) -> None:
        uuid = msg.instance_uuid
        # One instance per message (its own task): every line below is about it.
        structlog.contextvars.bind_contextvars(instance_uuid=uuid)
        cell = await self.cells.of_instance(uuid)
        if cell is None:
            return None

        async def unscheduled() -> bool:
            row = await cell.pool.fetchrow(Q.get, uuid)
            return row is not None and row["vm_state"] == VmState.BUILDING and row["host"] is None

        # Waited for, not left to a copy holding the instance: that one may be a stale copy of
        # the boot request that read the row before the failed host handed it back.
        async with self.claims.waiting_for(uuid, unscheduled) as held:
            row = await cell.pool.fetchrow(Q.get, uuid)
            if row is None:
                return None
            if row["task_state"] == TaskState.DELETING and row["host"] is None:
                await self._finish_delete(cell.pool, uuid)
                return None
            if not held or row["task_state"] == TaskState.DELETING or row["vm_state"] != VmState.BUILDING or row["host"] is not None:
                log.info("reschedule skipped", instance_uuid=uuid, vm_state=row["vm_state"], host=row["host"])
                return None
            await self._reschedule(cell, msg, row, held, ctx)
        return None

    async def _reschedule(self, cell: Cell, msg: RescheduleInstance, row, held: Held, ctx: RequestContext) -> None:
        uuid, db = msg.instance_uuid, cell.pool
        spec = RequestSpec.from_stored(row["request_spec"], row["flavor"])
        tried = [msg.failed_host]
        chosen = None
        async with instances.event(db, uuid, ctx.request_id, "conductor_reschedule_instance"):
            for i, alternate in enumerate(msg.alternates):
                # a lost answer is settled by sending the same claim again
                claimed = await settled_claim(
                    lambda timeout, alternate=alternate: self.placement.claim(
                        uuid, alternate.provider_uuid, spec.resources(), spec.project_id, spec.user_id,
                        timeout=timeout),
                    instance_uuid=uuid, host=alternate.host)
                if claimed.ok:
                    chosen = i
                    break
                tried.append(f"{alternate.host} (refused: {claimed.reason})")
        # The event is finished in the cell that recorded it before the instance may move.
        if chosen is not None:
            alternate = msg.alternates[chosen]
            if not held.still_ours():
                self._lost_lock(uuid)
                return None
            target = await self.cells.of_host(alternate.host) or cell
            if target is not cell:  # an alternate in another cell: the instance moves there
                await self.cells.move(uuid, cell, target)
            if await target.pool.fetchrow(Q.set_host, uuid, alternate.host, alternate.node) is None:
                await self._finish_delete(target.pool, uuid)
                return None
            await self.pool.execute(GQ.set_member_host, uuid, alternate.host)
            log.info("instance rescheduled", instance_uuid=uuid, host=alternate.host,
                     failed_host=msg.failed_host)
            await self.compute.build_and_run(alternate.host, alternate.node, uuid,
                                             msg.alternates[chosen + 1:], ctx)
            return None
        await self.placement.delete_allocations(uuid)
        message = (f"Build of instance {uuid} failed on {msg.failed_host}: {msg.reason}. "
                   f"No alternate host could take it (tried: {', '.join(tried)}).")
        log.warning("reschedule found no host", instance_uuid=uuid, reason=message)
        await self._give_back_volumes(db, uuid)
        await instances.set_error(db, uuid, message, code=500)
        metrics.build_finished("error")
        await instances.finish_action(db, uuid, ctx.request_id)
        return None

    async def _finish_delete(self, db, uuid: str) -> None:
        # A shelved offloaded server has no host but keeps its ports (nothing else without a
        # host has any): a delete the API did not finish lets go of them here.
        row = await db.fetchrow(Q.get, uuid)
        if row is not None and row["vm_state"] == VmState.SHELVED_OFFLOADED:
            await self.network.deallocate(uuid)
        await self._give_back_volumes(db, uuid)
        await instances.finish_unhosted_delete(db, self.pool, self.placement, uuid)
        log.info("instance deleted before it was built", instance_uuid=uuid)

    async def _finish_unhosted_deletes(self) -> None:
        """Deletes of servers without a host that a previous run (of the API or of this role)
        marked and did not finish: nothing but a claim and reserved volumes can be held."""
        for cell in self.cells.all():
            for row in await cell.pool.fetch(CQ.unhosted_deletes):
                await self._finish_delete(cell.pool, str(row["uuid"]))

    async def _resume_unscheduled(self) -> None:
        """Boot requests accepted by a previous run but never scheduled: schedule them now."""
        for batch in await self.cells.gather(CQ.unscheduled_batches, cell0=False):
            ctx = RequestContext(user_id=batch["user_id"], project_id=batch["project_id"],
                                 request_id=batch["request_id"] or "")
            log.info("resuming unscheduled boot request", instances=len(batch["uuids"]))
            await self.bus.cast(TOPIC, ScheduleAndBuildInstances(
                instance_uuids=[str(u) for u in batch["uuids"]]), context=ctx)
