"""The lvm-thin backend's commands, exactly as they are run (argv lists, no shell)."""

from __future__ import annotations

import json

import pytest

from nova_async.common import errors
from nova_async.volume.backends import lvm_thin as lt
from nova_async.volume.backends.base import BackendError

VID = "0b6c2f3e-1c1d-4e8a-9a57-3d6f0c1b2a44"
SID = "5d2e1f00-aaaa-4bbb-8ccc-0123456789ab"


def test_each_operation_runs_these_commands():
    assert lt.vg_exists_argv("vg0") == ["vgs", "--noheadings", "-o", "vg_name", "vg0"]
    assert lt.pool_create_argv("vg0", "pool", "90%FREE") == [
        "lvcreate", "--yes", "--type", "thin-pool", "-l", "90%FREE", "-n", "pool", "vg0"]
    assert lt.pool_create_argv("vg0", "pool", "20G") == [
        "lvcreate", "--yes", "--type", "thin-pool", "-L", "20G", "-n", "pool", "vg0"]
    assert lt.thin_create_argv("vg0", "pool", lt.volume_lv(VID), 2) == [
        "lvcreate", "-T", "vg0/pool", "-V", "2G", "-n", f"volume-{VID}"]
    assert lt.snapshot_argv("vg0", lt.volume_lv(VID), lt.snapshot_lv(SID)) == [
        "lvcreate", "-s", "-n", f"snapshot-{SID}", f"vg0/volume-{VID}"]
    assert lt.snapshot_argv("vg0", lt.snapshot_lv(SID), lt.volume_lv(VID), as_volume=True) == [
        "lvcreate", "-s", "--setactivationskip", "n", "-n", f"volume-{VID}", f"vg0/snapshot-{SID}"]
    assert lt.activate_argv("vg0", f"snapshot-{SID}") == ["lvchange", "-ay", "-K", f"vg0/snapshot-{SID}"]
    assert lt.extend_argv("vg0", f"volume-{VID}", 3) == ["lvextend", "-L", "3G", f"vg0/volume-{VID}"]
    assert lt.rename_argv("vg0", f"tmp-volume-{VID}", f"volume-{VID}") == [
        "lvrename", "vg0", f"tmp-volume-{VID}", f"volume-{VID}"]
    assert lt.remove_argv("vg0", f"volume-{VID}") == ["lvremove", "-f", f"vg0/volume-{VID}"]
    assert lt.image_convert_argv("/i/disk.qcow2", "qcow2", f"/dev/vg0/volume-{VID}") == [
        "qemu-img", "convert", "-n", "--target-is-zero", "-f", "qcow2", "-O", "raw",
        "/i/disk.qcow2", f"/dev/vg0/volume-{VID}"]
    assert lt.lvs_argv("vg0") == ["lvs", "--reportformat", "json", "--units", "b", "--nosuffix",
                                  "-o", "lv_name,lv_size,pool_lv,data_percent", "vg0"]


def test_a_volume_is_a_local_block_device():
    conn = lt.LvmThinBackend("vg0", "pool", "90%FREE").connection(VID)
    assert (conn.path, conn.kind, conn.format, conn.driver_volume_type) == (
        f"/dev/vg0/volume-{VID}", "block", "raw", "local")


@pytest.mark.parametrize("vg, pool, size", [
    ("", "pool", "90%FREE"), ("vg0;rm -rf /", "pool", "90%FREE"), ("-vg", "pool", "90%FREE"),
    ("vg0", "..", "90%FREE"), ("vg0", "a/b", "90%FREE"), ("vg0", "pool", "lots"), ("vg0", "pool", "20G; ls")])
def test_bad_names_and_sizes_are_refused_with_what_to_set(vg, pool, size):
    with pytest.raises(BackendError, match=r"\[volume\]"):
        lt.LvmThinBackend(vg, pool, size)


def test_ids_are_checked_before_they_name_anything():
    with pytest.raises(errors.InvalidInput):
        lt.volume_lv("../../dev/sda")
    with pytest.raises(errors.InvalidInput):
        lt.snapshot_lv("pool")


def test_lvs_reports_are_read_past_lvm_warnings():
    report = {"report": [{"lv": [{"lv_name": "pool", "lv_size": "1073741824", "data_percent": "25.00"},
                                 {"lv_name": f"volume-{VID}", "lv_size": "2147483648", "data_percent": "0.00"}]}]}
    output = "File descriptor 10 (/dev/null) leaked on lvs invocation. Parent PID 1: x\n  " + json.dumps(report)
    rows = lt.lvs_rows(output)
    assert [row["lv_name"] for row in rows] == ["pool", f"volume-{VID}"]
    assert lt.LvmThinBackend._ids({r["lv_name"] for r in rows}, "volume") == {VID}
    with pytest.raises(BackendError):
        lt.lvs_rows("  Volume group \"vg0\" not found\n")
