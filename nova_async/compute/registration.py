"""A compute host reporting in: its service row, its compute node, its placement provider,
and the heartbeat that keeps the service "up" for the scheduler and the API.

Nova's compute does this in `init_host` plus the resource tracker's periodic update; here
it is one call at start and one UPDATE every `compute.report_interval` seconds. The record
also says what the host runs, for a site upgraded one host at a time (migration 0070)."""

from __future__ import annotations

import shutil
import uuid as uuidlib

import structlog

from nova_async.bus import caps as version_caps
from nova_async.compute import host_setup
from nova_async.compute.host import Host
from nova_async.config import ComputeSettings
from nova_async.db import migrate
from nova_async.db.queries import queries
from nova_async.notifications import payloads
from nova_async.placement.messages import InventoryRecord

log = structlog.get_logger("compute.registration")
Q = queries("compute")

BINARY = "nova-compute"
TOPIC = "compute"
GiB = 1024 ** 3


def inventories(vcpus: int, memory_mb: int, disk_gb: int, c: ComputeSettings) -> dict[str, InventoryRecord]:
    return {
        "VCPU": InventoryRecord(total=vcpus, max_unit=vcpus, allocation_ratio=c.cpu_allocation_ratio),
        "MEMORY_MB": InventoryRecord(total=memory_mb, max_unit=memory_mb,
                                     reserved=min(c.reserved_host_memory_mb, memory_mb),
                                     allocation_ratio=c.ram_allocation_ratio),
        "DISK_GB": InventoryRecord(total=disk_gb, max_unit=disk_gb, allocation_ratio=c.disk_allocation_ratio),
    }


def local_disk_gb(host: Host) -> int:
    """The size of the filesystem holding instance disks (simulated hosts: as configured).

    The whole filesystem, not its free space: placement subtracts what instances use, and
    counting free space too would shrink the inventory by every existing disk at each restart
    (this is also what Nova's libvirt driver reports)."""
    if host.disk_gb:
        return host.disk_gb
    host.instances_root.mkdir(parents=True, exist_ok=True)
    return shutil.disk_usage(host.instances_root).total // GiB


def choose_domain_type(detected: str, virt_type: str, kvm_ok: bool) -> str:
    """The domain type guests get: the test driver's own, else KVM only where it really works
    (or is forced), else QEMU's TCG."""
    if detected == "test":
        return "test"
    if virt_type == "auto":
        return "kvm" if kvm_ok else "qemu"
    return virt_type


async def _domain_type(facts, settings: ComputeSettings) -> str:
    if facts.domain_type == "test":
        return "test"
    kvm_ok = settings.virt_type == "auto" and await host_setup.kvm_works()
    chosen = choose_domain_type(facts.domain_type, settings.virt_type, kvm_ok)
    log.info("guest acceleration chosen", domain_type=chosen, virt_type=settings.virt_type,
             kvm=("works" if kvm_ok else "unusable or not probed"))
    return chosen


async def register(host: Host, settings: ComputeSettings, caps: dict[str, str] | None = None) -> None:
    """The host's service record (with the release it runs and `caps`, the versions of the
    messages it receives: bus/caps.py), its compute node and its placement provider."""
    facts = await host.hypervisor.facts()
    cpu_info = await host.hypervisor.cpu_info()
    domain_type = await _domain_type(facts, settings)
    # What os-hypervisors shows: the acceleration guests really get on this host.
    hypervisor_type = {"kvm": "KVM", "qemu": "QEMU"}.get(domain_type, facts.hypervisor_type)
    disk_gb = local_disk_gb(host)
    async with host.api_pool.acquire() as conn, conn.transaction():
        service = await conn.fetchrow(Q.upsert_service, uuidlib.uuid4(), host.name, BINARY, TOPIC,
                                      version_caps.RELEASE, migrate.shipped_level(), caps or {})
        service_id = service["id"]
        node = await conn.fetchrow(Q.upsert_compute_node, uuidlib.uuid4(), host.name, host.name,
                                   hypervisor_type, facts.hypervisor_version, facts.vcpus,
                                   facts.memory_mb, disk_gb, service_id, cpu_info)
    host.service_id, host.node_uuid = str(service_id), str(node["uuid"])
    await host.emitter.emit("service.create" if service["created"] else "service.update",
                            payloads.service(service))
    host.failed_builds = node["failed_builds"] > 0
    host.domain_type = domain_type
    await host.placement.ensure_provider(host.node_uuid, host.name,
                                         inventories(facts.vcpus, facts.memory_mb, disk_gb, settings))
    log.info("compute host registered", host=host.name, node_uuid=host.node_uuid, vcpus=facts.vcpus,
             memory_mb=facts.memory_mb, disk_gb=disk_gb, hypervisor=hypervisor_type)


async def refresh_inventory(host: Host, settings: ComputeSettings) -> None:
    """Tell placement what the host has now (memory or disk can change under a running host;
    someone may have edited the inventory). Unchanged inventories cost placement nothing."""
    try:
        facts = await host.hypervisor.facts()
        await host.placement.ensure_provider(
            host.node_uuid, host.name, inventories(facts.vcpus, facts.memory_mb, local_disk_gb(host), settings))
    except Exception as exc:  # like a heartbeat: the next round retries
        log.warning("inventory refresh failed", host=host.name, error=str(exc))


async def libvirt_connection(host: Host, connected: bool, reason: str) -> None:
    """The host's service disabled while its libvirt connection is down ("AUTO: Connection to
    libvirt lost: <why>", as Nova writes it), so the scheduler sends nothing there meanwhile;
    enabled again when it is back, unless disabled for another reason. Said when it changes;
    the heartbeat says it again (libvirt_states), for a change the database missed."""
    await libvirt_states([host] if connected else [], [] if connected else [(host, reason)])


async def libvirt_states(connected: list[Host], lost: list[tuple[Host, str]]) -> None:
    try:
        if up := [h.service_id for h in connected if h.service_id]:
            await connected[0].api_pool.execute(Q.enable_after_libvirt, up)
        if down := [(h.service_id, f"AUTO: Connection to libvirt lost: {why}") for h, why in lost if h.service_id]:
            await lost[0][0].api_pool.execute(Q.disable_for_libvirt, [i for i, _ in down], [r for _, r in down])
    except Exception as exc:  # the database is down too: the next heartbeat says it again
        log.warning("could not record the libvirt connections' states", error=str(exc))


async def heartbeat(hosts: list[Host]) -> None:
    """One UPDATE for every host of this process (a thousand simulated hosts beat as one)."""
    if not hosts:
        return
    try:
        await hosts[0].api_pool.execute(Q.heartbeat, [h.service_id for h in hosts])
    except Exception as exc:  # a database blip must not take the hosts down; the next beat retries
        log.warning("heartbeat failed", hosts=len(hosts), error=str(exc))
