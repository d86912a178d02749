"""The lvm-thin backend on real LVM: a volume group on a loop device over a sparse file in
the test's own directory, made and always removed by the fixture. Thin volumes need the
kernel's device-mapper; where it is missing the lifecycle test says so and skips, and what
LVM does without it (finding or refusing a volume group) is still tested."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import uuid

import pytest

from nova_async.common import errors
from nova_async.volume.backends.base import BackendError
from nova_async.volume.backends.files import GiB
from nova_async.volume.backends.lvm_thin import LvmThinBackend

MAPPER = "/dev/mapper/control"

if not shutil.which("lvcreate"):
    pytest.skip("lvm2 is not installed (make test-deps installs it)", allow_module_level=True)


def device_mapper_missing() -> str | None:
    """Why thin volumes cannot be made here, or None."""
    try:
        os.close(os.open(MAPPER, os.O_RDWR))
    except FileNotFoundError:
        return f"kernel has no device-mapper: {MAPPER} missing"
    except OSError as e:
        if e.errno in (errno.ENODEV, errno.ENXIO):
            return f"kernel has no device-mapper: {MAPPER} missing a driver ({e.strerror})"
        return f"cannot open {MAPPER}: {e.strerror}"
    return None


def lvm(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "LVM_SUPPRESS_FD_WARNINGS": "1"})


@pytest.fixture
def volume_group(tmp_path):
    """A fresh volume group of 1 GiB on a loop device; removed with everything in it."""
    if os.geteuid() != 0:
        pytest.skip("loop devices and LVM need root")
    backing = tmp_path / "pv.img"
    with open(backing, "wb") as fh:
        fh.truncate(GiB)
    attached = lvm("losetup", "-f", "--show", str(backing))
    if attached.returncode != 0:
        pytest.skip(f"no loop device: {attached.stderr.strip()}")
    device = attached.stdout.strip()
    name = f"nova-async-test-{uuid.uuid4().hex[:12]}"
    try:
        made = lvm("pvcreate", "-y", device)
        assert made.returncode == 0, made.stderr
        made = lvm("vgcreate", name, device)
        assert made.returncode == 0, made.stderr
        yield name
    finally:
        lvm("vgremove", "-f", name)
        lvm("pvremove", "-ff", "-y", device)
        lvm("losetup", "-d", device)


def new_id() -> str:
    return str(uuid.uuid4())


def read(path: str, offset: int, length: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(length)


def write(path: str, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def size_of(path: str) -> int:
    with open(path, "rb") as fh:
        return fh.seek(0, os.SEEK_END)


async def test_setup_refuses_a_missing_volume_group_saying_what_to_do():
    missing = f"nova-async-absent-{uuid.uuid4().hex[:12]}"
    with pytest.raises(BackendError, match=rf"volume group '{missing}' not found.*vgcreate {missing}"):
        await LvmThinBackend(missing, "pool", "90%FREE").setup()


async def test_without_device_mapper_setup_says_why_it_cannot_make_the_pool(volume_group):
    if not device_mapper_missing():
        pytest.skip("this kernel has device-mapper: the pool is made (see the lifecycle test)")
    with pytest.raises(BackendError, match="thin-pool.*device-mapper"):
        await LvmThinBackend(volume_group, "pool", "90%FREE").setup()


async def test_thin_volume_lifecycle(volume_group, tmp_path):
    missing = device_mapper_missing()
    if missing:
        pytest.skip(missing)
    backend = LvmThinBackend(volume_group, "pool", "90%FREE")
    await backend.setup()
    await backend.setup()   # the pool is there: nothing to do
    total, free = await backend.capacity_gb()
    assert 0 < free <= total

    vid, sid, copy, clone = new_id(), new_id(), new_id(), new_id()
    await backend.create(vid, 1)
    conn = backend.connection(vid)
    assert (conn.kind, conn.format, conn.driver_volume_type) == ("block", "raw", "local")
    assert size_of(conn.path) == GiB
    assert read(conn.path, 0, 4096) == bytes(4096)       # thin: never written, reads as zeros
    write(conn.path, 12345, b"marker")
    await backend.create(vid, 1)                           # again: the same volume, data kept
    assert read(conn.path, 12345, 6) == b"marker"

    await backend.snapshot(sid, vid)
    write(conn.path, 12345, b"LATER!")                     # after the snapshot: not in it
    await backend.create_from_snapshot(copy, 2, sid)
    copied = backend.connection(copy).path
    assert read(copied, 12345, 6) == b"marker" and size_of(copied) == 2 * GiB
    await backend.clone(clone, 1, vid)
    assert read(backend.connection(clone).path, 12345, 6) == b"LATER!"

    await backend.extend(vid, 2)
    await backend.extend(vid, 1)                           # never smaller
    assert size_of(conn.path) == 2 * GiB

    image = tmp_path / "image.raw"
    with open(image, "wb") as fh:
        fh.truncate(100 * 1024 * 1024)
        fh.seek(4096)
        fh.write(b"from the image")
    qcow2 = tmp_path / "image.qcow2"
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(image), str(qcow2)], check=True)
    from_image = new_id()
    await backend.create_from_image(from_image, 1, str(qcow2), "qcow2")
    assert read(backend.connection(from_image).path, 4096, 14) == b"from the image"
    big = tmp_path / "big.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(big), "3G"], check=True)
    with pytest.raises(errors.InvalidInput):
        await backend.create_from_image(new_id(), 1, str(big), "qcow2")

    assert await backend.volume_ids() == {vid, copy, clone, from_image}
    assert await backend.snapshot_ids() == {sid}
    await backend.delete_snapshot(sid)
    await backend.delete_snapshot(sid)                     # gone already: fine
    for volume in (vid, copy, clone, from_image):
        await backend.delete(volume)
    await backend.delete(vid)
    assert await backend.volume_ids() == set() and await backend.snapshot_ids() == set()
