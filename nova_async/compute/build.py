"""Building one instance on this host, from its database row to a running guest.

Network allocation and block-device preparation run at the same time (they wait on
different services and disks); then the domain is defined and started and the row becomes
ACTIVE. Each step is an instance-action event. Any failure tears down whatever was made
and leaves the instance in ERROR with a fault that says why; a delete that raced in wins.

Building is idempotent, which start-up recovery relies on: ports come back the same,
disks are made afresh, and a domain left from an earlier attempt is replaced.

A build that fails here while the scheduler left alternates is not the end: this host
cleans up (keeping the claim, which the conductor moves), hands the instance back with no
host, and asks the conductor to try the next alternate. Only a request that cannot work
anywhere (bad input) or the last alternate ends in ERROR here.

A real guest (QEMU/KVM; not libvirt's test driver) needs more than a domain: the kernel
and ramdisk its image names (Nova's kernel_id / ramdisk_id properties) for direct kernel
boot, a bridge for each network, a console log and, when one is due, a config drive; where
this host's data plane runs, it starts only once the data plane serves its ports (DHCP,
firewall).

A config drive is due as in Nova (`nova.virt.configdrive.required_by`): the request asked
for one (`config_drive: true`), the image says `img_config_drive=mandatory` (the demo
guest's images do: it has no other way to learn who it is), or `[compute]
force_config_drive` is set. Without one, a guest such as a stock cloud image finds its
datasource elsewhere (the metadata service). A drive made for a reason the request did not
give is written back to the instance (`config_drive` "True"), as Nova's
`configdrive.update_instance` does, so `server show` says what the guest got. The drive is
written once the ports are known, since it describes them.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import ipaddress
import traceback
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import msgspec
import structlog

from nova_async.common import errors, metrics
from nova_async.common.states import PowerState, TaskState, VmState
from nova_async.compute import build_volumes, disks
from nova_async.compute.config_drive import DriveContent, Nic
from nova_async.compute.domain_xml import DomainSpec, Interface, domain_name, domain_xml
from nova_async.compute.host import Host, describe
from nova_async.compute.terminate import teardown, terminate
from nova_async.db import instances
from nova_async.db.coalesce import Coalesced
from nova_async.db.instances import Q as IQ
from nova_async.db.queries import queries
from nova_async.common.context import RequestContext
from nova_async.conductor.messages import RescheduleInstance
from nova_async.network.messages import IpInfo, RequestedNetwork, Vif
from nova_async.scheduler.messages import Destination, Flavor

log = structlog.get_logger("compute.build")
CQ = queries("compute")
T = TypeVar("T")
# The read and the two writes of a build that every boot makes, shared by the builds that
# reach them at once.
GET_FOR_BUILD = Coalesced(IQ.get_for_build)
SET_NETWORK_INFO = Coalesced(IQ.set_network_info)
SET_ACTIVE = Coalesced(IQ.set_active)

# Nova's default for direct kernel boot is root plus the consoles; ours names only the
# serial console (the one we log) and adds "quiet": under TCG every kernel message on the
# emulated UART costs boot time. "no_timer_check": on a loaded host an emulated guest's
# early timer check can miss its ticks and stall the boot (common in cloud images' own
# command lines). An image's os_command_line replaces it, as in Nova.
DEFAULT_CMDLINE = "root=/dev/vda console=ttyS0 quiet no_timer_check"
# instances.config_drive as Nova keeps it: "True" when the guest has one, else "".
CONFIG_DRIVE_SET = "True"
IMG_CONFIG_DRIVE = "img_config_drive"     # the image property: "mandatory" or "optional"
BUILD_EVENT = "compute_build_and_run_instance"
NETWORK_EVENT = "compute_allocate_network"
BLOCK_DEVICES_EVENT = "compute_prepare_block_devices"
SPAWN_EVENT = "compute_spawn"


class DeleteRaced(errors.Conflict):
    """The instance was deleted while it was being built."""


@dataclass(frozen=True)
class BootFiles:
    """Direct kernel boot: the kernel and ramdisk in the image cache, and the command line."""
    kernel: str = ""
    initrd: str = ""
    cmdline: str = ""


def vif_record(vif: Vif) -> dict[str, Any]:
    """How a port is kept in instances.network_info (plain JSON, no message tags); its
    floating IPs only when it has some, as network/instance_addresses.py writes them."""
    record = {"port_id": vif.port_id, "network_id": vif.network_id, "network_name": vif.network_name,
              "mac_address": vif.mac_address, "ips": [ip_record(ip) for ip in vif.ips],
              "bridge": vif.bridge, "tap": vif.tap or tap_name(vif.port_id), "mtu": vif.mtu}
    if vif.floating_ips:
        record["floating_ips"] = list(vif.floating_ips)
    return record


def ip_record(ip: IpInfo) -> dict[str, Any]:
    return {"address": ip.address, "version": ip.version, "subnet_id": ip.subnet_id, "cidr": ip.cidr,
            "gateway": ip.gateway}


def tap_name(port_id: str) -> str:
    return ("tap" + port_id)[:14]  # Nova's convention; fits Linux's 15-byte limit


def requested_networks(data: Any) -> list[RequestedNetwork]:
    if not isinstance(data, list):
        raise errors.InvalidInput("requested_networks must be a list")
    keys = ("network_id", "port_id", "fixed_ip")
    return [RequestedNetwork(**{k: item.get(k) for k in keys}) for item in data if isinstance(item, dict)]


async def _settled(step: Awaitable[T]) -> T | BaseException:
    # Both branches always run to their end, so the clean-up knows what exists.
    try:
        return await step
    except Exception as exc:
        return exc


async def build_and_run(host: Host, instance_uuid: str, request_id: str,
                        alternates: list[Destination] | None = None) -> None:
    row = await GET_FOR_BUILD(host.pool, instance_uuid)
    if row is None:
        log.info("build skipped: the instance is gone")
        return
    if row["task_state"] == TaskState.DELETING or row["vm_state"] != VmState.BUILDING:
        log.info("build skipped", vm_state=row["vm_state"], task_state=row["task_state"])
        return
    if row["host"] != host.name:
        # Every build is cast once its host is written. No host: a reschedule took it back
        # from here (a second copy of this cast, sent again by a conductor that saw no build
        # begun, came late): building it here too would leave a guest and disks nobody owns.
        log.warning("build skipped: the instance is not placed on this host", instance_host=row["host"])
        return
    await host.notify("instance.create.start", instance_uuid, request_id=request_id)
    try:
        async with instances.event(host.pool, instance_uuid, request_id, BUILD_EVENT, host.name):
            await host.hooks.pre("pre_build", row)  # a veto is InvalidInput: ERROR here, no reschedule
            await spawn(host, row, request_id)
        # ACTIVE once every step of the build is recorded: whoever sees it sees them finished.
        await _activate(host, instance_uuid, None, request_id)
    except DeleteRaced:
        log.info("instance deleted while building; finishing the delete")
        await terminate(host, instance_uuid, request_id)
        return
    except errors.DatabaseUnavailable:
        # Not the build's fault, and nothing can be recorded now: the instance stays building
        # on this host, and is built again once the database is back (ComputeRole._resume;
        # the probe is told to look, in case only another process saw the database go).
        host.pool.health.suspect()
        raise
    except Exception as exc:
        if not isinstance(exc, errors.InvalidInput):
            await host.api_pool.execute(CQ.build_failed, host.node_uuid)
            host.failed_builds = True
        if alternates and not isinstance(exc, errors.InvalidInput) \
                and await _reschedule(host, instance_uuid, request_id, exc, alternates):
            return
        await _fail(host, instance_uuid, request_id, exc)
        return
    log.info("instance active")
    metrics.build_finished("active")
    if host.failed_builds:  # most builds succeed: only then is there something to reset
        host.failed_builds = False
        await host.api_pool.execute(CQ.reset_failed_builds, host.node_uuid)
    await host.notify("instance.create.end", instance_uuid, request_id=request_id)
    await host.hooks.post("post_build", lambda: host.pool.fetchrow(IQ.get, instance_uuid))


async def spawn(host: Host, row: asyncpg.Record | dict[str, Any], request_id: str, *,
                keep_ephemeral: Path | None = None) -> None:
    """Ports and disks at once, then the guest running: a build's (made ACTIVE by `_activate`),
    a rebuild's and an offloaded server's unshelve (shelve.py), each from the row it gives.
    `keep_ephemeral`: a rebuild's preserved ephemeral disk (disks.set_aside_ephemeral).
    Its three steps are recorded together once they have ended, within the action's own
    event that the caller opened."""
    steps = instances.Steps(host.pool, str(row["uuid"]), request_id, host.name)
    try:
        await _spawn(host, row, steps, keep_ephemeral)
    finally:
        await steps.record()


async def _spawn(host: Host, row: asyncpg.Record | dict[str, Any], steps: instances.Steps,
                 keep_ephemeral: Path | None) -> None:
    instance_uuid = str(row["uuid"])
    flavor = Flavor.from_row(row["flavor"])  # the row is the truth: what the API wrote, or a resize
    requested = requested_networks(row["requested_networks"])
    async with asyncio.TaskGroup() as tg:
        net = tg.create_task(_settled(_network(host, row, requested, steps.step(NETWORK_EVENT))),
                             name=f"compute:{instance_uuid}:network")
        blk = tg.create_task(_settled(_block_devices(host, row, flavor, steps.step(BLOCK_DEVICES_EVENT),
                                                     keep_ephemeral)),
                             name=f"compute:{instance_uuid}:block-devices")
    for outcome in (net.result(), blk.result()):
        if isinstance(outcome, BaseException):
            raise outcome
    vifs: list[Vif] = net.result()  # type: ignore[assignment]
    disk_list, boot, properties, to_complete = blk.result()  # type: ignore[misc]
    async with steps.step(SPAWN_EVENT):
        console_log = ""
        if host.real_guests:
            if needs_config_drive(row["config_drive"], properties, host.force_config_drive):
                disk_list.append(await disks.config_drive(host.instances_root, instance_uuid,
                                                          drive_content(row, vifs)))
                if row["config_drive"] != CONFIG_DRIVE_SET:
                    await host.pool.execute(IQ.set_config_drive, instance_uuid)
            console_log = str(disks.console_log(host.instances_root, instance_uuid))
        spec = DomainSpec(
            instance_uuid=instance_uuid, display_name=row["display_name"], project_id=row["project_id"],
            flavor_name=flavor.name, memory_mb=flavor.memory_mb, vcpus=flavor.vcpus,
            domain_type=host.domain_type, disks=tuple(disk_list),
            interfaces=tuple(Interface(mac=v.mac_address, tap=v.tap or tap_name(v.port_id), bridge=v.bridge,
                                       mtu=v.mtu) for v in vifs),
            kernel=boot.kernel, initrd=boot.initrd, cmdline=boot.cmdline, console_log=console_log,
            node=host.node_uuid)
        xml = domain_xml(spec)
        await host.hypervisor.remove(domain_name(instance_uuid))  # left by an interrupted attempt
        await host.hypervisor.start(xml)
        await build_volumes.complete(host, to_complete)


async def _activate(host: Host, instance_uuid: str, then: str | None, ends: str | None) -> None:
    """The instance ACTIVE with task_state `then`, and the action of request `ends` (a
    build's; None: none) ended with it; DeleteRaced when a delete got there first."""
    if await SET_ACTIVE(host.pool, instance_uuid, then, ends) is None:
        raise DeleteRaced(f"Instance {instance_uuid} was deleted while it was being built.")


async def _network(host: Host, row: asyncpg.Record, requested: list[RequestedNetwork],
                   event: contextlib.AbstractAsyncContextManager[None]) -> list[Vif]:
    instance_uuid = str(row["uuid"])
    async with event:
        # the groups the API resolved when it accepted the boot (absent before they existed)
        groups = (row["request_spec"] or {}).get("security_groups")
        vifs = await host.network.allocate(instance_uuid, row["project_id"], host.name, requested, groups)
        records = [vif_record(v) for v in vifs]
        await SET_NETWORK_INFO(host.pool, instance_uuid, msgspec.json.encode(records).decode())
        await host.hooks.pre("network_info", row, network_info=records)
        if host.real_guests:
            for bridge in dict.fromkeys(v.bridge for v in vifs if v.bridge):
                await host.bridges.ensure(bridge)
            # Here, beside the disks being prepared, not after them: the wait overlaps.
            await host.ports_ready([v.port_id for v in vifs])
    return vifs


async def _block_devices(host: Host, row: asyncpg.Record, flavor: Flavor,
                         event: contextlib.AbstractAsyncContextManager[None], keep_ephemeral: Path | None = None,
                         ) -> tuple[list[disks.Disk], BootFiles, dict[str, str], list[str]]:
    """The guest's disks (root first), how it boots, its image's properties and the volume
    attachments to complete once it runs. An instance without an image boots from its root
    volume (boot_index 0, vda); the properties of the image that volume was made from (its
    volume_image_metadata) name the kernel, ramdisk and command line, as in Nova."""
    instance_uuid = str(row["uuid"])
    async with event:
        volumes = await build_volumes.connect(host, row)
        if row["image_ref"]:
            base, properties = await _base_image(host, row)
        elif volumes.root is not None:
            base, properties = None, dict(volumes.root.image_metadata)
        else:
            raise errors.InvalidInput("The instance has neither an image nor a root volume to boot from.")
        boot = await boot_files(host, properties, row["project_id"]) if host.real_guests else BootFiles()
        local = await disks.prepare(host.instances_root, instance_uuid, base, root_gb=flavor.root_gb,
                                    ephemeral_gb=flavor.ephemeral_gb, swap_mb=flavor.swap,
                                    keep_ephemeral=keep_ephemeral)
        root, others = (volumes.disks[:1], volumes.disks[1:]) if base is None else ([], volumes.disks)
        return root + local + others, boot, properties, volumes.to_complete


def needs_config_drive(requested: str | None, properties: dict[str, str], forced: bool) -> bool:
    """Whether the guest gets a config drive: asked for, mandatory for its image, or forced."""
    return forced or requested == CONFIG_DRIVE_SET or properties.get(IMG_CONFIG_DRIVE) == "mandatory"


async def _base_image(host: Host, row: asyncpg.Record) -> tuple[Path, dict[str, str]]:
    """The instance's image in this host's cache, and the image's properties. As in Nova, the
    image service is asked only when the image is not cached yet: the properties otherwise
    are those the API read when it accepted the request (its spec keeps them), so an image
    changed or deleted since does not change what the instance boots. A rebuild names another
    image than its spec: that one is asked for."""
    spec = row["request_spec"] or {}
    base = host.images.cached(row["image_ref"])
    if base is not None and spec.get("image_id") == row["image_ref"]:
        return base, dict(spec.get("image_properties") or {})
    image = await host.image.get(row["image_ref"], row["project_id"], is_admin=True)
    return await host.images.fetch(image), dict(image.properties)


async def boot_files(host: Host, properties: dict[str, str], project_id: str) -> BootFiles:
    """The kernel and ramdisk an image names, fetched into the image cache like any image."""
    kernel_id, ramdisk_id = properties.get("kernel_id"), properties.get("ramdisk_id")
    if not kernel_id:
        return BootFiles()  # boots from its disk

    async def cached(image_id: str, what: str) -> str:
        try:
            image = await host.image.get(image_id, project_id, is_admin=True)
        except errors.NotFound:
            raise errors.InvalidInput(f"The image's {what} image {image_id} does not exist.") from None
        return str(await host.images.fetch(image))

    return BootFiles(kernel=await cached(kernel_id, "kernel"),
                     initrd=await cached(ramdisk_id, "ramdisk") if ramdisk_id else "",
                     cmdline=properties.get("os_command_line") or DEFAULT_CMDLINE)


def drive_content(row: asyncpg.Record | dict[str, Any], vifs: list[Vif]) -> DriveContent:
    """What the config drive tells the guest, from its instance row and its ports."""
    user_data = None
    if row["user_data"] is not None:
        try:  # the API checked it is base64 and kept it as it came; the guest gets the bytes
            user_data = base64.b64decode(row["user_data"])
        except (binascii.Error, ValueError):
            raise errors.InvalidInput("the instance's user_data is not valid base64") from None
    nics = []
    for vif in vifs:
        ip = next((ip for ip in vif.ips if ip.version == 4), None)
        if ip is None:
            continue  # network_data describes static IPv4 only, for now
        try:
            netmask = str(ipaddress.IPv4Network(ip.cidr).netmask)
        except ValueError:
            raise errors.InvalidInput(f"port {vif.port_id} has a bad subnet CIDR {ip.cidr!r}") from None
        nics.append(Nic(port_id=vif.port_id, mac=vif.mac_address, ip_address=ip.address, netmask=netmask,
                        network_id=vif.network_id, gateway=ip.gateway or "", mtu=vif.mtu))
    return DriveContent(uuid=str(row["uuid"]), name=row["display_name"], project_id=row["project_id"],
                        hostname=row["hostname"] or "", launch_index=row["launch_index"] or 0,
                        availability_zone=row["availability_zone"] or "nova", user_data=user_data,
                        public_keys=({row.get("key_name") or "default": row["key_data"]}
                                     if row.get("key_data") else {}),
                        nics=tuple(nics))


async def rebuild(host: Host, instance_uuid: str, request_id: str, *, preserve_ephemeral: bool = False) -> None:
    """The guest and its disks made anew from the image the row now names, on this host,
    with its ports and claims kept (and its ephemeral disk, when `preserve_ephemeral`). A
    guest that was stopped is stopped again afterwards, as Nova leaves it. A failure is
    ERROR with the reason."""
    row = await host.pool.fetchrow(IQ.get, instance_uuid)
    if row is None or row["task_state"] != TaskState.REBUILDING or row["host"] != host.name:
        log.info("rebuild skipped", task_state=row["task_state"] if row else None)
        await instances.finish_action(host.pool, instance_uuid, request_id)
        return
    was_stopped = row["vm_state"] == VmState.STOPPED
    await host.notify("instance.rebuild.start", instance_uuid)
    try:
        async with instances.event(host.pool, instance_uuid, request_id, "compute_rebuild_instance", host.name):
            await host.hypervisor.remove(domain_name(instance_uuid))
            kept = disks.set_aside_ephemeral(host.instances_root, instance_uuid) if preserve_ephemeral else None
            await disks.remove_instance_dir(host.instances_root, instance_uuid)
            # A stopped guest is powered off again without ever showing ACTIVE and idle.
            await spawn(host, row, request_id, keep_ephemeral=kept)
            await _activate(host, instance_uuid, TaskState.POWERING_OFF if was_stopped else None, None)
            if was_stopped:
                await host.hypervisor.power_off(domain_name(instance_uuid), timeout=0)
                await instances.set_state(host.pool, instance_uuid, vm_state=VmState.STOPPED, task_state=None,
                                          power_state=PowerState.SHUTDOWN,
                                          expected_task_state=TaskState.POWERING_OFF)
    except DeleteRaced:
        await terminate(host, instance_uuid, request_id)
        return
    except Exception as exc:
        reason = describe(exc)
        log.error("rebuild failed", reason=reason)
        await instances.set_error(host.pool, instance_uuid, f"Rebuild failed: {reason}", host=host.name,
                                  code=exc.status if isinstance(exc, errors.NovaAsyncError) else 500,
                                  details="".join(traceback.format_exception(exc)))
        await instances.finish_action(host.pool, instance_uuid, request_id, "Error")
        await host.notify("instance.rebuild.error", instance_uuid, reason=reason)
        return
    log.info("instance rebuilt", stopped=was_stopped)
    await instances.finish_action(host.pool, instance_uuid, request_id)
    await host.notify("instance.rebuild.end", instance_uuid)


async def _reschedule(host: Host, instance_uuid: str, request_id: str, exc: Exception,
                      alternates: list[Destination]) -> bool:
    """Clean up here and hand the build to the conductor's next alternate; False when the
    instance can no longer be handed back (a delete took it over) or the clean-up failed."""
    reason = describe(exc)
    problems = await teardown(host, instance_uuid, keep_allocations=True)
    if not problems:  # the guest is gone: its volumes can be let go of here
        row = await host.pool.fetchrow(IQ.get, instance_uuid)
        problems = await build_volumes.hand_over(host, instance_uuid, row["project_id"]) if row else []
    if problems:
        log.error("build failed and this host could not clean up; not rescheduling", reason=reason,
                  problems=problems)
        return False
    if await host.pool.fetchval(IQ.release_for_reschedule, instance_uuid, host.name) is None:
        return False
    log.warning("build failed; rescheduling on an alternate host", reason=reason,
                alternates=[a.host for a in alternates])
    metrics.build_finished("rescheduled")
    await host.conductor.reschedule(RescheduleInstance(instance_uuid=instance_uuid, failed_host=host.name,
                                                       reason=reason, alternates=alternates),
                                    RequestContext(user_id="", project_id="", request_id=request_id))
    return True


async def _fail(host: Host, instance_uuid: str, request_id: str, exc: Exception) -> None:
    reason = describe(exc)
    log.error("build failed", reason=reason)
    problems = await teardown(host, instance_uuid)
    current = await host.pool.fetchrow(IQ.get, instance_uuid)
    if current is not None and current["task_state"] == TaskState.DELETING:
        await terminate(host, instance_uuid, request_id)
        return
    if not problems:  # the guest is gone: its volumes are let go of (made ones deleted, as Nova)
        problems = await build_volumes.release_failed(host, instance_uuid)
    if current is not None:
        details = "".join(traceback.format_exception(exc))
        if problems:
            details = "clean-up left behind: " + "; ".join(problems) + "\n" + details
        await instances.set_error(host.pool, instance_uuid, reason, host=host.name,
                                  code=exc.status if isinstance(exc, errors.NovaAsyncError) else 500,
                                  details=details)
        metrics.build_finished("error")
    # The record first: whoever hears the notification may read it at once.
    await instances.finish_action(host.pool, instance_uuid, request_id, None)
    await host.notify("instance.create.error", instance_uuid, reason=reason, request_id=request_id,
                      exception=type(exc).__name__)
