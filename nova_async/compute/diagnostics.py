"""Server diagnostics on the compute host: what the hypervisor knows about a running guest.

Everything is read in one trip to the libvirt threads (state, memory, each vCPU's time,
each disk's and each interface's counters, the balloon's statistics), from the domain as
it runs now. Devices come from its live XML: disks by their target (vda), interfaces by
their tap, each with its MAC. A counter the driver cannot give (libvirt's test driver has
no balloon; a device unplugged meanwhile) is left out or zero rather than failing the
whole answer.

A guest that is not running has no statistics: Nova answers 409 then, and so do we. Its
uptime is the age of its QEMU process (libvirt's pid file), which a stop/start resets.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import libvirt

from nova_async.common import errors
from nova_async.common.states import PowerState
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.host import Host
from nova_async.compute.hypervisor import GuestGone
from nova_async.compute.messages import CpuStats, Diagnostics, DiskStats, GetDiagnostics, NicStats

# The power state each libvirt domain state is (shown by Nova's name, PowerState.label).
_STATE = {
    libvirt.VIR_DOMAIN_NOSTATE: PowerState.NOSTATE,
    libvirt.VIR_DOMAIN_RUNNING: PowerState.RUNNING,
    libvirt.VIR_DOMAIN_BLOCKED: PowerState.RUNNING,
    libvirt.VIR_DOMAIN_PAUSED: PowerState.PAUSED,
    libvirt.VIR_DOMAIN_SHUTDOWN: PowerState.SHUTDOWN,
    libvirt.VIR_DOMAIN_SHUTOFF: PowerState.SHUTDOWN,
    libvirt.VIR_DOMAIN_CRASHED: PowerState.CRASHED,
    libvirt.VIR_DOMAIN_PMSUSPENDED: PowerState.SUSPENDED,
}
_RUNNING = (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_BLOCKED)
QEMU_PID_DIR = Path("/run/libvirt/qemu")


@dataclass
class _Raw:
    """What one trip to libvirt brought back, before it becomes a message."""

    state: int
    max_kib: int
    used_kib: int
    cpus: list[CpuStats] = field(default_factory=list)
    nics: list[NicStats] = field(default_factory=list)
    disks: list[DiskStats] = field(default_factory=list)
    memory_stats: dict[str, int] = field(default_factory=dict)
    config_drive: bool = False


def _optional(read, default, *args):
    try:
        return read(*args)
    except libvirt.libvirtError:
        return default


def _read(dom: libvirt.virDomain) -> _Raw:
    state, max_kib, used_kib, _ncpus, _cpu_time = dom.info()
    raw = _Raw(state=state, max_kib=max_kib, used_kib=used_kib)
    if state not in _RUNNING:
        return raw
    devices = ET.fromstring(dom.XMLDesc(0)).find("devices")
    vcpus = _optional(dom.vcpus, None)
    if vcpus:
        raw.cpus = [CpuStats(id=number, time=cpu_time) for number, _state, cpu_time, _cpu in vcpus[0]]
    raw.memory_stats = {k: int(v) for k, v in _optional(dom.memoryStats, {}).items()}
    for disk in devices.findall("disk") if devices is not None else []:
        target = disk.find("target")
        dev = target.get("dev") if target is not None else None
        if not dev:
            continue
        raw.config_drive |= disk.get("device") == "cdrom"
        rd_req, rd_bytes, wr_req, wr_bytes, errs = _optional(dom.blockStats, (0, 0, 0, 0, 0), dev)
        raw.disks.append(DiskStats(device=dev, read_bytes=rd_bytes, read_requests=rd_req, write_bytes=wr_bytes,
                                   write_requests=wr_req, errors_count=max(errs, 0)))
    for iface in devices.findall("interface") if devices is not None else []:
        target, mac = iface.find("target"), iface.find("mac")
        dev = target.get("dev") if target is not None else None
        if not dev:
            continue
        stats = _optional(dom.interfaceStats, (0,) * 8, dev)
        raw.nics.append(NicStats(
            device=dev, mac_address=mac.get("address", "") if mac is not None else "",
            rx_octets=stats[0], rx_packets=stats[1], rx_errors=stats[2], rx_drop=stats[3],
            tx_octets=stats[4], tx_packets=stats[5], tx_errors=stats[6], tx_drop=stats[7]))
    return raw


def _uptime(name: str) -> int | None:
    try:
        started = (QEMU_PID_DIR / f"{name}.pid").stat().st_mtime
    except OSError:
        return None
    return max(0, int(time.time() - started))


async def diagnostics(host: Host, msg: GetDiagnostics) -> Diagnostics:
    instance_uuid = msg.instance_uuid
    name = domain_name(instance_uuid)
    try:
        raw = await host.hypervisor.inspect(name, "read the guest's statistics", _read)
    except GuestGone:
        raise errors.Conflict(f"Instance {instance_uuid} is not running: it has no guest on its host.") from None
    if raw.state not in _RUNNING:
        # Nova's InstanceInvalidState for get_diagnostics: the API answers 409.
        raise errors.Conflict(f"Cannot 'get_diagnostics' instance {instance_uuid} while it is in power_state "
                              f"{_STATE.get(raw.state, PowerState.NOSTATE).label}.")
    # The guest's balloon tells what it holds in host memory (rss); without one, what
    # libvirt says the domain has.
    used_kib = raw.memory_stats.get("rss") or raw.used_kib
    return Diagnostics(
        state=_STATE.get(raw.state, PowerState.NOSTATE).label, driver="libvirt", hypervisor=host.domain_type,
        hypervisor_os="linux", uptime=_uptime(name) if host.real_guests else None,
        config_drive=raw.config_drive, memory_max_kib=raw.max_kib, memory_used_kib=used_kib,
        memory_stats=raw.memory_stats, cpus=raw.cpus, nics=raw.nics, disks=raw.disks)
