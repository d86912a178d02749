"""Resize on the compute hosts: the steps after the conductor found a host for the new flavor.

The steps follow Nova's split between the source host (where the server is) and the
destination (where the scheduler put the new flavor; often the same host):

    source  resize         task resize_migrating: the guest powered off and undefined, its
                           disks copied aside (disks.RESIZE_BACKUP) and grown → resize_migrated
    dest    finish         task resize_finish: the instance moves to the destination with the
                           new flavor, the guest is defined (and booted if it was running)
                           → vm_state resized (VERIFY_RESIZE)
    source  confirm        the copy of the old disks and the migration's allocation dropped
                           (the whole instance directory, when it is this host's own and
                           the guest moved: disks.mark_moving) → active, or stopped when
                           the guest is off
    dest    revert         task resize_reverting: the resized guest removed, then
    source  finish_revert  the old disks, flavor and allocation back, the guest as it was

A server that was SHUTOFF is resized without being booted and stays SHUTOFF, as in Nova.
Moving to another host needs the instance directory on shared storage: simulated hosts of
one process share it, and a single lab box only ever resizes onto itself.

A step that fails does not leave the server in ERROR where it can be helped: the failure is
recorded (fault, action "Error", migration "error") and the resize is rolled back through
the same finish_revert a user's revert uses. Only a failed roll-back ends in ERROR.

Every step starts from the task_state the previous one left and can run again: start-up
recovery (recovery.py) redoes the step an instance's task_state names."""

from __future__ import annotations

import traceback
import uuid as uuidlib
from dataclasses import dataclass

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.states import PowerState, TaskState, VmState
from nova_async.compute import build_volumes, disks
from nova_async.compute.build import BootFiles, Flavor, boot_files, tap_name
from nova_async.compute.client import ComputeClient
from nova_async.compute.domain_xml import Disk, DomainSpec, Interface, domain_name, domain_xml
from nova_async.compute.host import Host, describe
from nova_async.compute.messages import ResizeStep, ResizeStepName
from nova_async.compute.volume_disks import volume_disks
from nova_async.db import instances
from nova_async.db.instances import Q as IQ
from nova_async.db.queries import queries
from nova_async.hooks import runner as hooks

log = structlog.get_logger("compute.resize")
MQ = queries("migrations")
GQ = queries("server_groups")

_RESIZING = [TaskState.RESIZE_PREP, TaskState.RESIZE_MIGRATING, TaskState.RESIZE_MIGRATED, TaskState.RESIZE_FINISH]


async def run_step(host: Host, msg: ResizeStep, request_id: str) -> None:
    step = {ResizeStepName.RESIZE: _resize, ResizeStepName.FINISH: _finish, ResizeStepName.CONFIRM: _confirm,
            ResizeStepName.REVERT: _revert, ResizeStepName.FINISH_REVERT: _finish_revert}[msg.step]
    row = await host.pool.fetchrow(IQ.get, msg.instance_uuid)
    migration = await host.pool.fetchrow(MQ.get_migration, msg.migration_uuid)
    if row is None or migration is None:
        log.info("resize step skipped: the instance or its migration is gone", step=msg.step.value)
        return
    await step(host, row, migration, request_id)


async def due_for_confirm(host: Host, window: float) -> list[tuple[ResizeStep, str]]:
    """Resizes from this host waiting longer than `window` seconds: each now 'confirming',
    under a confirmResize action of its own, with the step that confirms it."""
    due = []
    for r in await host.pool.fetch(MQ.due_for_confirm, host.name, window):
        uuid = str(r["instance_uuid"])
        request_id = f"req-{uuidlib.uuid4()}"
        async with host.pool.acquire() as conn, conn.transaction():
            if await conn.fetchrow(MQ.begin_confirm, uuid) is None:
                continue  # the user confirmed or reverted meanwhile
            await instances.start_action(conn, uuid, request_id, "confirmResize", r["project_id"], r["user_id"])
        log.info("confirming a resize automatically", instance_uuid=uuid, window=window)
        due.append((ResizeStep(instance_uuid=uuid, migration_uuid=str(r["uuid"]), step=ResizeStepName.CONFIRM),
                    request_id))
    return due


async def guest_xml(host: Host, row: asyncpg.Record, flavor: Flavor, *,
                    rescue: RescueBoot | None = None) -> str:
    """The domain of the instance as it is now (its disks and ports) with `flavor`; or, for a
    rescue (rescue.py), booted as the rescue image says from the rescue's disks."""
    uuid = str(row["uuid"])
    boot, console_log = BootFiles(), ""
    vifs = row["network_info"] or []
    volumes = await volume_disks(host.pool, uuid)  # root volume first: vda of a volume-backed guest
    if host.real_guests:
        if rescue is not None:
            boot = await boot_files(host, rescue.properties, row["project_id"])
        elif row["image_ref"]:
            image = await host.image.get(row["image_ref"], row["project_id"], is_admin=True)
            boot = await boot_files(host, image.properties, row["project_id"])
        else:
            boot = await boot_files(host, await build_volumes.root_properties(host, row), row["project_id"])
        console_log = str(disks.console_log(host.instances_root, uuid))
        for bridge in dict.fromkeys(v.get("bridge") for v in vifs if v.get("bridge")):
            await host.bridges.ensure(bridge)
        await host.ports_ready([v["port_id"] for v in vifs])
    spec = DomainSpec(
        instance_uuid=uuid, display_name=row["display_name"], project_id=row["project_id"],
        flavor_name=flavor.name, memory_mb=flavor.memory_mb, vcpus=flavor.vcpus, domain_type=host.domain_type,
        disks=rescue.disks if rescue is not None else own_disks(host, row, volumes),
        interfaces=tuple(Interface(mac=v["mac_address"], tap=v.get("tap") or tap_name(v["port_id"]),
                                   bridge=v.get("bridge") or "", mtu=v.get("mtu") or 1500) for v in vifs),
        kernel=boot.kernel, initrd=boot.initrd, cmdline=boot.cmdline, console_log=console_log,
        node=host.node_uuid)
    return domain_xml(spec)


@dataclass(frozen=True)
class RescueBoot:
    """How a rescued guest boots: its disks (the rescue disk first) and the rescue image's
    properties (kernel, ramdisk, command line)."""

    disks: tuple[Disk, ...]
    properties: dict[str, str]


def own_disks(host: Host, row: asyncpg.Record, volumes: list[Disk]) -> tuple[Disk, ...]:
    """The instance's disks as its own guest has them: local ones and `volumes` (volume_disks)."""
    image_backed = bool(row["image_ref"])
    local = disks.instance_disks(host.instances_root, str(row["uuid"]), config_drive=host.real_guests,
                                 root=image_backed)
    return _with_volumes(local, volumes, image_backed)


def _with_volumes(local: list[Disk], volumes: list[Disk], image_backed: bool) -> tuple[Disk, ...]:
    """The guest's disks as a build orders them: its root (local disk, or root volume), the
    flavor's local disks, then the other volumes."""
    if image_backed:
        return tuple(local + volumes)
    return tuple(volumes[:1] + local + volumes[1:])


async def _place_guest(host: Host, row: asyncpg.Record, flavor: Flavor, *, running: bool) -> None:
    name = domain_name(str(row["uuid"]))
    await build_volumes.reconnect(host, str(row["uuid"]))  # the volumes' attachments name this host
    xml = await guest_xml(host, row, flavor)
    await host.hypervisor.remove(name)  # the old definition, or one an interrupted attempt left
    if running:
        await host.hypervisor.start(xml)
    else:
        await host.hypervisor.define(xml)


async def _resize(host: Host, row: asyncpg.Record, migration: asyncpg.Record, request_id: str) -> None:
    uuid, mig = str(row["uuid"]), str(migration["uuid"])
    if row["host"] != host.name or migration["source_compute"] != host.name:
        log.warning("resize step skipped: not the source host", instance_host=row["host"])
        return
    if row["task_state"] == TaskState.RESIZE_MIGRATED and migration["status"] == "post-migrating":
        # This host's part is done (a second copy of the step, or a restart right after it):
        # only the destination's step is sent again, which it runs once (begin_finish).
        log.info("resize step already done here; handing the destination its step again")
        await _next(host, migration["dest_compute"], uuid, mig, ResizeStepName.FINISH, request_id)
        return
    if await host.pool.fetchrow(MQ.resize_task, uuid, TaskState.RESIZE_MIGRATING, _RESIZING[:3]) is None:
        log.info("resize skipped", task_state=row["task_state"])
        return
    await host.pool.execute(MQ.set_migration_status, mig, "migrating", ["pre-migrating", "migrating",
                                                                        "post-migrating"])
    await host.notify("instance.resize.start", uuid, request_id=request_id)
    try:
        async with instances.event(host.pool, uuid, request_id, "compute_resize_instance", host.name):
            name = domain_name(uuid)
            if await host.hypervisor.is_running(name):
                await host.hypervisor.power_off(name, timeout=host.timeouts.shutdown)
            await disks.backup_for_resize(host.instances_root, uuid, root=bool(row["image_ref"]))
            disks.mark_moving(host.instances_root, uuid, host.name)
            new = Flavor.from_row(migration["new_flavor"])
            await disks.resize_disks(host.instances_root, uuid, root_gb=new.root_gb,
                                     ephemeral_gb=new.ephemeral_gb, swap_mb=new.swap)
            await host.hypervisor.remove(name)
        if await host.pool.fetchrow(MQ.resize_task, uuid, TaskState.RESIZE_MIGRATED,
                                    [TaskState.RESIZE_MIGRATING]) is None:
            return  # deleted meanwhile: the delete removes what there is
        await host.pool.execute(MQ.set_migration_status, mig, "post-migrating", ["migrating"])
    except Exception as exc:
        await _roll_back(host, uuid, migration, request_id, exc)
        return
    await host.notify("instance.resize.end", uuid, request_id=request_id)
    await _next(host, migration["dest_compute"], uuid, mig, ResizeStepName.FINISH, request_id)


async def _finish(host: Host, row: asyncpg.Record, migration: asyncpg.Record, request_id: str) -> None:
    uuid, mig = str(row["uuid"]), str(migration["uuid"])
    if migration["dest_compute"] != host.name:
        log.warning("finish skipped: not the destination host", dest=migration["dest_compute"])
        return
    new_flavor = migration["new_flavor"]
    spec = row["request_spec"]  # stored without its flavor (RequestSpec.to_stored): a resize keeps it
    claimed = await host.pool.fetchrow(MQ.begin_finish, uuid, host.name, migration["dest_node"], new_flavor, spec)
    if claimed is None:
        log.info("finish skipped", task_state=row["task_state"])
        return
    running = migration["old_vm_state"] == VmState.ACTIVE
    await host.notify("instance.resize_finish.start", uuid, request_id=request_id)
    try:
        async with instances.event(host.pool, uuid, request_id, "compute_finish_resize", host.name):
            await _place_guest(host, claimed, Flavor.from_row(new_flavor), running=running)
            disks.mark_moving(host.instances_root, uuid, host.name)
        power = PowerState.RUNNING if running else PowerState.SHUTDOWN
        # Together: a confirm or revert that VERIFY_RESIZE invites must find the resize finished.
        async with host.pool.acquire() as conn, conn.transaction():
            if await conn.fetchval(MQ.set_resized, uuid, power) is None:
                return
            await conn.execute(MQ.set_migration_status, mig, "finished", ["post-migrating"])
    except Exception as exc:
        await _roll_back(host, uuid, migration, request_id, exc)
        return
    log.info("instance resized", flavor=new_flavor.get("name"), running=running)
    await instances.finish_action(host.pool, uuid, request_id)
    await host.notify("instance.resize_finish.end", uuid, request_id=request_id)
    await host.hooks.post("post_resize", lambda: host.pool.fetchrow(IQ.get, uuid),
                          flavor=lambda: hooks.flavor(Flavor.from_row(new_flavor)))


async def _confirm(host: Host, row: asyncpg.Record, migration: asyncpg.Record, request_id: str) -> None:
    uuid, mig = str(row["uuid"]), str(migration["uuid"])
    if migration["status"] != "confirming":
        log.info("confirm skipped", migration_status=migration["status"])
        return
    await host.notify("instance.resize_confirm.start", uuid, request_id=request_id)
    async with instances.event(host.pool, uuid, request_id, "compute_confirm_resize", host.name):
        dest = migration["dest_compute"]
        if dest != host.name and not disks.shared_with(host.instances_root, uuid, dest):
            await disks.remove_instance_dir(host.instances_root, uuid)   # this host's own copy
        else:
            await disks.drop_resize_backup(host.instances_root, uuid)
        await host.placement.delete_allocations(mig)
        async with host.pool.acquire() as conn, conn.transaction():   # the server and its migration agree
            await conn.execute(MQ.set_confirmed, uuid)
            await conn.execute(MQ.set_migration_status, mig, "confirmed", ["confirming"])
    log.info("resize confirmed")
    await instances.finish_action(host.pool, uuid, request_id)
    await host.notify("instance.resize_confirm.end", uuid, request_id=request_id)


async def _revert(host: Host, row: asyncpg.Record, migration: asyncpg.Record, request_id: str) -> None:
    uuid, mig = str(row["uuid"]), str(migration["uuid"])
    if row["task_state"] != TaskState.RESIZE_REVERTING or row["host"] != host.name:
        log.info("revert skipped", task_state=row["task_state"], instance_host=row["host"])
        return
    await host.notify("instance.resize_revert.start", uuid, request_id=request_id)
    try:
        async with instances.event(host.pool, uuid, request_id, "compute_revert_resize", host.name):
            await host.hypervisor.remove(domain_name(uuid))
            source = migration["source_compute"]
            if source != host.name and not disks.shared_with(host.instances_root, uuid, source):
                await disks.remove_instance_dir(host.instances_root, uuid)   # this host's own copy
    except Exception as exc:
        await _set_error(host, uuid, request_id, exc)
        return
    await _next(host, migration["source_compute"], uuid, mig, ResizeStepName.FINISH_REVERT, request_id)


async def _finish_revert(host: Host, row: asyncpg.Record, migration: asyncpg.Record, request_id: str) -> None:
    uuid, mig = str(row["uuid"]), str(migration["uuid"])
    if row["task_state"] != TaskState.RESIZE_REVERTING or migration["source_compute"] != host.name:
        log.info("finish_revert skipped", task_state=row["task_state"])
        return
    failed = migration["status"] == "error"   # a roll-back, not the user's revert
    old_flavor = migration["old_flavor"]
    running = migration["old_vm_state"] == VmState.ACTIVE
    try:
        async with instances.event(host.pool, uuid, request_id, "compute_finish_revert_resize", host.name):
            await disks.restore_after_revert(host.instances_root, uuid)
            await host.placement.move_allocations(mig, uuid, row["project_id"], row["user_id"],
                                                  source_type="MIGRATION", target_type="INSTANCE")
            await _place_guest(host, row, Flavor.from_row(old_flavor), running=running)
            # its server group counts it here again (the scheduler recorded the destination)
            await host.api_pool.execute(GQ.set_member_host, uuid, host.name)
            async with host.pool.acquire() as conn, conn.transaction():   # the server and its migration agree
                await conn.execute(MQ.set_reverted, uuid, host.name, migration["source_node"], old_flavor,
                                   migration["old_request_spec"], migration["old_vm_state"],
                                   PowerState.RUNNING if running else PowerState.SHUTDOWN)
                if not failed:
                    await conn.execute(MQ.set_migration_status, mig, "reverted", ["reverting"])
    except Exception as exc:
        await _set_error(host, uuid, request_id, exc)
        return
    log.info("resize rolled back" if failed else "resize reverted")
    await instances.finish_action(host.pool, uuid, request_id, "Error" if failed else None)
    await host.notify("instance.resize_revert.end", uuid, request_id=request_id)


async def _next(host: Host, target: str, uuid: str, mig: str, step: ResizeStepName, request_id: str) -> None:
    """Run the next step here when this host is where it belongs, else send it there."""
    if target == host.name:
        msg = ResizeStep(instance_uuid=uuid, migration_uuid=mig, step=step)
        await run_step(host, msg, request_id)
    else:
        await ComputeClient(host.bus).resize_step(target, uuid, mig, step,
                                                  RequestContext(user_id="", project_id="", request_id=request_id))


async def _roll_back(host: Host, uuid: str, migration: asyncpg.Record, request_id: str, exc: Exception) -> None:
    """A resize step failed: say why, and take the server back to its old flavor."""
    reason = describe(exc)
    log.error("resize failed; rolling back", reason=reason)
    await host.pool.execute(IQ.add_fault, uuid, exc.status if isinstance(exc, errors.NovaAsyncError) else 500,
                            f"Resize failed: {reason}"[:1000], "".join(traceback.format_exception(exc))[:10000],
                            host.name)
    mig = str(migration["uuid"])
    await host.pool.execute(MQ.set_migration_status, mig, "error",
                            ["pre-migrating", "migrating", "post-migrating", "finished"])
    if await host.pool.fetchrow(MQ.resize_task, uuid, TaskState.RESIZE_REVERTING, _RESIZING) is None:
        return  # deleted meanwhile
    await host.notify("instance.resize.error", uuid, reason=reason, request_id=request_id)
    # The revert starts where the instance is recorded now (the destination once finish
    # took it over), which removes the guest there.
    current = await host.pool.fetchrow(IQ.get, uuid)
    if current is not None:
        await _next(host, current["host"], uuid, mig, ResizeStepName.REVERT, request_id)


async def _set_error(host: Host, uuid: str, request_id: str, exc: Exception) -> None:
    reason = describe(exc)
    log.error("resize revert failed", reason=reason)
    await instances.set_error(host.pool, uuid, f"Reverting the resize failed: {reason}", host=host.name,
                              details="".join(traceback.format_exception(exc)))
    await instances.finish_action(host.pool, uuid, request_id, "Error")
