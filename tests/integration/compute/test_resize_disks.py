"""The disk side of a resize with real qemu-img: grown for the new flavor, kept aside for a
revert, and given back exactly — also when a crash interrupts the restore half-way."""

from __future__ import annotations

import json
import subprocess
import uuid

from nova_async.compute import disks

GiB = 1024 ** 3


def _size(path) -> int:
    out = subprocess.run(["qemu-img", "info", "-U", "--output=json", str(path)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["virtual-size"]


async def _instance(tmp_path):
    base = tmp_path / "base.raw"
    base.write_bytes(b"\1" * 65536)
    sid = str(uuid.uuid4())
    await disks.prepare(tmp_path, sid, base, root_gb=1, ephemeral_gb=0, swap_mb=0)
    return sid, disks.instance_dir(tmp_path, sid)


async def test_resize_grows_and_revert_restores(tmp_path):
    sid, path = await _instance(tmp_path)
    await disks.backup_for_resize(tmp_path, sid)
    await disks.resize_disks(tmp_path, sid, root_gb=3, ephemeral_gb=1, swap_mb=64)
    await disks.resize_disks(tmp_path, sid, root_gb=3, ephemeral_gb=1, swap_mb=64)  # a redo changes nothing
    assert (_size(path / "disk"), _size(path / "disk.eph0"), _size(path / "disk.swap")) == (3 * GiB, GiB, 64 << 20)
    assert [d.target for d in disks.instance_disks(tmp_path, sid, config_drive=False)] == ["vda", "vdb", "vdc"]
    await disks.backup_for_resize(tmp_path, sid)   # a redo keeps the first, complete backup
    assert _size(path / disks.RESIZE_BACKUP / "disk") == GiB

    await disks.restore_after_revert(tmp_path, sid)
    assert _size(path / "disk") == GiB
    assert not (path / "disk.eph0").exists() and not (path / "disk.swap").exists()
    assert not (path / disks.RESIZE_BACKUP).exists()
    await disks.restore_after_revert(tmp_path, sid)   # nothing left to do
    assert _size(path / "disk") == GiB


async def test_a_restore_cut_short_finishes_on_the_next_try(tmp_path):
    sid, path = await _instance(tmp_path)
    await disks.backup_for_resize(tmp_path, sid)
    await disks.resize_disks(tmp_path, sid, root_gb=2, ephemeral_gb=1, swap_mb=0)
    # As if a crash came right after the root disk was moved back.
    (path / disks.RESIZE_BACKUP / "disk").replace(path / "disk")
    await disks.restore_after_revert(tmp_path, sid)
    assert _size(path / "disk") == GiB and not (path / "disk.eph0").exists()
    assert not (path / disks.RESIZE_BACKUP).exists()


async def test_snapshot_is_a_standalone_qcow2(tmp_path):
    sid, path = await _instance(tmp_path)
    target = tmp_path / "snap.qcow2"
    await disks.snapshot_root(tmp_path, sid, target)
    info = json.loads(subprocess.run(["qemu-img", "info", "--output=json", str(target)], check=True,
                                     capture_output=True, text=True).stdout)
    assert info["format"] == "qcow2" and "backing-filename" not in info and info["virtual-size"] == GiB
    raw = tmp_path / "back.raw"
    subprocess.run(["qemu-img", "convert", "-O", "raw", str(target), str(raw)], check=True)
    assert raw.read_bytes()[:65536] == b"\1" * 65536
