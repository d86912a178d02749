"""Rescue and unrescue on the compute host, as Nova's libvirt driver does them.

    rescue     task rescuing: the guest powered off, a fresh rescue disk made over the rescue
               image (the one the request named, or the server's own), and the guest
               redefined to boot from it → vm_state rescued, running. Legacy rescue: the
               rescue disk is vda, its own root disk vdb, and its config drive; its ephemeral
               and swap disks and its volumes are left out, as Nova's rescue leaves them.
               Stable device rescue (the rescue image sets hw_rescue_device and
               hw_rescue_bus; a volume-backed server needs it, from 2.87): every disk stays
               where it is, volumes too, and the rescue disk is added on the bus and as the
               device the image names, first in boot order
    unrescue   task unrescuing: the rescue guest removed, the server's own guest defined
               again from its row and booted, the rescue disk dropped → active, running

The domain keeps its name throughout (instance-<uuid>), so a console or a delete finds it in
either shape. Both steps start from the instance's task_state and remake what they need, so
recovery runs an interrupted one again (recovery.py). A rescue that fails puts the server's
own guest back as it was (running when it ran) and records why; an unrescue that fails is
ERROR, as Nova leaves it.
"""

from __future__ import annotations

import traceback

import structlog

from nova_async.common import errors
from nova_async.common.states import TaskState, VmState
from nova_async.compute import disks
from nova_async.compute.build import Flavor
from nova_async.compute.domain_xml import DISK_BUSES, DISK_DEVICES, Disk, domain_name
from nova_async.compute.host import Host, describe
from nova_async.compute.messages import RescueInstance, UnrescueInstance
from nova_async.compute.resize import RescueBoot, guest_xml, own_disks
from nova_async.compute.volume_disks import volume_disks
from nova_async.db import instances
from nova_async.db.instances import Q as IQ
from nova_async.db.queries import queries

log = structlog.get_logger("compute.rescue")
SQ = queries("shelve")


async def rescue(host: Host, msg: RescueInstance, request_id: str) -> None:
    uuid = msg.instance_uuid
    row = await host.pool.fetchrow(IQ.get, uuid)
    if row is None or row["host"] != host.name or row["task_state"] != TaskState.RESCUING:
        log.info("rescue skipped", task_state=row and row["task_state"], instance_host=row and row["host"])
        return
    await host.notify("instance.rescue.start", uuid)
    name = domain_name(uuid)
    try:
        async with instances.event(host.pool, uuid, request_id, "compute_rescue_instance", host.name):
            if await host.hypervisor.is_running(name):
                await host.hypervisor.power_off(name, timeout=host.timeouts.shutdown)
            image = await host.image.get(row["rescue_image_ref"], row["project_id"], is_admin=True)
            base = await host.images.fetch(image)
            if stable_rescue(image.properties):
                boot_disks = await _stable_layout(host, row, base, image.properties)
            else:
                boot_disks = await _legacy_layout(host, uuid, base)
            xml = await guest_xml(host, row, Flavor.from_row(row["flavor"]),
                                  rescue=RescueBoot(disks=boot_disks, properties=dict(image.properties)))
            await host.hypervisor.remove(name)
            await host.hypervisor.start(xml)
        rescued = await host.pool.fetchrow(SQ.set_rescued, uuid)
    except Exception as exc:
        await _rescue_failed(host, row, request_id, exc)
        return
    log.info("instance rescued" if rescued else "the rescue was taken over (deleted meanwhile)",
             image_id=row["rescue_image_ref"])
    await instances.finish_action(host.pool, uuid, request_id)
    await host.notify("instance.rescue.end", uuid)


def stable_rescue(properties: dict[str, str]) -> bool:
    """Whether the rescue image asks for a stable device rescue (Nova's 2.87 rescue): both of
    hw_rescue_device and hw_rescue_bus set."""
    return "hw_rescue_device" in properties and "hw_rescue_bus" in properties


async def _legacy_layout(host: Host, uuid: str, base) -> tuple[Disk, ...]:
    """The rescue disk as vda, the server's root disk as vdb, its config drive."""
    path = disks.instance_dir(host.instances_root, uuid)
    layout = [Disk(path=str(await disks.rescue_disk(host.instances_root, uuid, base)), target="vda"),
              Disk(path=str(path / "disk"), target="vdb")]
    if host.real_guests and (path / disks.CONFIG_DRIVE).exists():
        layout.append(Disk(path=str(path / disks.CONFIG_DRIVE), target="hdc", format="raw", device="cdrom"))
    return tuple(layout)


async def _stable_layout(host: Host, row, base, properties: dict[str, str]) -> tuple[Disk, ...]:
    """Stable device rescue: every disk where the server's own guest has it (volumes too), and
    the rescue disk added on the bus and as the device its image names, booted first. A
    CD-ROM is the image's raw copy itself (read-only); a disk, a fresh overlay of it."""
    uuid = str(row["uuid"])
    own = own_disks(host, row, await volume_disks(host.pool, uuid))
    device, bus = properties["hw_rescue_device"], properties["hw_rescue_bus"]
    if device not in DISK_DEVICES or bus not in DISK_BUSES:
        raise errors.InvalidInput(f"The rescue image asks for a {device} on the {bus} bus, which this host "
                                  "does not offer.")
    prefix, taken = DISK_BUSES[bus], {d.target for d in own}
    target = next(prefix + c for c in "abcdefghijklmnopqrstuvwxyz" if prefix + c not in taken)
    if device == "cdrom":
        rescue_disk = Disk(path=str(base), target=target, format="raw", device="cdrom", bus=bus, boot_order=1)
    else:
        rescue_disk = Disk(path=str(await disks.rescue_disk(host.instances_root, uuid, base)), target=target,
                           bus=bus, boot_order=1)
    return (*own, rescue_disk)


async def _own_guest(host: Host, row, *, running: bool) -> None:
    """The server's own guest, defined again from its row (and booted when `running`)."""
    uuid = str(row["uuid"])
    name = domain_name(uuid)
    xml = await guest_xml(host, row, Flavor.from_row(row["flavor"]))
    await host.hypervisor.remove(name)
    if running:
        await host.hypervisor.start(xml)
    else:
        await host.hypervisor.define(xml)
    disks.drop_rescue_disk(host.instances_root, uuid)


async def _rescue_failed(host: Host, row, request_id: str, exc: Exception) -> None:
    uuid, reason = str(row["uuid"]), describe(exc)
    log.error("rescue failed; putting the server's own guest back", reason=reason)
    try:
        await _own_guest(host, row, running=row["vm_state"] == VmState.ACTIVE)
    except Exception as back_exc:
        log.warning("could not put the server's own guest back", error=describe(back_exc))
    async with host.pool.acquire() as conn, conn.transaction():
        if await conn.fetchrow(SQ.release, uuid, [TaskState.RESCUING]) is not None:
            await conn.execute(IQ.add_fault, uuid, exc.status if isinstance(exc, errors.NovaAsyncError) else 500,
                               f"Rescue failed: {reason}"[:1000], "".join(traceback.format_exception(exc))[:10000],
                               host.name)
    await instances.finish_action(host.pool, uuid, request_id, "Error")
    await host.notify("instance.rescue.error", uuid, reason=reason)


async def unrescue(host: Host, msg: UnrescueInstance, request_id: str) -> None:
    uuid = msg.instance_uuid
    row = await host.pool.fetchrow(IQ.get, uuid)
    if row is None or row["host"] != host.name or row["task_state"] != TaskState.UNRESCUING:
        log.info("unrescue skipped", task_state=row and row["task_state"], instance_host=row and row["host"])
        return
    await host.notify("instance.unrescue.start", uuid)
    try:
        async with instances.event(host.pool, uuid, request_id, "compute_unrescue_instance", host.name):
            await _own_guest(host, row, running=True)
        done = await host.pool.fetchrow(SQ.set_unrescued, uuid)
    except Exception as exc:
        reason = describe(exc)
        log.error("unrescue failed", reason=reason)
        await instances.set_error(host.pool, uuid, f"Unrescue failed: {reason}", host=host.name,
                                  code=exc.status if isinstance(exc, errors.NovaAsyncError) else 500,
                                  details="".join(traceback.format_exception(exc)))
        await instances.finish_action(host.pool, uuid, request_id, "Error")
        await host.notify("instance.unrescue.error", uuid, reason=reason)
        return
    log.info("instance unrescued" if done else "the unrescue was taken over (deleted meanwhile)")
    await instances.finish_action(host.pool, uuid, request_id)
    await host.notify("instance.unrescue.end", uuid)
