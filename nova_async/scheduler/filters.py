"""Host filters: yes/no questions about each host, asked in the configured order.

A filter is anything with a `name`, `host_passes(host, spec)` and `why(host, spec)` (a few
words on a rejected host, gathered into the NoValidHost message so a user sees which filter
removed which hosts and for what). Filters see only the host state and the request spec;
resource amounts were already settled by placement."""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from nova_async.config import ConfigError, SchedulerSettings
from nova_async.scheduler.host_state import HostState
from nova_async.scheduler.messages import RequestSpec


class Filter(Protocol):
    name: str

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool: ...

    def why(self, host: HostState, spec: RequestSpec) -> str: ...


class ComputeFilter:
    """The host's compute service must exist, be enabled, not forced down and heartbeating."""

    name = "ComputeFilter"

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        return host.has_service and not host.disabled and not host.forced_down and host.up

    def why(self, host: HostState, spec: RequestSpec) -> str:
        if not host.has_service:
            return "no compute service"
        if host.disabled:
            return "service disabled"
        if host.forced_down:
            return "service forced down"
        return "service down"


class AvailabilityZoneFilter:
    """When the request names an availability zone, the host must be in it."""

    name = "AvailabilityZoneFilter"

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        return not spec.availability_zone or host.zone == spec.availability_zone

    def why(self, host: HostState, spec: RequestSpec) -> str:
        return f"not in zone {spec.availability_zone}"


class SameHostFilter:
    """`same_host` hint: only the hosts the named instances are on."""

    name = "SameHostFilter"

    def __init__(self, hosts: set[str]) -> None:
        self.hosts = hosts

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        return host.host in self.hosts

    def why(self, host: HostState, spec: RequestSpec) -> str:
        return "not a host of the same_host instances"


class DifferentHostFilter:
    """`different_host` hint: none of the hosts the named instances are on."""

    name = "DifferentHostFilter"

    def __init__(self, hosts: set[str]) -> None:
        self.hosts = hosts

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        return host.host not in self.hosts

    def why(self, host: HostState, spec: RequestSpec) -> str:
        return "holds a different_host instance"


def for_hints(spec: RequestSpec, hosts_of: dict[str, str | None]) -> list[Filter]:
    """The per-request filters the scheduler hints ask for (`hosts_of`: instance → host)."""
    chosen: list[Filter] = []
    for hint, cls in (("same_host", SameHostFilter), ("different_host", DifferentHostFilter)):
        uuids = spec.scheduler_hints.get(hint)
        if uuids:
            chosen.append(cls({h for u in uuids if (h := hosts_of.get(u))}))
    return chosen


AVAILABLE: dict[str, type] = {cls.name: cls for cls in (ComputeFilter, AvailabilityZoneFilter)}


def from_settings(settings: SchedulerSettings) -> list[Filter]:
    unknown = [n for n in settings.enabled_filters if n not in AVAILABLE]
    if unknown:
        raise ConfigError(f"scheduler.enabled_filters: unknown filter(s) {', '.join(unknown)}; "
                          f"known: {', '.join(AVAILABLE)}")
    return [AVAILABLE[n]() for n in settings.enabled_filters]


def run(filters: list[Filter], hosts: list[HostState],
        spec: RequestSpec) -> tuple[list[HostState], list[str]]:
    """The hosts every filter lets through, and one line per filter that removed any."""
    removed_by: list[str] = []
    for f in filters:
        kept, reasons = [], Counter()
        for host in hosts:
            if f.host_passes(host, spec):
                kept.append(host)
            else:
                reasons[f.why(host, spec)] += 1
        if reasons:
            removed = len(hosts) - len(kept)
            detail = ", ".join(reason if len(reasons) == 1 else f"{n} {reason}"
                               for reason, n in reasons.most_common())
            removed_by.append(f"{f.name} removed {removed} ({detail})")
        hosts = kept
    return hosts, removed_by
