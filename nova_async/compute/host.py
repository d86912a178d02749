"""Everything one compute host works with, in one place for the build and terminate steps.

A process runs one real host or several simulated ones; each has its own name, libvirt
connection and placement provider, and they share the databases, the bus and the image
cache. Instances are in the host's cell's database; the service and compute node rows are
in the API database, beside the host mappings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from nova_async.bus import Bus
from nova_async.common import errors
from nova_async.compute.disks import ImageCache
from nova_async.compute.hypervisor import Hypervisor
from nova_async.compute.plumbing import Bridges
from nova_async.conductor.client import ConductorClient
from nova_async.dataplane.client import DataplaneClient
from nova_async.db.pool import Pool
from nova_async.hooks.runner import NO_HOOKS, Hooks
from nova_async.image.client import ImageClient
from nova_async.network.client import NetworkClient
from nova_async.notifications.emitter import Emitter, InstanceNotifier
from nova_async.placement.client import PlacementClient
from nova_async.volume.client import VolumeClient

log = structlog.get_logger("compute")


def describe(exc: BaseException) -> str:
    """The reason a user is shown: our errors carry one; anything else is named by its type."""
    if isinstance(exc, errors.NovaAsyncError):
        return exc.message
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class GuestTimeouts:
    shutdown: float = 60.0       # a stop waits this long for the guest to power off on ACPI
    soft_reboot: float = 120.0   # a soft reboot waits this long before rebooting hard


@dataclass
class Host:
    name: str
    hypervisor: Hypervisor
    pool: Pool          # its cell's database: the instances it builds and runs
    api_pool: Pool      # the API database: its service and compute node rows
    bus: Bus
    images: ImageCache
    instances_root: Path
    disk_gb: int = 0            # fixed size for simulated hosts; 0 = measure instances_root
    node_uuid: str = ""         # set at registration: the compute node and its provider
    failed_builds: bool = True  # the node's failed-build count may be non-zero (reset on a success)
    service_id: str = ""
    domain_type: str = "test"   # set at registration, from what the hypervisor is
    timeouts: GuestTimeouts = field(default_factory=GuestTimeouts)
    # This host's data plane serves its guests' ports (dataplane/client.served): a real guest
    # starts only once DHCP and firewall have them.
    dataplane: bool = False
    force_config_drive: bool = False    # every real guest gets a config drive ([compute])
    # seconds a shelved server stays on this host before it is offloaded ([compute]
    # shelved_offload_time): 0 at once, -1 never
    shelved_offload_time: float = 0.0
    hooks: Hooks = NO_HOOKS     # pre_build, network_info and post_build run here
    notifications: bool = True   # [notifications] enabled: versioned notifications are sent
    network: NetworkClient = field(init=False)
    image: ImageClient = field(init=False)
    placement: PlacementClient = field(init=False)
    conductor: ConductorClient = field(init=False)
    bridges: Bridges = field(init=False)
    volumes: VolumeClient = field(init=False)
    emitter: Emitter = field(init=False)
    notifier: InstanceNotifier = field(init=False)

    def __post_init__(self) -> None:
        self.network = NetworkClient(self.bus)
        self.image = ImageClient(self.bus)
        self.placement = PlacementClient(self.bus)
        self.conductor = ConductorClient(self.bus)
        self.bridges = Bridges()
        self.volumes = VolumeClient(self.bus)
        self.dataplane_client = DataplaneClient(self.bus)
        self.emitter = Emitter(self.bus, "nova-compute", self.name, enabled=self.notifications)
        self.notifier = InstanceNotifier(self.emitter, self.pool)

    @property
    def real_guests(self) -> bool:
        """QEMU/KVM guests: they boot kernels, read config drives, print on a console and
        need bridges. libvirt's test driver has none of that, so simulated hosts skip it."""
        return self.domain_type in ("qemu", "kvm")

    async def ports_ready(self, port_ids: list[str]) -> None:
        """Before a real guest starts on these ports: wait until this host's data plane serves
        them as the database has them now (DHCP entries, firewall rules), so that its first
        packet is answered. A data plane that cannot says why, and the build fails with it."""
        if self.dataplane and self.real_guests and port_ids:
            await self.dataplane_client.ports_ready(self.name, port_ids)

    async def notify(self, event_type: str, instance_uuid: str, **details: Any) -> None:
        """Nova's versioned notification `event_type` (instance.create.end, …) about the
        instance as it is now (notifications/emitter.py); never fails the work."""
        await self.notifier.notify(event_type, instance_uuid, **details)
