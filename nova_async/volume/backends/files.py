"""The default backend: each volume and snapshot a sparse raw file in one directory.

    <root>/volume-<id>      a volume: raw, sparse (a new one takes no space and reads as zeros)
    <root>/snapshot-<id>    a snapshot: the volume's bits when it was taken
    <root>/*.part           a file being made; renamed into place when complete

Raw, not qcow2: a raw file is what the guest sees byte for byte, so growing it is a
truncate (also under a running guest, which is then told its new size), a snapshot is a
plain copy of it, and nothing but the file itself has to be consistent after a crash.

Snapshots and volumes made from them are copies made with `cp --reflink=auto
--sparse=always`: on a filesystem with shared extents (btrfs, XFS) that is a reflink, made
at once and taking no space; elsewhere a sparse copy. Nothing stops the guest meanwhile: a
snapshot of an attached volume is crash-consistent where it is a reflink and, on a
filesystem without one, is read while the guest may still write — as Cinder's forced
snapshot of an in-use volume, which `force` asks for.

Every operation makes its file under a temporary name and renames it, so a file that is in
place is complete: making one that is already in place does nothing (a repeated create must
not wipe what a guest has written since), and an operation interrupted by a crash leaves a
`.part` file that setup() removes, and is simply done again.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import structlog

from nova_async.common import errors, process
from nova_async.volume.backends.base import BackendError, Connection

log = structlog.get_logger("volume.files")

GiB = 1024 ** 3
PART = ".part"
_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_NAMED = re.compile(r"^(volume|snapshot)-([0-9a-f-]{36})$")


def checked_id(item_id: str) -> str:
    item_id = str(item_id).lower()
    if not _ID.match(item_id):
        raise errors.InvalidInput(f"{item_id!r} is not a volume or snapshot id")
    return item_id


class FileBackend:
    name = "file"

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def volume_path(self, volume_id: str) -> Path:
        return self.root / f"volume-{checked_id(volume_id)}"

    def snapshot_path(self, snapshot_id: str) -> Path:
        return self.root / f"snapshot-{checked_id(snapshot_id)}"

    async def setup(self) -> None:
        def prepare() -> None:
            self.root.mkdir(parents=True, exist_ok=True)
            # QEMU (libvirt-qemu) must search the directory; libvirt's dynamic ownership gives
            # it the file itself while attached. The state dir above is the one compute's
            # start-up already checks (unreachable_by_qemu) for its instance directories.
            self.root.chmod(0o755)
            for part in self.root.glob(f"*{PART}"):
                part.unlink(missing_ok=True)
        await asyncio.to_thread(prepare)

    async def create(self, volume_id: str, size_gb: int) -> None:
        target = self.volume_path(volume_id)
        if await _exists(target):
            return

        def make(part: Path) -> None:
            with open(part, "wb") as fh:
                fh.truncate(size_gb * GiB)
        await self._made(target, make)

    async def create_from_image(self, volume_id: str, size_gb: int, image_path: str, image_format: str) -> None:
        virtual = await image_virtual_size(image_path, image_format)
        if virtual > size_gb * GiB:
            raise errors.InvalidInput(f"The image's virtual size ({virtual} bytes) is larger than the volume "
                                      f"({size_gb} GiB).")
        target = self.volume_path(volume_id)
        if await _exists(target):
            return
        part = target.with_name(target.name + PART)
        await _qemu_img("convert", "-f", image_format or "raw", "-O", "raw", "-S", "4k", image_path, str(part))
        await asyncio.to_thread(_grow_and_place, part, target, size_gb)

    async def create_from_snapshot(self, volume_id: str, size_gb: int, snapshot_id: str) -> None:
        await self._copy(self.snapshot_path(snapshot_id), self.volume_path(volume_id), size_gb)

    async def clone(self, volume_id: str, size_gb: int, source_volume_id: str) -> None:
        await self._copy(self.volume_path(source_volume_id), self.volume_path(volume_id), size_gb)

    async def extend(self, volume_id: str, size_gb: int) -> None:
        path = self.volume_path(volume_id)

        def grow() -> None:
            if not path.exists():
                raise BackendError(f"volume file {path} is missing")
            if path.stat().st_size < size_gb * GiB:  # never smaller: a repeat is a no-op
                os.truncate(path, size_gb * GiB)
        await asyncio.to_thread(grow)

    async def delete(self, volume_id: str) -> None:
        await asyncio.to_thread(self.volume_path(volume_id).unlink, missing_ok=True)

    async def snapshot(self, snapshot_id: str, volume_id: str) -> None:
        await self._copy(self.volume_path(volume_id), self.snapshot_path(snapshot_id), None)

    async def delete_snapshot(self, snapshot_id: str) -> None:
        await asyncio.to_thread(self.snapshot_path(snapshot_id).unlink, missing_ok=True)

    async def image_virtual_size(self, image_path: str, image_format: str) -> int:
        return await image_virtual_size(image_path, image_format)

    def connection(self, volume_id: str) -> Connection:
        return Connection(path=str(self.volume_path(volume_id)), kind="file", format="raw",
                          driver_volume_type="file")

    async def volume_ids(self) -> set[str]:
        return await asyncio.to_thread(self._ids, "volume")

    async def snapshot_ids(self) -> set[str]:
        return await asyncio.to_thread(self._ids, "snapshot")

    async def capacity_gb(self) -> tuple[int, int]:
        st = await asyncio.to_thread(os.statvfs, self.root)
        return st.f_blocks * st.f_frsize // GiB, st.f_bavail * st.f_frsize // GiB

    def _ids(self, kind: str) -> set[str]:
        if not self.root.is_dir():
            return set()
        return {m.group(2) for p in self.root.iterdir() if (m := _NAMED.match(p.name)) and m.group(1) == kind}

    async def _copy(self, source: Path, target: Path, size_gb: int | None) -> None:
        if await _exists(target):
            return
        if not await _exists(source):
            raise BackendError(f"{source} is missing")
        part = target.with_name(target.name + PART)
        done = await process.run("cp", "--reflink=auto", "--sparse=always", str(source), str(part), timeout=3600)
        if done.returncode != 0:
            await asyncio.to_thread(part.unlink, missing_ok=True)
            raise BackendError(f"copying {source.name} failed: {done.output.strip()[-300:]}")
        await asyncio.to_thread(_grow_and_place, part, target, size_gb)

    async def _made(self, target: Path, make) -> None:
        part = target.with_name(target.name + PART)
        await asyncio.to_thread(make, part)
        await asyncio.to_thread(_grow_and_place, part, target, None)


async def image_virtual_size(image_path: str, image_format: str) -> int:
    """The image's virtual size in bytes (qemu-img info); every backend refuses a volume
    smaller than it."""
    args = ["info", "--output=json"]
    if image_format:
        args += ["-f", image_format]
    done = await process.run("qemu-img", *args, image_path, timeout=120)
    if done.returncode != 0:
        raise BackendError(f"qemu-img info {image_path} failed: {done.output.strip()[-300:]}")
    try:
        return int(json.loads(done.output)["virtual-size"])
    except (ValueError, KeyError, TypeError):
        raise BackendError(f"qemu-img info {image_path} gave no virtual size") from None


async def _exists(path: Path) -> bool:
    return await asyncio.to_thread(path.exists)


def _grow_and_place(part: Path, target: Path, size_gb: int | None) -> None:
    """Grow the finished file to size_gb (when given and larger) and rename it into place."""
    if size_gb is not None and part.stat().st_size < size_gb * GiB:
        os.truncate(part, size_gb * GiB)
    part.chmod(0o644)
    os.replace(part, target)


async def _qemu_img(*args: str) -> None:
    done = await process.run("qemu-img", *args, timeout=3600)
    if done.returncode != 0:
        for arg in args:
            if arg.endswith(PART):
                Path(arg).unlink(missing_ok=True)
        raise BackendError(f"qemu-img {args[0]} failed ({done.returncode}): {done.output.strip()[-500:]}")

