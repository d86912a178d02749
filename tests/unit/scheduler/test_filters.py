"""Host filters, and how their rejections are summed up for NoValidHost."""

import pytest

from nova_async.config import ConfigError, SchedulerSettings
from nova_async.scheduler import filters
from nova_async.scheduler.host_state import HostState
from nova_async.scheduler.messages import RequestSpec

SPEC = RequestSpec(project_id="p", user_id="u", flavor_id="f", vcpus=1, memory_mb=512, root_gb=1)


def host(name="h", **kw) -> HostState:
    return HostState(uuid=name, host=name, node=name, **kw)


@pytest.mark.parametrize("state, passes, why", [
    ({}, True, None),
    ({"disabled": True}, False, "service disabled"),
    ({"forced_down": True}, False, "service forced down"),
    ({"up": False}, False, "service down"),
    ({"has_service": False, "up": False}, False, "no compute service"),
])
def test_compute_filter(state, passes, why):
    f = filters.ComputeFilter()
    h = host(**state)
    assert f.host_passes(h, SPEC) is passes
    if not passes:
        assert f.why(h, SPEC) == why


@pytest.mark.parametrize("wanted, zone, passes", [
    (None, "nova", True), ("nova", "nova", True), ("edge", "nova", False), ("", "edge", True),
])
def test_availability_zone_filter(wanted, zone, passes):
    spec = RequestSpec(**{**{f: getattr(SPEC, f) for f in SPEC.__struct_fields__},
                          "availability_zone": wanted})
    assert filters.AvailabilityZoneFilter().host_passes(host(zone=zone), spec) is passes


def test_run_reports_each_filter_that_removed_hosts():
    hosts = [host("a"), host("b", disabled=True), host("c", up=False), host("d", up=False),
             host("e", zone="edge")]
    spec = RequestSpec(**{**{f: getattr(SPEC, f) for f in SPEC.__struct_fields__},
                          "availability_zone": "edge"})
    fs = filters.from_settings(SchedulerSettings())
    kept, removed_by = filters.run(fs, hosts, spec)
    assert [h.host for h in kept] == ["e"]
    assert removed_by == ["ComputeFilter removed 3 (2 service down, 1 service disabled)",
                          "AvailabilityZoneFilter removed 1 (not in zone edge)"]


def test_filters_come_from_settings_in_order():
    fs = filters.from_settings(SchedulerSettings(enabled_filters=("AvailabilityZoneFilter",)))
    assert [f.name for f in fs] == ["AvailabilityZoneFilter"]
    with pytest.raises(ConfigError, match="NoSuchFilter"):
        filters.from_settings(SchedulerSettings(enabled_filters=("ComputeFilter", "NoSuchFilter")))
