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
