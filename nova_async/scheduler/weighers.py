"""Host weighers: rank the hosts that passed the filters.

Each weigher gives a raw number per host (free RAM, free VCPU, free disk, instances being
built there now), normalised to 0..1 across the hosts being ranked and multiplied by its
configured multiplier; a host's weight is the sum. Positive multipliers spread instances
over the emptiest hosts, negative ones pack them. The build-failure weigher is not
normalised: each consecutive failed build costs its multiplier, as in Nova, so a failing
host is avoided while others have room. Equal weights keep placement's order, so ties
resolve the same way twice."""

from __future__ import annotations

import operator
from dataclasses import dataclass

from nova_async.config import SchedulerSettings
from nova_async.scheduler.host_state import HostState


@dataclass(frozen=True)
class FreeResourceWeigher:
    name: str
    resource_class: str
    multiplier: float

    def raw(self, hosts: list[HostState]) -> list[float]:
        rc = self.resource_class
        return [float(h.capacity.get(rc, 0) - h.used.get(rc, 0)) for h in hosts]


@dataclass(frozen=True)
class IoOpsWeigher:
    name: str
    multiplier: float

    def raw(self, hosts: list[HostState]) -> list[float]:
        return [float(h.building) for h in hosts]


@dataclass(frozen=True)
class BuildFailureWeigher:
    name: str
    multiplier: float
    normalised = False

    def raw(self, hosts: list[HostState]) -> list[float]:
        return [-float(h.failed_builds) for h in hosts]


Weigher = FreeResourceWeigher | IoOpsWeigher | BuildFailureWeigher


def from_settings(settings: SchedulerSettings) -> list[Weigher]:
    weighers: list[Weigher] = [
        FreeResourceWeigher("RAMWeigher", "MEMORY_MB", settings.ram_weight_multiplier),
        FreeResourceWeigher("CPUWeigher", "VCPU", settings.cpu_weight_multiplier),
        FreeResourceWeigher("DiskWeigher", "DISK_GB", settings.disk_weight_multiplier),
        IoOpsWeigher("IoOpsWeigher", settings.io_ops_weight_multiplier),
        BuildFailureWeigher("BuildFailureWeigher", settings.build_failure_weight_multiplier)]
    return [w for w in weighers if w.multiplier]


def order(weighers: list[Weigher], hosts: list[HostState]) -> list[HostState]:
    """Hosts best first.

    Weighed a column at a time (each weigher's numbers for every host), as this runs once
    per instance placed, over every candidate host. A column that is the same for every
    host (normalised: all zeros) adds nothing and is skipped."""
    if len(hosts) < 2:
        return list(hosts)
    totals: list[float] | None = None
    for w in weighers:
        column = w.raw(hosts)
        lo, hi = min(column), max(column)
        if getattr(w, "normalised", True):
            if hi == lo:
                continue
            span, multiplier = hi - lo, w.multiplier
            column = [multiplier * ((v - lo) / span) for v in column]
        elif lo == hi == 0.0:
            continue
        else:
            multiplier = w.multiplier
            column = [multiplier * v for v in column]
        totals = column if totals is None else list(map(operator.add, totals, column))
    if totals is None:
        return list(hosts)
    # reverse keeps equal weights in placement's order, as an ascending sort would
    return [hosts[i] for i in sorted(range(len(hosts)), key=totals.__getitem__, reverse=True)]
