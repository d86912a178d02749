"""Host weighers: rank the hosts that passed the filters.

Each weigher gives a raw number per host (free RAM, free VCPU, free disk, instances being
built there now), normalised to 0..1 across the hosts being ranked and multiplied by its
configured multiplier; a host's weight is the sum. Positive multipliers spread instances
over the emptiest hosts, negative ones pack them. The build-failure weigher is not
normalised: each consecutive failed build costs its multiplier, as in Nova, so a failing
host is avoided while others have room. Equal weights keep placement's order, so ties
resolve the same way twice."""

from __future__ import annotations

from dataclasses import dataclass

from nova_async.config import SchedulerSettings
from nova_async.scheduler.host_state import HostState


@dataclass(frozen=True)
class FreeResourceWeigher:
    name: str
    resource_class: str
    multiplier: float

    def raw(self, host: HostState) -> float:
        return float(host.free(self.resource_class))


@dataclass(frozen=True)
class IoOpsWeigher:
    name: str
    multiplier: float

    def raw(self, host: HostState) -> float:
        return float(host.building)


@dataclass(frozen=True)
class BuildFailureWeigher:
    name: str
    multiplier: float
    normalised = False

    def raw(self, host: HostState) -> float:
        return -float(host.failed_builds)


Weigher = FreeResourceWeigher | IoOpsWeigher | BuildFailureWeigher


def from_settings(settings: SchedulerSettings) -> list[Weigher]:
    weighers: list[Weigher] = [
        FreeResourceWeigher("RAMWeigher", "MEMORY_MB", settings.ram_weight_multiplier),
        FreeResourceWeigher("CPUWeigher", "VCPU", settings.cpu_weight_multiplier),
        FreeResourceWeigher("DiskWeigher", "DISK_GB", settings.disk_weight_multiplier),
        IoOpsWeigher("IoOpsWeigher", settings.io_ops_weight_multiplier),
        BuildFailureWeigher("BuildFailureWeigher", settings.build_failure_weight_multiplier)]
    return [w for w in weighers if w.multiplier]


def _normalise(values: list[float]) -> list[float]:
    lo, hi = min(values), max(values)
    if hi == lo:
        return [0.0] * len(values)
    return [(v - lo) / (hi - lo) for v in values]


def order(weighers: list[Weigher], hosts: list[HostState]) -> list[HostState]:
    """Hosts best first."""
    if len(hosts) < 2:
        return list(hosts)
    totals = [0.0] * len(hosts)
    for w in weighers:
        raw = [w.raw(h) for h in hosts]
        for i, value in enumerate(_normalise(raw) if getattr(w, "normalised", True) else raw):
            totals[i] += w.multiplier * value
    ranked = sorted(range(len(hosts)), key=lambda i: -totals[i])
    return [hosts[i] for i in ranked]
