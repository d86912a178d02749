"""An instance's flavor is stored once (instances.flavor); its request spec is stored
without it and read back whole."""

from __future__ import annotations

import pytest

from nova_async.common import errors
from nova_async.scheduler.messages import Flavor, RequestSpec

FLAVOR = {"id": "f1", "name": "m1.small", "vcpus": 2, "memory_mb": 1024, "root_gb": 10,
          "ephemeral_gb": 1, "swap": 512, "extra_specs": {"hw:cpu_policy": "dedicated"}}
SPEC = RequestSpec(project_id="p", user_id="u", flavor_id="f1", vcpus=2, memory_mb=1024, root_gb=10,
                   ephemeral_gb=1, swap_mb=512, extra_specs={"hw:cpu_policy": "dedicated"}, image_id="img",
                   scheduler_hints={"same_host": ["x"]})


def test_a_stored_spec_holds_no_flavor_and_reads_back_whole_with_the_rows_flavor():
    stored = SPEC.to_stored()
    assert not {"flavor_id", "vcpus", "memory_mb", "root_gb", "ephemeral_gb", "swap_mb", "extra_specs"} & set(stored)
    assert RequestSpec.from_stored(stored, FLAVOR) == SPEC
    assert SPEC.resources() == {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 12}


def test_a_resize_reads_the_same_stored_spec_with_the_new_flavor():
    bigger = {**FLAVOR, "id": "f2", "vcpus": 4, "extra_specs": {}}
    resized = RequestSpec.from_stored(SPEC.to_stored(), bigger)
    assert (resized.flavor_id, resized.vcpus, resized.extra_specs, resized.image_id) == ("f2", 4, {}, "img")


def test_a_spec_stored_before_0042_still_reads_its_flavor_from_the_row():
    old = {**SPEC.to_stored(), "flavor_id": "gone", "vcpus": 99}
    assert RequestSpec.from_stored(old, FLAVOR) == SPEC


@pytest.mark.parametrize("broken", [None, [], {**FLAVOR, "vcpus": 0}, {**FLAVOR, "memory_mb": True},
                                    {**FLAVOR, "swap": -1}, {k: v for k, v in FLAVOR.items() if k != "root_gb"}])
def test_a_flavor_no_host_could_build_is_invalid_input(broken):
    with pytest.raises(errors.InvalidInput):
        Flavor.from_row(broken)
