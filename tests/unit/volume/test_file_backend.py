"""The file backend on real files with the real qemu-img and cp."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from nova_async.common import errors
from nova_async.volume.backends.files import GiB, FileBackend


def new_id() -> str:
    return str(uuid.uuid4())


@pytest.fixture
async def backend(tmp_path):
    b = FileBackend(tmp_path / "volumes")
    await b.setup()
    return b


def allocated(path) -> int:
    return os.stat(path).st_blocks * 512


async def test_a_new_volume_is_sparse_and_reads_as_zeros(backend):
    vid = new_id()
    await backend.create(vid, 1)
    path = backend.volume_path(vid)
    assert path.stat().st_size == GiB and allocated(path) == 0
    with open(path, "rb") as fh:
        assert fh.read(4096) == bytes(4096)
    conn = backend.connection(vid)
    assert (conn.path, conn.kind, conn.format) == (str(path), "file", "raw")
    assert await backend.volume_ids() == {vid}
    await backend.create(vid, 1)  # again: the same result
    assert path.stat().st_size == GiB


async def test_snapshot_clone_extend_and_delete_keep_the_bytes(backend):
    vid, sid, copy = new_id(), new_id(), new_id()
    await backend.create(vid, 1)
    with open(backend.volume_path(vid), "r+b") as fh:
        fh.seek(12345)
        fh.write(b"marker")
    await backend.snapshot(sid, vid)
    with open(backend.volume_path(vid), "r+b") as fh:  # written after the snapshot: not in it
        fh.seek(12345)
        fh.write(b"LATER!")
    await backend.create_from_snapshot(copy, 2, sid)
    with open(backend.volume_path(copy), "rb") as fh:
        fh.seek(12345)
        assert fh.read(6) == b"marker"
    assert backend.volume_path(copy).stat().st_size == 2 * GiB
    await backend.extend(vid, 3)
    await backend.extend(vid, 2)   # never smaller
    assert backend.volume_path(vid).stat().st_size == 3 * GiB
    assert await backend.snapshot_ids() == {sid}
    await backend.delete_snapshot(sid)
    await backend.delete(copy)
    await backend.delete(copy)     # gone already: fine
    assert await backend.volume_ids() == {vid}


async def test_from_an_image_converts_to_raw_and_refuses_a_too_small_volume(backend, tmp_path):
    image = tmp_path / "image.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(image), "1536M"], check=True)
    vid = new_id()
    with pytest.raises(errors.InvalidInput):
        await backend.create_from_image(vid, 1, str(image), "qcow2")
    assert await backend.volume_ids() == set()
    await backend.create_from_image(vid, 2, str(image), "qcow2")
    path = backend.volume_path(vid)
    assert path.stat().st_size == 2 * GiB
    info = subprocess.run(["qemu-img", "info", str(path)], capture_output=True, text=True).stdout
    assert "file format: raw" in info


async def test_setup_sweeps_interrupted_work_and_ids_are_checked(backend):
    (backend.root / f"volume-{new_id()}.part").write_bytes(b"half")
    await backend.setup()
    assert list(backend.root.iterdir()) == []
    with pytest.raises(errors.InvalidInput):
        backend.volume_path("../../etc/passwd")


async def test_making_what_is_in_place_keeps_what_the_guest_wrote(backend):
    vid, sid = new_id(), new_id()
    await backend.create(vid, 1)
    with open(backend.volume_path(vid), "r+b") as fh:
        fh.write(b"guest data")
    await backend.snapshot(sid, vid)
    with open(backend.volume_path(vid), "r+b") as fh:
        fh.write(b"newer data")
    await backend.create(vid, 1)        # a repeated create (the role redoing it after a restart)
    await backend.snapshot(sid, vid)    # and a repeated snapshot
    with open(backend.volume_path(vid), "rb") as fh:
        assert fh.read(10) == b"newer data"
    with open(backend.snapshot_path(sid), "rb") as fh:
        assert fh.read(10) == b"guest data"
    assert oct(backend.root.stat().st_mode & 0o777) == "0o755"
    assert oct(backend.volume_path(vid).stat().st_mode & 0o777) == "0o644"
