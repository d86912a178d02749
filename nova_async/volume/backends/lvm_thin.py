"""Volumes as thin logical volumes in one LVM thin pool, as Cinder's LVM driver with
`lvm_type = thin` keeps them: block devices the guest gets directly (no file system between),
snapshots that are made at once and share unchanged blocks with their volume.

    <vg>/<pool>                 the thin pool (made at start when missing)
    <vg>/volume-<id>            a volume: /dev/<vg>/volume-<id>
    <vg>/snapshot-<id>          a thin snapshot of a volume
    <vg>/tmp-volume-<id>        a volume from an image while it is written; renamed when done

A thin volume reads as zeros where it has never been written, so a new volume is ready as
soon as lvcreate returns and nothing is ever wiped with dd; an image is converted onto it
with `qemu-img convert -n --target-is-zero`, which writes only the image's data.

Thin snapshots are made with the activation-skip flag LVM gives them by default, so each is
activated explicitly (`lvchange -ay -K`) to be read from. A snapshot of an attached volume
is taken while the guest may write: crash-consistent, as Cinder's forced snapshot of an
in-use volume.

The user makes the volume group (`vgcreate <vg> <device>`); setup() checks it is there. Every
command is an argv list built by one pure function below (so what is run can be read and
tested without LVM) and run without a shell; names in it are checked first.
"""

from __future__ import annotations

import asyncio
import json
import os
import re

import structlog

from nova_async.common import errors
from nova_async.common.process import ProcessTimeout
from nova_async.volume.backends.base import BackendError, Connection
from nova_async.volume.backends.files import GiB, checked_id, image_virtual_size

log = structlog.get_logger("volume.lvm_thin")

TMP = "tmp-"
_NAME = re.compile(r"^[A-Za-z0-9+_.][A-Za-z0-9+_.-]{0,126}$")
_EXTENTS = re.compile(r"^[0-9]{1,3}%(FREE|VG|PVS)$")            # lvcreate -l
_SIZE = re.compile(r"^[0-9]+(\.[0-9]+)?[bBsSkKmMgGtTpPeE]?$")     # lvcreate -L
_LV = re.compile(r"^(volume|snapshot)-([0-9a-f-]{36})$")
# LVM prints its progress and warnings on stderr; these keep them out of what is parsed.
_ENV = {**os.environ, "LVM_SUPPRESS_FD_WARNINGS": "1"}


def checked_name(name: str, what: str) -> str:
    """A volume group or thin pool name LVM accepts, and never an option (leading '-')."""
    if not _NAME.match(name or "") or name in {".", ".."}:
        raise BackendError(f"[volume] {what} {name!r} is not an LVM name (letters, digits, + _ . -, "
                           "not starting with -)")
    return name


def volume_lv(volume_id: str) -> str:
    return f"volume-{checked_id(volume_id)}"


def snapshot_lv(snapshot_id: str) -> str:
    return f"snapshot-{checked_id(snapshot_id)}"


# --- the commands, one pure function each -------------------------------------------------

def vg_exists_argv(vg: str) -> list[str]:
    return ["vgs", "--noheadings", "-o", "vg_name", vg]


def lvs_argv(vg: str) -> list[str]:
    return ["lvs", "--reportformat", "json", "--units", "b", "--nosuffix",
            "-o", "lv_name,lv_size,pool_lv,data_percent", vg]


def pool_create_argv(vg: str, pool: str, size: str) -> list[str]:
    """A thin pool of `size` as lvcreate takes it: extents (90%FREE, 100%VG) with -l, a size
    (20G) with -L."""
    flag = "-l" if _EXTENTS.match(size) else "-L"
    return ["lvcreate", "--yes", "--type", "thin-pool", flag, size, "-n", pool, vg]


def thin_create_argv(vg: str, pool: str, lv: str, size_gb: int) -> list[str]:
    return ["lvcreate", "-T", f"{vg}/{pool}", "-V", f"{size_gb}G", "-n", lv]


def snapshot_argv(vg: str, source_lv: str, lv: str, as_volume: bool = False) -> list[str]:
    """A thin snapshot of source_lv. LVM gives a thin snapshot the activation-skip flag (it
    is not activated with the group); a volume made from one must come up with the group
    like any other, so it is made without the flag."""
    skip = ["--setactivationskip", "n"] if as_volume else []
    return ["lvcreate", "-s", *skip, "-n", lv, f"{vg}/{source_lv}"]


def activate_argv(vg: str, lv: str) -> list[str]:
    return ["lvchange", "-ay", "-K", f"{vg}/{lv}"]


def extend_argv(vg: str, lv: str, size_gb: int) -> list[str]:
    return ["lvextend", "-L", f"{size_gb}G", f"{vg}/{lv}"]


def rename_argv(vg: str, old: str, new: str) -> list[str]:
    return ["lvrename", vg, old, new]


def remove_argv(vg: str, lv: str) -> list[str]:
    return ["lvremove", "-f", f"{vg}/{lv}"]


def image_convert_argv(image_path: str, image_format: str, device: str) -> list[str]:
    """The image onto an existing thin volume (-n: do not create the target); the volume
    reads as zeros, so only the image's data is written (--target-is-zero)."""
    return ["qemu-img", "convert", "-n", "--target-is-zero", "-f", image_format or "raw", "-O", "raw",
            image_path, device]


# --- the backend --------------------------------------------------------------------------

class LvmThinBackend:
    name = "lvm-thin"

    def __init__(self, volume_group: str, thin_pool: str, pool_size: str) -> None:
        if not volume_group:
            raise BackendError("[volume] backend = lvm-thin needs volume_group: the LVM volume group "
                               "to keep volumes in (make it first: vgcreate <name> <device>)")
        self.vg = checked_name(volume_group, "volume_group")
        self.pool = checked_name(thin_pool, "thin_pool")
        self.pool_size = pool_size or "90%FREE"
        if not (_EXTENTS.match(self.pool_size) or _SIZE.match(self.pool_size)):
            raise BackendError(f"[volume] thin_pool_size {pool_size!r} is neither extents (90%FREE, "
                               "100%VG) nor a size (20G)")

    def device(self, lv: str) -> str:
        return f"/dev/{self.vg}/{lv}"

    async def setup(self) -> None:
        code, _, err = await _run(vg_exists_argv(self.vg))
        if code != 0:
            raise BackendError(f"LVM volume group {self.vg!r} not found ({_last(err)}); make it first "
                               f"(vgcreate {self.vg} <device>) or set [volume] volume_group")
        lvs = await self._lvs()
        if self.pool not in lvs:
            log.info("making the thin pool", vg=self.vg, pool=self.pool, size=self.pool_size)
            await _checked(pool_create_argv(self.vg, self.pool, self.pool_size))
        for lv in lvs:  # a volume from an image interrupted half-way: it is made again
            if lv.startswith(TMP):
                await _checked(remove_argv(self.vg, lv))

    async def create(self, volume_id: str, size_gb: int) -> None:
        lv = volume_lv(volume_id)
        if lv not in await self._lvs():
            await _checked(thin_create_argv(self.vg, self.pool, lv, size_gb))

    async def create_from_image(self, volume_id: str, size_gb: int, image_path: str, image_format: str) -> None:
        lv = volume_lv(volume_id)
        lvs = await self._lvs()
        if lv in lvs:
            return
        virtual = await image_virtual_size(image_path, image_format)
        if virtual > size_gb * GiB:
            raise errors.InvalidInput(f"The image's virtual size ({virtual} bytes) is larger than the volume "
                                      f"({size_gb} GiB).")
        tmp = TMP + lv
        if tmp in lvs:  # an earlier attempt's: its content is unknown
            await _checked(remove_argv(self.vg, tmp))
        await _checked(thin_create_argv(self.vg, self.pool, tmp, size_gb))
        await _checked(image_convert_argv(image_path, image_format, self.device(tmp)), timeout=3600)
        await _checked(rename_argv(self.vg, tmp, lv))

    async def create_from_snapshot(self, volume_id: str, size_gb: int, snapshot_id: str) -> None:
        await self._thin_copy(snapshot_lv(snapshot_id), volume_lv(volume_id), size_gb, as_volume=True)

    async def clone(self, volume_id: str, size_gb: int, source_volume_id: str) -> None:
        await self._thin_copy(volume_lv(source_volume_id), volume_lv(volume_id), size_gb, as_volume=True)

    async def extend(self, volume_id: str, size_gb: int) -> None:
        lv = volume_lv(volume_id)
        sizes = await self._lvs()
        if lv not in sizes:
            raise BackendError(f"logical volume {self.vg}/{lv} is missing")
        if sizes[lv] < size_gb * GiB:  # never smaller: a repeat is a no-op
            await _checked(extend_argv(self.vg, lv, size_gb))

    async def delete(self, volume_id: str) -> None:
        await self._remove(volume_lv(volume_id))

    async def snapshot(self, snapshot_id: str, volume_id: str) -> None:
        await self._thin_copy(volume_lv(volume_id), snapshot_lv(snapshot_id), None)

    async def delete_snapshot(self, snapshot_id: str) -> None:
        await self._remove(snapshot_lv(snapshot_id))

    async def image_virtual_size(self, image_path: str, image_format: str) -> int:
        return await image_virtual_size(image_path, image_format)

    def connection(self, volume_id: str) -> Connection:
        return Connection(path=self.device(volume_lv(volume_id)), kind="block", format="raw",
                          driver_volume_type="local")

    async def volume_ids(self) -> set[str]:
        return self._ids(set(await self._lvs()), "volume")

    async def snapshot_ids(self) -> set[str]:
        return self._ids(set(await self._lvs()), "snapshot")

    @staticmethod
    def _ids(lvs: set[str], kind: str) -> set[str]:
        return {m.group(2) for lv in lvs if (m := _LV.match(lv)) and m.group(1) == kind}

    async def capacity_gb(self) -> tuple[int, int]:
        """The thin pool's size and what of it no volume has written yet."""
        code, out, err = await _run(lvs_argv(self.vg))
        if code != 0:
            raise BackendError(f"lvs {self.vg} failed: {_last(err)}")
        for row in lvs_rows(out):
            if row.get("lv_name") == self.pool:
                size = int(float(row.get("lv_size") or 0))
                used = float(row.get("data_percent") or 0) / 100
                return size // GiB, int(size * (1 - used)) // GiB
        raise BackendError(f"thin pool {self.vg}/{self.pool} is missing")

    async def _thin_copy(self, source: str, lv: str, size_gb: int | None, as_volume: bool = False) -> None:
        """A thin snapshot of `source` named `lv`, active, grown to size_gb. Each step is
        skipped when done already, so an interrupted copy is finished by doing it again."""
        sizes = await self._lvs()
        if lv not in sizes:
            if source not in sizes:
                raise BackendError(f"logical volume {self.vg}/{source} is missing")
            await _checked(snapshot_argv(self.vg, source, lv, as_volume))
            sizes[lv] = sizes[source]
        await _checked(activate_argv(self.vg, lv))
        if size_gb is not None and sizes[lv] < size_gb * GiB:
            await _checked(extend_argv(self.vg, lv, size_gb))

    async def _remove(self, lv: str) -> None:
        if lv in await self._lvs():
            await _checked(remove_argv(self.vg, lv))

    async def _lvs(self) -> dict[str, int]:
        """The group's logical volumes: name → size in bytes."""
        code, out, err = await _run(lvs_argv(self.vg))
        if code != 0:
            raise BackendError(f"lvs {self.vg} failed: {_last(err)}")
        return {row["lv_name"]: int(float(row.get("lv_size") or 0)) for row in lvs_rows(out) if row.get("lv_name")}


def lvs_rows(out: str) -> list[dict]:
    """The rows of an `lvs --reportformat json` report, read past anything LVM printed before
    it (leaked-descriptor notes go to stdout's neighbour, but not always)."""
    try:
        return [row for report in json.loads(out[out.index("{"):])["report"] for row in report.get("lv", [])]
    except (ValueError, KeyError, TypeError):
        raise BackendError(f"lvs gave no JSON report: {out.strip()[-300:]}") from None


def _last(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return "; ".join(lines[-3:]) or "no output"


async def _checked(argv: list[str], timeout: float = 120) -> str:
    code, out, err = await _run(argv, timeout)
    if code != 0:
        raise BackendError(f"{' '.join(argv)} failed ({code}): {_last(err or out)}")
    return out


async def _run(argv: list[str], timeout: float = 120) -> tuple[int, str, str]:
    """Like common.process.run, with stdout (the JSON report) apart from stderr (LVM's notes)."""
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL, env=_ENV,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise ProcessTimeout(f"{argv[0]} did not finish within {timeout:.0f} s") from None
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")
