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


class AggregateMultiTenancyIsolation:
    """A host in an aggregate with `filter_tenant_id` metadata (a comma-separated list; also
    any `filter_tenant_id*` key) takes only those projects' instances."""

    name = "AggregateMultiTenancyIsolation"

    @staticmethod
    def _allowed(host: HostState) -> set[str] | None:
        found: set[str] | None = None
        for metadata in host.aggregate_metadata:
            for key, value in metadata.items():
                if key.startswith("filter_tenant_id"):
                    found = (found or set()) | {v.strip() for v in str(value).split(",") if v.strip()}
        return found

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        allowed = self._allowed(host)
        return allowed is None or spec.project_id in allowed

    def why(self, host: HostState, spec: RequestSpec) -> str:
        return f"reserved for other projects than {spec.project_id}"


class AggregateInstanceExtraSpecsFilter:
    """Flavor extra specs `aggregate_instance_extra_specs:KEY=VALUE` must be matched by the
    metadata of one of the host's aggregates (a metadata value may list several, with commas)."""

    name = "AggregateInstanceExtraSpecsFilter"
    SCOPE = "aggregate_instance_extra_specs:"

    def _wanted(self, spec: RequestSpec) -> dict[str, str]:
        return {k.removeprefix(self.SCOPE): v for k, v in spec.extra_specs.items() if k.startswith(self.SCOPE)}

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        for key, value in self._wanted(spec).items():
            offered = {v.strip() for md in host.aggregate_metadata if key in md
                       for v in str(md[key]).split(",")}
            if str(value).strip() not in offered:
                return False
        return True

    def why(self, host: HostState, spec: RequestSpec) -> str:
        return "its aggregates' metadata does not match the flavor's aggregate_instance_extra_specs"


ARCH = "x86_64"   # the only architecture nova-async's hosts run (QEMU x86_64 / the test driver)
_HV_NAMES = {"qemu": "QEMU", "kvm": "KVM", "test": "test"}


class ImagePropertiesFilter:
    """The image's `hw_architecture` (or legacy `architecture`) and `img_hv_type` (or
    `hypervisor_type`) must be what the host runs."""

    name = "ImagePropertiesFilter"

    @staticmethod
    def _wanted(spec: RequestSpec) -> tuple[str | None, str | None]:
        p = spec.image_properties
        arch = p.get("hw_architecture") or p.get("architecture")
        hv = p.get("img_hv_type") or p.get("hypervisor_type")
        return (arch.lower() if arch else None), (hv.lower() if hv else None)

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        arch, hv = self._wanted(spec)
        if arch and arch not in (ARCH, "x86-64", "amd64"):
            return False
        return not hv or _HV_NAMES.get(hv, hv).lower() == host.hypervisor_type.lower()

    def why(self, host: HostState, spec: RequestSpec) -> str:
        arch, hv = self._wanted(spec)
        return f"does not run {hv or ''} {arch or ''}".replace("  ", " ").strip() + " guests"


class ComputeCapabilitiesFilter:
    """Flavor extra specs `capabilities:NAME` must match what the host reports: hypervisor_type,
    cpu_arch, vcpus or memory_mb. A value may be a comparison as Nova writes them:
    `>= 8`, `<= 4096`, `== 16`, `s== QEMU`, `<in> Q`, or a plain value that must be equal."""

    name = "ComputeCapabilitiesFilter"
    SCOPE = "capabilities:"

    @staticmethod
    def _capabilities(host: HostState) -> dict[str, str]:
        return {"hypervisor_type": host.hypervisor_type, "cpu_arch": ARCH, "vcpus": str(host.vcpus),
                "memory_mb": str(host.memory_mb)}

    @staticmethod
    def _matches(have: str | None, wanted: str) -> bool:
        if have is None:
            return False
        op, _, operand = wanted.strip().partition(" ")
        numeric = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b}
        try:
            if op in numeric:
                return numeric[op](float(have), float(operand))
        except ValueError:
            return False
        if op == "s==":
            return have == operand
        if op == "<in>":
            return operand in have
        return have.lower() == wanted.strip().lower()

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        caps = self._capabilities(host)
        return all(self._matches(caps.get(k.removeprefix(self.SCOPE)), v)
                   for k, v in spec.extra_specs.items() if k.startswith(self.SCOPE))

    def why(self, host: HostState, spec: RequestSpec) -> str:
        return "lacks the flavor's capabilities"


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


class SameCellFilter:
    """A resize stays in its server's cell (as in Nova, which moves servers across cells only
    when told to)."""

    name = "SameCellFilter"

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        return spec.cell is None or host.cell == spec.cell

    def why(self, host: HostState, spec: RequestSpec) -> str:
        return "in another cell"


class RequestedHostFilter:
    """A cold migration to the host its admin named: that host only (if it passes the rest)."""

    name = "RequestedHostFilter"

    def host_passes(self, host: HostState, spec: RequestSpec) -> bool:
        return spec.requested_host is None or host.host == spec.requested_host

    def why(self, host: HostState, spec: RequestSpec) -> str:
        return "not the requested host"


def for_request(spec: RequestSpec, hosts_of: dict[str, str | None]) -> list[Filter]:
    """The per-request filters the scheduler hints, the spec's cell and its requested host ask
    for (`hosts_of`: instance → host)."""
    chosen: list[Filter] = [SameCellFilter()] if spec.cell else []
    if spec.requested_host:
        chosen.append(RequestedHostFilter())
    for hint, cls in (("same_host", SameHostFilter), ("different_host", DifferentHostFilter)):
        uuids = spec.scheduler_hints.get(hint)
        if uuids:
            chosen.append(cls({h for u in uuids if (h := hosts_of.get(u))}))
    return chosen


AVAILABLE: dict[str, type] = {cls.name: cls for cls in (
    ComputeFilter, AvailabilityZoneFilter, AggregateMultiTenancyIsolation, AggregateInstanceExtraSpecsFilter,
    ImagePropertiesFilter, ComputeCapabilitiesFilter)}


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
