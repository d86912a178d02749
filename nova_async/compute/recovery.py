"""Start-up reconciliation: the database is the truth, the host is made to agree with it.

Run before a host takes any new work:
- a domain named `instance-<uuid>` whose instance is gone (deleted, or never recorded) is
  an orphan: it is stopped and undefined. Domains we did not name are not ours to touch;
- an instance directory with no live instance is removed (done once per process, since
  simulated hosts share the directory);
- an instance this host was deleting is terminated again (every step is idempotent);
- an instance this host was rebooting, stopping, starting, pausing, unpausing, suspending
  or resuming has that operation run again: each starts from the domain's actual state,
  so one that got done before the crash is only recorded, and a guest that is gone ends in
  ERROR with a fault;
- an instance this host was building is built again from scratch. We rebuild rather than
  fail it: its placement claim still stands, its ports come back the same, its disks and
  domain are remade, and the user gets the server they asked for instead of an ERROR they
  did nothing to cause. If the rebuild fails, the usual failure path cleans up and sets
  ERROR with the reason;
- a resize step this host was doing is done again (each starts from the task_state the
  last one left, see resize.py): resize_migrating/resize_migrated redo the source's part,
  resize_finish the destination's, resize_reverting the revert, and a confirm under way is
  confirmed. A resize the conductor had not yet handed to a host is the conductor's to
  resume. Nothing is left behind: the old disks stay aside until a confirm or revert, and
  the migration keeps the old allocation until then;
- a snapshot (createImage) a restart interrupted is abandoned: its image is deleted and the
  server given back (snapshot.py);
- a shelve, offload, unshelve, rescue or unrescue this host was doing is done again: each
  starts from the task_state the last step left and the guest as it is (shelve.py,
  rescue.py), so the user gets what they asked for. An unshelve the conductor had not yet
  given a host is the conductor's to resume.

After a database outage the same lists are read again (builds, deletes, rebuilds and power
actions), while this host is running: each item waits behind its instance's current job,
and `still_unfinished` tells, when its turn comes, whether the job in front finished it.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path

import structlog

from nova_async.common.states import TaskState, VmState
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.host import Host
from nova_async.compute.messages import (
    POWER_TASK_STATES,
    BuildAndRunInstance,
    PowerAction,
    PowerOp,
    RebootType,
    RebuildInstance,
    RescueInstance,
    ResizeStep,
    ResizeStepName,
    ShelveInstance,
    ShelveOffloadInstance,
    TerminateInstance,
    UnrescueInstance,
    UnshelveInstance,
)
from nova_async.db.cells import Cells
from nova_async.db.instances import Q as IQ
from nova_async.db.queries import queries

log = structlog.get_logger("compute.recovery")
Q = queries("compute")
AQ = queries("actions")
MQ = queries("migrations")
SQ = queries("shelve")

# Which operation left each task_state behind.
_BY_TASK_STATE = {
    PowerAction(instance_uuid="", action=op, reboot_type=kind).task_state: (op, kind)
    for op in PowerOp for kind in (RebootType if op is PowerOp.REBOOT else (RebootType.SOFT,))
}


# The messages that redo each kind of unfinished work: compute handles them as if asked again.
SHELVE_AND_RESCUE = (ShelveInstance, ShelveOffloadInstance, UnshelveInstance, RescueInstance, UnrescueInstance)
Redo = (BuildAndRunInstance | TerminateInstance | RebuildInstance | PowerAction | ResizeStep | ShelveInstance
        | ShelveOffloadInstance | UnshelveInstance | RescueInstance | UnrescueInstance)


@dataclass(frozen=True)
class Unfinished:
    """Work found interrupted: the message that redoes it, and the request it belongs to."""

    msg: Redo
    request_id: str

    @property
    def instance_uuid(self) -> str:
        return self.msg.instance_uuid


def _uuid_name(name: str) -> str | None:
    try:
        canonical = str(uuidlib.UUID(name))
    except ValueError:
        return None
    return canonical if canonical == name else None


async def sweep_instance_dirs(cells: Cells, instances_root: Path) -> list[str]:
    """Remove instance directories whose instance no longer exists; returns their uuids."""
    if not instances_root.is_dir():
        return []
    found = [u for p in instances_root.iterdir() if p.is_dir() and (u := _uuid_name(p.name))]
    if not found:
        return []
    live = {str(r["uuid"]) for r in await cells.gather(Q.live_instances, found)}
    removed = sorted(set(found) - live)
    for instance_uuid in removed:
        await asyncio.to_thread(shutil.rmtree, instances_root / instance_uuid, ignore_errors=True)
        log.info("removed orphan instance directory", instance_uuid=instance_uuid)
    return removed


async def sweep_orphan_domains(host: Host) -> list[str]:
    """Stop and undefine our domains whose instance no longer exists; returns their uuids.

    Only domains this host's compute node made are considered: another nova-async with its
    own database may share this libvirt. A domain whose live instance the database places on
    another host is left alone, with a warning: destroying a guest cannot be undone, and a
    renamed host or two hosts sharing one libvirt must not wipe each other's guests."""
    present = await host.hypervisor.instance_uuids(host.node_uuid)
    if not present:
        return []
    rows = await host.pool.fetch(Q.instance_hosts, list(present))
    live = {str(r["uuid"]): r["host"] for r in rows}
    for instance_uuid, owner in sorted(live.items()):
        if owner != host.name:
            log.warning("domain of an instance placed elsewhere left alone", instance_uuid=instance_uuid,
                        instance_host=owner)
    removed = sorted(present - set(live))
    for instance_uuid in removed:
        await host.hypervisor.remove(domain_name(instance_uuid))
        log.info("removed orphan domain", instance_uuid=instance_uuid)
    return removed


async def unfinished(host: Host) -> list[Unfinished]:
    """Builds and deletes a restart interrupted on this host, in the order they were asked."""
    work = []
    for row in await host.pool.fetch(Q.unfinished_on_host, host.name):
        instance_uuid = str(row["uuid"])
        msg: Redo
        if row["task_state"] == TaskState.DELETING:
            msg = TerminateInstance(instance_uuid=instance_uuid)
        elif row["task_state"] == TaskState.REBUILDING:
            # With what the user asked the rebuild to keep (0071), or it would be lost now.
            msg = RebuildInstance(instance_uuid=instance_uuid, preserve_ephemeral=row["preserve_ephemeral"])
        else:
            msg = BuildAndRunInstance(instance_uuid=instance_uuid, node=host.node_uuid)
        # Events go under the action the user started; a row without one still gets done.
        work.append(Unfinished(msg, row["request_id"] or f"req-{uuidlib.uuid4()}"))
    return work


async def still_unfinished(host: Host, msg: Redo) -> bool:
    """Whether the work `msg` redoes (a build, delete, rebuild or power action found
    unfinished on this host) still is unfinished: its instance is still here, in the state
    that work leaves behind unfinished."""
    row = await host.pool.fetchrow(IQ.get, msg.instance_uuid)
    if row is None or row["host"] != host.name:
        return False
    task_state = row["task_state"]
    if isinstance(msg, BuildAndRunInstance):
        return row["vm_state"] == VmState.BUILDING and task_state not in (TaskState.DELETING,
                                                                          TaskState.REBUILDING)
    if isinstance(msg, PowerAction):
        return task_state == msg.task_state
    if isinstance(msg, TerminateInstance):
        return task_state == TaskState.DELETING
    if isinstance(msg, RebuildInstance):
        return task_state == TaskState.REBUILDING
    return False  # a resize step: only a start redoes those


async def interrupted_power_actions(host: Host) -> list[Unfinished]:
    """Power operations a restart interrupted on this host, as the messages that asked."""
    work = []
    for row in await host.pool.fetch(AQ.interrupted_on_host, host.name, sorted(POWER_TASK_STATES)):
        op, kind = _BY_TASK_STATE[row["task_state"]]
        instance_uuid = str(row["uuid"])
        request_id = row["request_id"] or f"req-{uuidlib.uuid4()}"
        work.append(Unfinished(PowerAction(instance_uuid=instance_uuid, action=op, reboot_type=kind), request_id))
    return work


# task_state → the resize step that redoes it (confirming is the migration's status)
_RESIZE_STEPS = {TaskState.RESIZE_MIGRATING: ResizeStepName.RESIZE,
                 TaskState.RESIZE_MIGRATED: ResizeStepName.RESIZE,
                 TaskState.RESIZE_FINISH: ResizeStepName.FINISH,
                 TaskState.RESIZE_REVERTING: ResizeStepName.REVERT,
                 "confirming": ResizeStepName.CONFIRM}


async def interrupted_resizes(host: Host) -> list[Unfinished]:
    """Resize steps a restart interrupted on this host, as the messages that asked for them."""
    work = []
    for row in await host.pool.fetch(MQ.unfinished_resizes, host.name):
        instance_uuid = str(row["uuid"])
        step = ResizeStep(instance_uuid=instance_uuid, migration_uuid=str(row["migration_uuid"]),
                          step=_RESIZE_STEPS[row["task_state"]])
        work.append(Unfinished(step, row["request_id"] or f"req-{uuidlib.uuid4()}"))
    return work


async def interrupted_shelves_and_rescues(host: Host) -> list[Unfinished]:
    """Shelve, offload, unshelve, rescue and unrescue steps a restart interrupted on this host,
    as the messages that ask for them again."""
    work = []
    for row in await host.pool.fetch(SQ.interrupted_on_host, host.name):
        instance_uuid, task_state = str(row["uuid"]), row["task_state"]
        msg: Redo
        if task_state == TaskState.SHELVING_OFFLOADING:
            msg = ShelveOffloadInstance(instance_uuid=instance_uuid)
        elif task_state == TaskState.UNSHELVING:
            msg = UnshelveInstance(instance_uuid=instance_uuid, node=row["node"] or "")
        elif task_state == TaskState.RESCUING:
            msg = RescueInstance(instance_uuid=instance_uuid)
        elif task_state == TaskState.UNRESCUING:
            msg = UnrescueInstance(instance_uuid=instance_uuid)
        elif row["shelved_image_id"]:
            msg = ShelveInstance(instance_uuid=instance_uuid, image_id=row["shelved_image_id"])
        else:
            continue
        work.append(Unfinished(msg, row["request_id"] or f"req-{uuidlib.uuid4()}"))
    return work
