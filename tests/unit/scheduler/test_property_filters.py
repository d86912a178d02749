"""Filters that compare what the image or flavor asks for with what a host is."""

import pytest

from nova_async.scheduler.filters import ComputeCapabilitiesFilter, ImagePropertiesFilter
from nova_async.scheduler.host_state import HostState
from nova_async.scheduler.messages import RequestSpec


def spec(**kw) -> RequestSpec:
    return RequestSpec(project_id="p", user_id="u", flavor_id="f", vcpus=1, memory_mb=64, root_gb=1, **kw)


QEMU = HostState(uuid="a", host="a", node="a", hypervisor_type="QEMU", vcpus=16, memory_mb=32768)
TEST = HostState(uuid="b", host="b", node="b", hypervisor_type="test", vcpus=4, memory_mb=4096)


@pytest.mark.parametrize("properties, passes", [
    ({}, {"a", "b"}),
    ({"hw_architecture": "x86_64"}, {"a", "b"}),
    ({"architecture": "aarch64"}, set()),
    ({"img_hv_type": "qemu"}, {"a"}),
    ({"hypervisor_type": "kvm"}, set()),
])
def test_image_properties(properties, passes):
    f = ImagePropertiesFilter()
    assert {h.host for h in (QEMU, TEST) if f.host_passes(h, spec(image_properties=properties))} == passes


@pytest.mark.parametrize("extra_specs, passes", [
    ({}, {"a", "b"}),
    ({"capabilities:hypervisor_type": "QEMU"}, {"a"}),
    ({"capabilities:hypervisor_type": "s== test"}, {"b"}),
    ({"capabilities:vcpus": ">= 8"}, {"a"}),
    ({"capabilities:memory_mb": "<= 4096"}, {"b"}),
    ({"capabilities:cpu_arch": "x86_64"}, {"a", "b"}),
    ({"capabilities:gpus": "1"}, set()),
    ({"capabilities:vcpus": ">= lots"}, set()),
    ({"hw:cpu_policy": "dedicated"}, {"a", "b"}),           # not this filter's scope
])
def test_compute_capabilities(extra_specs, passes):
    f = ComputeCapabilitiesFilter()
    assert {h.host for h in (QEMU, TEST) if f.host_passes(h, spec(extra_specs=extra_specs))} == passes
