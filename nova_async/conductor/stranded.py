"""What a dead node leaves behind, picked up by a survivor: one conductor at a time runs
this, under the lease `conductor:stranded` (common/lease.py), every STRANDED_INTERVAL.

- A build on a compute host that has been down longer than `service_down_time` (no
  heartbeat, or forced down) ends in ERROR with a fault naming the host, and its placement
  claim and ports are let go of. Nova leaves such a build in BUILD until its compute starts
  again, whose `_init_instance` then sets it to ERROR; here the user learns it without
  waiting for the host. When the host does come back, its start-up recovery builds only
  what is still `building`: the failed instance keeps its guest (if one was made) until it
  is deleted, as any ERROR server does, and a delete then removes everything.
- A delete handed to a compute host that went down before it finished is finished here, as
  the API finishes one asked while the host is down (Nova's local delete: db/instances.py),
  and its action ended.
- A power action (reboot, stop, start, pause, …) such a host was doing ends undone, the
  server as last recorded, and a rebuild ends in ERROR, as Nova's compute does to both when
  it starts again; a resize, snapshot, shelve or rescue waits for the host's return.
- A boot request left with no host and unchanged for twice `service_down_time` is handed to
  the conductors again: the process that accepted it died before it handed it on (RabbitMQ
  redelivers what a dead conductor had taken; it cannot redeliver what was never sent).
  Scheduling is claimed once per instance, so a copy that was in fact still on its way
  changes nothing.
- A delete of a server on a host that is up, left `deleting` and unchanged for twice
  `service_down_time` with no teardown begun, is cast to the host again: the API process
  that marked it died before its cast left (a user's second delete would do the same). A
  first cast that was only waiting in the host's queue makes the teardown run twice, which
  changes nothing the second time. A rebuild in the same case is cast again too (the row
  already names its new image); the host rebuilds only a server still `rebuilding`, and one
  instance's requests run there one after another, so a late first cast finds it done.
- A power action on such a host, never begun there and unchanged for as long, ends undone
  (the server as last recorded, the action in Error saying why), as one a dead host was
  doing does: it was never handed on. The user asks again.
- A claim that outlived its server is let go of: a server deleted (or never given a host)
  over `service_down_time` ago holds nothing, yet a claim can land just after its delete
  let go of what it held, made for a conductor that then died before giving it back.
  Servers deleted in the last OUTLIVED_WINDOW are looked at, and cell0's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from nova_async.bus import Bus
from nova_async.common import metrics
from nova_async.common.context import RequestContext
from nova_async.common.states import TaskState
from nova_async.compute.client import ComputeClient
from nova_async.conductor.client import TOPIC
from nova_async.conductor.messages import ScheduleAndBuildInstances
from nova_async.db import instances
from nova_async.db.cells import Cells
from nova_async.db.queries import queries
from nova_async.network.client import NetworkClient
from nova_async.placement.client import PlacementClient
from nova_async.volume.client import VolumeClient

log = structlog.get_logger("conductor.stranded")
Q = queries("stranded")


# What a survivor can end for a dead host: a power action is simply not done (Nova's compute
# clears such a task at its restart), a rebuild leaves the server in ERROR (Nova's does too).
# Resizes, snapshots, shelves and rescues involve more than the host's row (another host,
# an image) and wait for the host to come back, whose start-up recovery finishes them.
POWER_TASKS = sorted({TaskState.REBOOTING, TaskState.REBOOT_PENDING, TaskState.REBOOT_STARTED,
                      TaskState.REBOOTING_HARD, TaskState.REBOOT_PENDING_HARD, TaskState.REBOOT_STARTED_HARD,
                      TaskState.POWERING_OFF, TaskState.POWERING_ON, TaskState.PAUSING, TaskState.UNPAUSING,
                      TaskState.SUSPENDING, TaskState.RESUMING})
REBUILD_TASKS = sorted({TaskState.REBUILDING, TaskState.REBUILD_BLOCK_DEVICE_MAPPING, TaskState.REBUILD_SPAWNING})


# How far back deleted servers are looked at for a claim that outlived them: a late claim
# lands within a scheduling decision's wait (a few minutes) of the delete.
OUTLIVED_WINDOW = 3600.0


def interval(service_down_time: float) -> float:
    """How often the job looks: a stranded build is told within 1.5 × service_down_time."""
    return max(1.0, min(service_down_time / 2, 30.0))


class Stranded:
    def __init__(self, cells: Cells, bus: Bus, placement: PlacementClient, network: NetworkClient,
                 volumes: VolumeClient, service_down_time: float) -> None:
        self.cells = cells
        self.bus = bus
        self.placement = placement
        self.network = network
        self.volumes = volumes
        self.down_time = service_down_time
        self.compute = ComputeClient(bus)

    async def pick_up(self) -> None:
        down = await self.down_hosts()
        if down:
            await self.fail_builds_on(down)
            await self.finish_deletes_on(down)
            await self.end_tasks_on(down)
        await self.resend_forgotten_boots()
        await self.resend_forgotten_deletes()
        await self.resend_forgotten_rebuilds()
        await self.end_forgotten_tasks()
        await self.release_outlived_claims()

    async def down_hosts(self) -> list[str]:
        return [r["host"] for r in await self.cells.api.fetch(Q.down_compute_hosts, self.down_time)]

    async def fail_builds_on_down_hosts(self) -> list[str]:
        return await self.fail_builds_on(await self.down_hosts())

    async def finish_deletes_on(self, down: list[str]) -> list[str]:
        """Deletes handed to hosts that went down before they finished: done here, as the API
        does a delete asked while a host is down (Nova's local delete); their uuids."""
        finished = []
        for cell in self.cells.compute_cells:
            for row in await cell.pool.fetch(Q.stranded_deletes, down):
                uuid = str(row["uuid"])
                log.warning("finishing a delete its compute host went down before doing", instance_uuid=uuid,
                            host=row["host"])
                try:
                    await instances.delete_locally(cell.pool, self.cells.api, self.placement, self.network,
                                                   self.volumes, uuid)
                except Exception as exc:   # tried again next time: every step may run again
                    log.warning("could not finish the delete", instance_uuid=uuid, error=str(exc))
                    continue
                if row["request_id"]:
                    await cell.pool.execute(Q.end_open_events, uuid, row["request_id"],
                                            f"Compute host {row['host']} went down")
                    await instances.finish_action(cell.pool, uuid, row["request_id"])
                finished.append(uuid)
        return finished

    async def end_tasks_on(self, down: list[str]) -> list[str]:
        """Power actions and rebuilds the hosts `down` were doing, ended; their uuids."""
        ended = []
        for cell in self.cells.compute_cells:
            for row in await cell.pool.fetch(Q.end_stranded_tasks, down, POWER_TASKS, REBUILD_TASKS):
                uuid = str(row["uuid"])
                log.warning("ended a task its compute host went down in the middle of", instance_uuid=uuid,
                            host=row["host"], task_state=row["task_state"], vm_state=row["vm_state"])
                if row["request_id"]:
                    why = f"Compute host {row['host']} went down"
                    await cell.pool.execute(Q.end_open_events, uuid, row["request_id"], why)
                    await instances.finish_action(cell.pool, uuid, row["request_id"], why)
                ended.append(uuid)
        return ended

    async def fail_builds_on(self, down: list[str]) -> list[str]:
        """ERROR for the builds of the compute hosts `down`; their uuids."""
        if not down:
            return []
        failed: list[str] = []
        for cell in self.cells.compute_cells:
            for row in await cell.pool.fetch(Q.fail_stranded_builds, down):
                uuid = str(row["uuid"])
                log.warning("build failed: its compute host went down", instance_uuid=uuid, host=row["host"])
                # The row is ERROR already (each once): letting go is idempotent and only retried
                # by a delete if it fails here.
                for what, release in (("allocations", self.placement.delete_allocations),
                                      ("ports", self.network.deallocate)):
                    try:
                        await release(uuid)
                    except Exception as exc:
                        log.warning("could not let go of a failed build's " + what, instance_uuid=uuid,
                                    error=str(exc))
                if row["request_id"]:
                    why = f"Compute host {row['host']} went down"
                    await cell.pool.execute(Q.end_open_events, uuid, row["request_id"], why)
                    await instances.finish_action(cell.pool, uuid, row["request_id"], why)
                metrics.build_finished("error")
                failed.append(uuid)
        return failed

    async def resend_forgotten_boots(self) -> int:
        """Boot requests nobody handed on, cast to the conductors again; how many."""
        sent = 0
        for cell in self.cells.compute_cells:
            for batch in await cell.pool.fetch(Q.forgotten_boots, 2 * self.down_time):
                ctx = RequestContext(user_id=batch["user_id"], project_id=batch["project_id"],
                                     request_id=batch["request_id"] or "")
                log.info("resending a boot request nobody scheduled", instances=len(batch["uuids"]))
                await self.bus.cast(TOPIC, ScheduleAndBuildInstances(
                    instance_uuids=[str(u) for u in batch["uuids"]], cell_uuid=str(cell.uuid)), context=ctx)
                sent += 1
        return sent

    async def up_hosts(self) -> list[str]:
        return [r["host"] for r in await self.cells.api.fetch(Q.up_compute_hosts, self.down_time)]

    async def resend_forgotten_deletes(self) -> list[str]:
        """Deletes nobody handed to their (live) host, cast to it again; their uuids."""
        return await self._resend_forgotten(
            Q.forgotten_deletes, "delete",
            lambda row, uuid, ctx: self.compute.terminate(row["host"], uuid, ctx))

    async def resend_forgotten_rebuilds(self) -> list[str]:
        """Rebuilds nobody handed to their (live) host, cast to it again; their uuids. The row
        already names the new image; the host's check of the task makes a late first cast a no-op."""
        return await self._resend_forgotten(
            Q.forgotten_rebuilds, "rebuild",
            lambda row, uuid, ctx: self.compute.rebuild(row["host"], uuid, ctx,
                                                        preserve_ephemeral=row["preserve_ephemeral"]))

    async def _resend_forgotten(self, query: str, what: str,
                                send: Callable[[Any, str, RequestContext], Awaitable[None]]) -> list[str]:
        up = await self.up_hosts()
        if not up:
            return []
        sent = []
        for cell in self.cells.compute_cells:
            for row in await cell.pool.fetch(query, up, 2 * self.down_time):
                uuid = str(row["uuid"])
                log.warning("casting again a request its host never got", request=what, instance_uuid=uuid,
                            host=row["host"])
                ctx = RequestContext(user_id=row["user_id"], project_id=row["project_id"],
                                     request_id=row["request_id"] or "")
                await send(row, uuid, ctx)
                sent.append(uuid)
        return sent

    async def end_forgotten_tasks(self) -> list[str]:
        """Power actions nobody handed to their (live) host, ended undone; their uuids."""
        up = await self.up_hosts()
        if not up:
            return []
        ended = []
        for cell in self.cells.compute_cells:
            for row in await cell.pool.fetch(Q.end_forgotten_tasks, up, POWER_TASKS, 2 * self.down_time):
                uuid = str(row["uuid"])
                log.warning("ended a task its host never got", instance_uuid=uuid, host=row["host"],
                            task_state=row["task_state"])
                if row["request_id"]:
                    why = f"The request never reached compute host {row['host']}"
                    await instances.finish_action(cell.pool, uuid, row["request_id"], why)
                ended.append(uuid)
        return ended

    async def release_outlived_claims(self) -> list[str]:
        """Claims of servers deleted, or left in cell0, over `service_down_time` ago, let go
        of; their uuids."""
        gone = [str(r["uuid"]) for r in await self.cells.gather(Q.deleted_servers, self.down_time, OUTLIVED_WINDOW)]
        gone += [str(r["uuid"]) for r in await self.cells.cell0.pool.fetch(Q.never_hosted, self.down_time,
                                                                            OUTLIVED_WINDOW)]
        if not gone:
            return []
        outlived = await self.placement.holding(gone)
        for uuid in outlived:
            log.warning("letting go of a claim that outlived its server", instance_uuid=uuid)
            await self.placement.delete_allocations(uuid)
        return outlived
