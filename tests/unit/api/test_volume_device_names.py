"""The device name an attached volume gets: after the flavor's local disks (root vda,
ephemeral, swap, as a build lays them out) and the server's other volumes."""

from __future__ import annotations

import pytest

from nova_async.api.volume_attachments import _device
from nova_async.common import errors

PLAIN = {"ephemeral_gb": 0, "swap": 0}


@pytest.mark.parametrize("flavor, taken, expected", [
    (PLAIN, set(), "/dev/vdb"),
    ({"ephemeral_gb": 1, "swap": 0}, set(), "/dev/vdc"),
    ({"ephemeral_gb": 0, "swap": 64}, set(), "/dev/vdc"),
    ({"ephemeral_gb": 1, "swap": 64}, set(), "/dev/vdd"),
    (PLAIN, {"vda", "vdb", "vdd"}, "/dev/vdc"),                  # a gap a detach left is used again
    (PLAIN, {f"vd{c}" for c in "abcdefghijklmnopqrstuvwxyz"}, "/dev/vdaa"),
])
def test_next_free_device(flavor, taken, expected):
    assert _device(flavor, taken, None) == expected


def test_a_requested_virtio_name_is_used_when_free():
    assert _device(PLAIN, {"vdb"}, "/dev/vdf") == "/dev/vdf"
    with pytest.raises(errors.Conflict):
        _device(PLAIN, {"vdb"}, "/dev/vdb")
    with pytest.raises(errors.Conflict):
        _device({"ephemeral_gb": 1, "swap": 0}, set(), "/dev/vdb")   # the ephemeral disk's


def test_another_bus_name_means_the_next_one():
    # libvirt's guests see virtio disks; as Nova's libvirt driver, sdX or xvdX is not honoured
    assert _device(PLAIN, set(), "/dev/sdb") == "/dev/vdb"
