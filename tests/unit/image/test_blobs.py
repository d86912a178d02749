"""The image file store on its own: streaming writes, hashes, and nothing left on failure."""

from __future__ import annotations

import hashlib

import pytest

from nova_async.image.blobs import ImageFiles, virtual_size


async def _chunks(parts):
    for part in parts:
        yield part


async def test_write_hashes_and_renames_into_place(tmp_path):
    files = ImageFiles(tmp_path / "images")
    parts = [bytes([n]) * 700_000 for n in range(10)]  # crosses the 4 MiB batch twice
    data = b"".join(parts)
    written = await files.write("abc", _chunks(parts), "raw")
    assert written.size == len(data)
    assert written.checksum == hashlib.md5(data).hexdigest()
    assert written.hash_value == hashlib.sha512(data).hexdigest()
    assert written.virtual_size == len(data)
    assert files.path("abc").read_bytes() == data
    assert sorted(p.name for p in files.root.iterdir()) == ["abc"]


async def test_a_broken_stream_leaves_nothing_behind(tmp_path):
    files = ImageFiles(tmp_path / "images")

    async def broken():
        yield b"x" * 5_000_000
        raise ConnectionResetError("client went away")

    with pytest.raises(ConnectionResetError):
        await files.write("abc", broken(), "raw")
    assert list(files.root.iterdir()) == []


def test_unfinished_parts_go_but_those_kept(tmp_path):
    files = ImageFiles(tmp_path / "images")
    files.root.mkdir()
    (files.root / ".abc.1234.part").write_bytes(b"half")
    (files.root / ".ghi.5678.part").write_bytes(b"going on")
    (files.root / "def").write_bytes(b"whole")
    found = files.unfinished()
    assert sorted(found.values()) == ["abc", "ghi"]
    files.drop_unfinished(found, keep={"ghi"})
    assert sorted(p.name for p in files.root.iterdir()) == [".ghi.5678.part", "def"]


@pytest.mark.parametrize("head, size, fmt, expected", [
    (b"QFI\xfb\x00\x00\x00\x03" + bytes(16) + (5 << 30).to_bytes(8, "big"), 1000, "qcow2", 5 << 30),
    (b"QFI\xfb", 4, "qcow2", None),  # too short to hold a size
    (bytes(32), 4096, "raw", 4096),
    (bytes(32), 4096, "iso", 4096),
    (bytes(32), 4096, "vmdk", None),
])
def test_virtual_size(head, size, fmt, expected):
    assert virtual_size(head, size, fmt) == expected
