"""Where image bits live: one file per image under <state_dir>/images/.

Uploads stream through here without ever being held whole in memory. Bytes are written to
a temporary file beside the final one and renamed into place only once complete, so a
compute host that finds `<id>` finds a whole image. Writing and hashing (md5 for Glance's
`checksum`, sha512 for `os_hash_value`) run in a worker thread a batch at a time, so a
multi-gigabyte upload does not stall the event loop."""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import shutil
import struct
import threading
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

HASH_ALGO = "sha512"
_BATCH = 4 * 1024 * 1024
_QCOW2_MAGIC = b"QFI\xfb"
_PART_SUFFIX = ".part"


@dataclass(frozen=True)
class Written:
    size: int
    checksum: str
    hash_value: str
    virtual_size: int | None


def virtual_size(head: bytes, size: int, disk_format: str | None) -> int | None:
    """The guest-visible disk size: from the qcow2 header, or the file size for raw/iso."""
    if head[:4] == _QCOW2_MAGIC and len(head) >= 32:
        return struct.unpack(">Q", head[24:32])[0]
    if disk_format in ("raw", "iso"):
        return size
    return None


@dataclass(frozen=True)
class BuiltFile:
    """A file nova-async built and hashed itself (the demo guest's, the cloud image's), and
    what Glance reports about it: what `ImageFiles.adopt` takes without hashing it again."""
    path: Path
    size: int
    md5: str
    sha512: str
    virtual_size: int | None = None

    def written(self) -> Written:
        return Written(size=self.size, checksum=self.md5, hash_value=self.sha512,
                       virtual_size=self.virtual_size)


class _Sink:
    """A temporary file being filled; every method runs in a worker thread."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.md5 = hashlib.md5(usedforsecurity=False)
        self.sha = hashlib.new(HASH_ALGO)
        self.size = 0
        self.head = b""
        self._lock = threading.Lock()
        self._fh = open(tmp, "xb")

    def feed(self, data: bytes) -> None:
        with self._lock:
            if self._fh is None:
                return
            if len(self.head) < 32:
                self.head += data[: 32 - len(self.head)]
            self._fh.write(data)
            self.md5.update(data)
            self.sha.update(data)
            self.size += len(data)

    def commit(self, final: Path) -> None:
        with self._lock:
            assert self._fh is not None
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None
            os.replace(self.tmp, final)

    def abort(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
            self.tmp.unlink(missing_ok=True)


class ImageFiles:
    """The image files, and this process's uploads into them. The directory may be shared by
    several processes (several nodes, one file system): `worker` is this process's
    incarnation (db/session_locks.py), which its uploads record, and another process's
    unfinished upload is never touched while that process lives."""

    def __init__(self, root: Path, *, worker: uuid.UUID | None = None) -> None:
        self.root = root
        self.worker = worker

    def path(self, image_id: str) -> Path:
        return self.root / image_id

    def unfinished(self) -> dict[Path, str]:
        """The temporary files of uploads in progress or interrupted, each with its image's id."""
        self.root.mkdir(parents=True, exist_ok=True)
        return {part: part.name[1:].split(".", 1)[0] for part in self.root.glob(f".*{_PART_SUFFIX}")}

    def drop_unfinished(self, found: dict[Path, str], keep: set[str]) -> None:
        """Remove the temporary files `found` (unfinished()) but those of the images in `keep`."""
        for part, image_id in found.items():
            if image_id not in keep:
                part.unlink(missing_ok=True)

    async def write(self, image_id: str, chunks: AsyncIterator[bytes],
                    disk_format: str | None) -> Written:
        """Stream `chunks` into the image's file; on any failure nothing is left behind."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{image_id}.{secrets.token_hex(4)}{_PART_SUFFIX}"
        sink = await asyncio.to_thread(_Sink, tmp)
        try:
            batch = bytearray()
            async for chunk in chunks:
                batch += chunk
                if len(batch) >= _BATCH:
                    await asyncio.to_thread(sink.feed, bytes(batch))
                    batch.clear()
            if batch:
                await asyncio.to_thread(sink.feed, bytes(batch))
            await asyncio.to_thread(sink.commit, self.path(image_id))
        except BaseException:
            sink.abort()
            raise
        return Written(size=sink.size, checksum=sink.md5.hexdigest(), hash_value=sink.sha.hexdigest(),
                       virtual_size=virtual_size(sink.head, sink.size, disk_format))

    async def adopt(self, image_id: str, source: Path, known: Written) -> Written:
        """Take a file already on this machine whose size and hashes are `known` (an image
        nova-async built itself, hashed when it was built) as the image's data: a hard link
        when it shares this file system, so neither a copy nor a hash is paid for it, else a
        copy. The source is never written afterwards: its builder replaces files, never
        rewrites them, so the link keeps what was registered."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{image_id}.{secrets.token_hex(4)}{_PART_SUFFIX}"
        try:
            try:
                await asyncio.to_thread(os.link, source, tmp)
            except OSError:     # another file system, or links refused here
                await asyncio.to_thread(shutil.copyfile, source, tmp)
            if tmp.stat().st_size != known.size:
                raise OSError(f"{source} is {tmp.stat().st_size} bytes, not the {known.size} expected")
            os.replace(tmp, self.path(image_id))
        finally:
            tmp.unlink(missing_ok=True)
        return known

    def remove(self, image_id: str) -> None:
        self.path(image_id).unlink(missing_ok=True)
