"""Instance disks: a per-host cache of base images, and qcow2 overlays on top of them.

Layout under `<state_dir>/instances/`:

    _base/<image_id>      the image as a raw file, copied once per image
    _base/overlays/       one freshly created qcow2 per (backing file, size): new disks are copies
    <instance_uuid>/disk  qcow2 overlay of the base, grown to the flavor's root_gb
              disk.eph0   blank qcow2 of ephemeral_gb, when the flavor has one
              disk.swap   blank qcow2 of swap MiB, when the flavor has one
              disk.config the config drive (ISO 9660), for real guests
              console.log what the guest printed on its serial console (virtlogd writes it)
              resize-orig/ the disks as they were before a resize, until confirm or revert
              snapshot-<image_id>.qcow2  a createImage copy, until it is uploaded
              shelve-<image_id>.qcow2    a shelve's copy of the root disk, likewise
              disk.rescue a rescue's boot disk (qcow2 over the rescue image), until unrescue

Everything an instance has lives in its directory, so removing the directory is the whole
clean-up, after a delete and after a failed build alike.

Two builds of the same image share one copy: a lock per image id decides who copies, the
copy goes to a temporary name and is renamed into place, so a reader never sees half a
file and a crash mid-copy leaves only a `.part` file for the next start to sweep away.
"""

from __future__ import annotations

import asyncio
import functools
import grp
import hashlib
import json
import os
import pwd
import re
import shutil
import stat
import uuid as uuidlib
from pathlib import Path

import structlog

from nova_async.common import errors, process
from nova_async.compute.config_drive import DriveContent, build_config_drive
from nova_async.compute.domain_xml import Disk, canonical_uuid
from nova_async.image.messages import ImageInfo

log = structlog.get_logger("compute.disks")

BASE_DIR = "_base"
TEMPLATE_DIR = "overlays"   # under BASE_DIR: see _new_qcow2
CONFIG_DRIVE = "disk.config"
CONSOLE_LOG = "console.log"
PART_SUFFIX = ".part"
GiB = 1024 ** 3
_IMAGE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$")


async def qemu_img(*args: str) -> None:
    # Generous: converting a large qcow2 base image to raw takes a while on a slow disk.
    done = await process.run("qemu-img", *args, timeout=1800)
    if done.returncode != 0:
        raise errors.NovaAsyncError(f"qemu-img {args[0]} failed ({done.returncode}): "
                                    f"{done.output.strip()[-500:]}")


class ImageCache:
    """Base images for every host of this process (simulated hosts share one directory)."""

    def __init__(self, instances_root: Path) -> None:
        self.base_dir = instances_root / BASE_DIR
        self._locks: dict[str, asyncio.Lock] = {}

    def cached(self, image_id: str) -> Path | None:
        """The image's base file when this host has it already (no one need be asked for it)."""
        if not _IMAGE_ID.match(image_id):
            return None
        target = self.base_dir / image_id
        return target if target.exists() else None

    async def fetch(self, image: ImageInfo) -> Path:
        if not _IMAGE_ID.match(image.id):
            raise errors.InvalidInput(f"image id {image.id!r} cannot name a file")
        if not image.path:
            raise errors.Conflict(f"Image {image.id} has no data to boot from.")
        target = self.base_dir / image.id
        if target.exists():
            return target
        async with self._locks.setdefault(image.id, asyncio.Lock()):
            if target.exists():
                return target
            await self._copy(image, target)
        return target

    async def _copy(self, image: ImageInfo, target: Path) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.base_dir / f".{image.id}.{uuidlib.uuid4().hex}{PART_SUFFIX}"
        try:
            if image.disk_format == "qcow2":
                # Overlays sit on raw bases (as Nova's image cache does by default).
                await qemu_img("convert", "-q", "-f", "qcow2", "-O", "raw", image.path, str(tmp))
            else:
                await asyncio.to_thread(shutil.copyfile, image.path, tmp)
            os.replace(tmp, target)
        except OSError as exc:
            raise errors.NovaAsyncError(f"cannot copy image {image.id} into the image cache: "
                                        f"{exc.strerror or exc}") from None
        finally:
            tmp.unlink(missing_ok=True)
        log.info("image cached", image_id=image.id, bytes=target.stat().st_size)

    def sweep_partial(self) -> None:
        """Remove copies a crash interrupted (only at start-up, when no copy is running)."""
        for directory in (self.base_dir, self.base_dir / TEMPLATE_DIR):
            if directory.is_dir():
                for stale in directory.glob(f".*{PART_SUFFIX}"):
                    stale.unlink(missing_ok=True)


def instance_dir(instances_root: Path, instance_uuid: str) -> Path:
    return instances_root / canonical_uuid(instance_uuid)


def console_log(instances_root: Path, instance_uuid: str) -> Path:
    return instance_dir(instances_root, instance_uuid) / CONSOLE_LOG


async def config_drive(instances_root: Path, instance_uuid: str, content: DriveContent) -> Disk:
    """Write the instance's config drive into its directory; the CD-ROM that carries it."""
    iso = await build_config_drive(content, instance_dir(instances_root, instance_uuid) / CONFIG_DRIVE)
    # hdc: the secondary IDE master, where Nova's libvirt driver puts the config drive too.
    return Disk(path=str(iso), target="hdc", format="raw", device="cdrom")


async def remove_instance_dir(instances_root: Path, instance_uuid: str) -> bool:
    path = instance_dir(instances_root, instance_uuid)
    if not path.exists():
        return False
    await asyncio.to_thread(shutil.rmtree, path, ignore_errors=True)
    return True


def set_aside_ephemeral(instances_root: Path, instance_uuid: str) -> Path | None:
    """A rebuild that preserves the ephemeral disk: the disk moved out of the instance's
    directory (which is made anew) to where `prepare(keep_ephemeral=)` takes it back from.
    A copy set aside by an attempt that failed before taking it back is used again."""
    kept = instances_root / f".{instance_uuid}.eph0.kept"
    current = instance_dir(instances_root, instance_uuid) / "disk.eph0"
    if current.exists():
        os.replace(current, kept)
    return kept if kept.exists() else None


async def prepare(instances_root: Path, instance_uuid: str, base: Path | None, *, root_gb: int,
                  ephemeral_gb: int, swap_mb: int, keep_ephemeral: Path | None = None) -> list[Disk]:
    """Make the instance's disks from scratch (anything already there is discarded), but
    for the ephemeral disk `keep_ephemeral` names (set_aside_ephemeral), which is put back as
    it is. No `base`: a volume-backed instance, whose root (vda) is its volume; only the
    flavor's ephemeral and swap disks are local."""
    path = instance_dir(instances_root, instance_uuid)
    root = path / "disk"
    root_options = ["-F", "raw", "-b", str(base)]
    root_size = [f"{root_gb}G"] if root_gb else []  # 0: as big as the image, like Nova
    # The file system's calls go to a thread, in one hop (the root disk too, once its template
    # is made): a burst of builds is many of them.
    size, root_made = await asyncio.to_thread(
        _fresh_dir, path, base if root_gb else None, root_gb * GiB,
        (_template(instances_root, root_options, root_size), root) if base is not None else None)
    if base is not None and root_gb and size > root_gb * GiB:
        raise errors.InvalidInput(f"Flavor's disk is too small for requested image: the image is "
                                  f"{size} bytes, the flavor's disk {root_gb} GiB.")
    disks = []
    if base is not None:
        if not root_made:
            await _new_qcow2(instances_root, root, root_options, root_size)
        disks.append(Disk(path=str(root), target="vda"))
    if ephemeral_gb:
        eph = path / "disk.eph0"
        if keep_ephemeral is not None and keep_ephemeral.exists():
            os.replace(keep_ephemeral, eph)
        else:
            await _new_qcow2(instances_root, eph, [], [f"{ephemeral_gb}G"])
        disks.append(Disk(path=str(eph), target="vdb"))
    if swap_mb:
        swap = path / "disk.swap"
        await _new_qcow2(instances_root, swap, [], [f"{swap_mb}M"])
        disks.append(Disk(path=str(swap), target=f"vd{'c' if ephemeral_gb else 'b'}"))
    return disks


def _fresh_dir(path: Path, base: Path | None, room: int,
               copy: tuple[Path, Path] | None) -> tuple[int, bool]:
    """The instance's directory made anew (empty), and the size of `base` (0: none given).
    Then, when `base` fits in `room` bytes, `copy` (template, target) made, if that template
    exists (_copy_of): whether it was."""
    size = base.stat().st_size if base is not None else 0
    try:
        path.mkdir(parents=True)
    except FileExistsError:   # an earlier attempt's
        shutil.rmtree(path)
        path.mkdir()
    if copy is None or (base is not None and size > room):
        return size, False
    return size, _copy_of(*copy)


BLOCK = 4096


@functools.lru_cache(maxsize=64)
def _template_blocks(template: Path) -> tuple[int, tuple[tuple[int, bytes], ...]]:
    """A template's length and its blocks that are not all zeros, with their offsets (a new
    qcow2 is a few such blocks: header, refcount table and block, L1 table). The same key
    always names the same bytes (see _new_qcow2), so they are read once."""
    data = template.read_bytes()
    blocks = ((at, data[at:at + BLOCK]) for at in range(0, len(data), BLOCK))
    return len(data), tuple((at, block) for at, block in blocks if block.count(0) != len(block))


def _copy_of(template: Path, target: Path) -> bool:
    """`target` made a copy of `template`, False when there is no template yet. Written as a
    sparse file, its zeros left as holes (they read as zeros): a new disk is one create and
    a few small writes, and allocates only what qemu-img's output holds besides zeros."""
    try:
        size, blocks = _template_blocks(template)
    except FileNotFoundError:
        return False
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        for at, block in blocks:
            os.pwrite(fd, block, at)
        os.ftruncate(fd, size)
    finally:
        os.close(fd)
    return True


def _template(instances_root: Path, options: list[str], size: list[str]) -> Path:
    """Where the template of `qemu-img create -f qcow2 <options> <target> <size>` is kept."""
    key = hashlib.sha256("\0".join([*options, "--", *size]).encode()).hexdigest()[:32]
    return instances_root / BASE_DIR / TEMPLATE_DIR / f"{key}.qcow2"


async def _new_qcow2(instances_root: Path, target: Path, options: list[str], size: list[str]) -> None:
    """`qemu-img create -f qcow2 <options> <target> <size>`, as a copy of the same command's output
    made once. A fresh overlay (or blank disk) is a header and empty tables, byte for byte the
    same for the same backing file and size, so copying one is what a new qemu-img would
    write, without a process per disk: a burst of builds is otherwise mostly forks.

    The template is kept beside the base images, under a name derived from the arguments;
    it is written under a temporary name and renamed, so a concurrent build or a crash never
    sees half of one (two builds racing both make it; the rename makes that harmless)."""
    template = _template(instances_root, options, size)
    if await asyncio.to_thread(_copy_of, template, target):
        return
    template.parent.mkdir(parents=True, exist_ok=True)
    tmp = template.parent / f".{template.stem}.{uuidlib.uuid4().hex}{PART_SUFFIX}"
    try:
        await qemu_img("create", "-q", "-f", "qcow2", *options, str(tmp), *size)
        os.replace(tmp, template)
    finally:
        tmp.unlink(missing_ok=True)
    await asyncio.to_thread(_copy_of, template, target)


QEMU_USER = "libvirt-qemu"   # whom Debian's libvirt runs QEMU as (qemu.conf `user`)


def unreachable_by_qemu(path: Path, user: str = QEMU_USER) -> str | None:
    """Why QEMU, running as `user`, cannot open files under `path` (a directory it cannot
    search on the way), or None when it can — or when there is no such user to check for.
    Caught at start-up, the user reads one line instead of a guest that fails to boot."""
    try:
        account = pwd.getpwnam(user)
    except KeyError:
        return None
    groups = {account.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}
    for directory in [path, *path.parents]:
        try:
            st = directory.stat()
        except OSError:
            continue  # not made yet: the compute host makes it, searchable
        if st.st_uid == account.pw_uid:
            bit = stat.S_IXUSR
        elif st.st_gid in groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return (f"QEMU runs as {user} and cannot reach {path}: {directory} is mode "
                    f"{stat.filemode(st.st_mode)}. Let it through (chmod o+x {directory}) or choose a "
                    "--state-dir it can reach.")
    return None


# Resize. The disks are grown in place, so a revert needs what they were: before anything
# changes, the instance's disk files are copied into RESIZE_BACKUP (a copy of a qcow2
# overlay is only the guest's own writes; the base image is shared and never changes). The
# copy is made under a temporary name and renamed, so a backup that exists is complete;
# its manifest lists the files the instance had, so a revert knows which new ones to drop.
# A confirm removes the backup; a revert moves the files back.
RESIZE_BACKUP = "resize-orig"
_RESIZABLE = ("disk", "disk.eph0", "disk.swap")
_MANIFEST = "manifest"


def instance_disks(instances_root: Path, instance_uuid: str, *, config_drive: bool,
                   root: bool = True) -> list[Disk]:
    """The disks the instance has now, in the order and with the targets a build gives them;
    `root` False: volume-backed, its vda is its root volume (volume_disks)."""
    path = instance_dir(instances_root, instance_uuid)
    found = [Disk(path=str(path / "disk"), target="vda")] if root else []
    if (path / "disk.eph0").exists():
        found.append(Disk(path=str(path / "disk.eph0"), target="vdb"))
    if (path / "disk.swap").exists():
        found.append(Disk(path=str(path / "disk.swap"),
                          target=f"vd{'c' if (path / 'disk.eph0').exists() else 'b'}"))
    if config_drive and (path / CONFIG_DRIVE).exists():
        found.append(Disk(path=str(path / CONFIG_DRIVE), target="hdc", format="raw", device="cdrom"))
    return found


def _backup_now(path: Path) -> None:
    target = path / RESIZE_BACKUP
    if target.is_dir():
        return  # complete: made by an earlier attempt of this resize
    tmp = path / f".{RESIZE_BACKUP}{PART_SUFFIX}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    present = [name for name in _RESIZABLE if (path / name).exists()]
    for name in present:
        shutil.copy2(path / name, tmp / name)
    (tmp / _MANIFEST).write_text("\n".join(present) + "\n")
    os.replace(tmp, target)


async def backup_for_resize(instances_root: Path, instance_uuid: str, *, root: bool = True) -> None:
    """`root` False: volume-backed, no root disk here (its directory still is)."""
    path = instance_dir(instances_root, instance_uuid)
    must = path / "disk" if root else path
    if not must.exists():
        raise errors.NovaAsyncError(f"the instance's {'root disk' if root else 'directory'} {must} is missing")
    await asyncio.to_thread(_backup_now, path)


async def resize_disks(instances_root: Path, instance_uuid: str, *, root_gb: int, ephemeral_gb: int,
                       swap_mb: int) -> None:
    """Make the disks what the new flavor says: the root disk and ephemeral disk grow (a
    disk never shrinks: the API refuses a smaller root disk), swap is made afresh. Running
    it twice does the same as once."""
    path = instance_dir(instances_root, instance_uuid)
    root = path / "disk"
    if root_gb and root.exists() and await _virtual_size(root) < root_gb * GiB:
        await qemu_img("resize", "-q", str(root), f"{root_gb}G")
    eph = path / "disk.eph0"
    if ephemeral_gb:
        if not eph.exists():
            await qemu_img("create", "-q", "-f", "qcow2", str(eph), f"{ephemeral_gb}G")
        elif await _virtual_size(eph) < ephemeral_gb * GiB:
            await qemu_img("resize", "-q", str(eph), f"{ephemeral_gb}G")
    else:
        eph.unlink(missing_ok=True)
    swap = path / "disk.swap"
    swap.unlink(missing_ok=True)
    if swap_mb:
        await qemu_img("create", "-q", "-f", "qcow2", str(swap), f"{swap_mb}M")


async def _virtual_size(path: Path) -> int:
    done = await process.run("qemu-img", "info", "-U", "--output=json", str(path), timeout=60)
    if done.returncode != 0:
        raise errors.NovaAsyncError(f"qemu-img info {path} failed: {done.output.strip()[-500:]}")
    return int(json.loads(done.output)["virtual-size"])


def _restore_now(path: Path) -> None:
    backup = path / RESIZE_BACKUP
    if not backup.is_dir():
        return  # restored already
    kept = set((backup / _MANIFEST).read_text().split())
    for name in _RESIZABLE:
        if name not in kept:
            (path / name).unlink(missing_ok=True)   # made by the resize
        elif (backup / name).exists():
            os.replace(backup / name, path / name)  # not yet moved back
    shutil.rmtree(backup)


async def restore_after_revert(instances_root: Path, instance_uuid: str) -> None:
    """The disks as they were before the resize (idempotent, safe to redo after a crash)."""
    await asyncio.to_thread(_restore_now, instance_dir(instances_root, instance_uuid))


# A move to another host (resize, cold migration) leaves the source's copy of the instance's
# directory behind, unless the two hosts share it (NFS or CephFS, or the simulated hosts of
# one process): then it is the very directory the guest now runs from. Each host marks the
# directory when a move passes through it (a file named after the host) and looks for the
# other's mark: seen, the directory is shared and stays; not seen, it is this host's own
# copy, removed once the move is over (confirmed, at the source; reverted, at the destination).
def mark_moving(instances_root: Path, instance_uuid: str, host_name: str) -> None:
    path = instance_dir(instances_root, instance_uuid)
    path.mkdir(parents=True, exist_ok=True)
    (path / _moved_by(host_name)).touch()


def shared_with(instances_root: Path, instance_uuid: str, other_host: str) -> bool:
    """Whether this host's directory of the instance is `other_host`'s too (see mark_moving)."""
    return (instance_dir(instances_root, instance_uuid) / _moved_by(other_host)).exists()


def _moved_by(host_name: str) -> str:
    return ".moved-by-" + hashlib.blake2b(host_name.encode(), digest_size=8).hexdigest()


async def drop_resize_backup(instances_root: Path, instance_uuid: str) -> None:
    backup = instance_dir(instances_root, instance_uuid) / RESIZE_BACKUP
    await asyncio.to_thread(shutil.rmtree, backup, ignore_errors=True)


async def snapshot_root(instances_root: Path, instance_uuid: str, target: Path) -> None:
    """The root disk, overlay and base together, as one standalone qcow2 at `target`.

    `-U` reads the image although QEMU holds it open: the caller makes sure the guest is not
    writing (it is paused or off), which is what makes the copy consistent."""
    root = instance_dir(instances_root, instance_uuid) / "disk"
    tmp = target.with_name(f".{target.name}{PART_SUFFIX}")
    try:
        await qemu_img("convert", "-q", "-U", "-f", "qcow2", "-O", "qcow2", str(root), str(tmp))
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


RESCUE_DISK = "disk.rescue"


async def rescue_disk(instances_root: Path, instance_uuid: str, base: Path) -> Path:
    """A fresh rescue disk over the rescue image's base file (what an earlier attempt left is
    replaced): the image's size, its writes its own, dropped at unrescue."""
    target = instance_dir(instances_root, instance_uuid) / RESCUE_DISK
    target.unlink(missing_ok=True)
    await _new_qcow2(instances_root, target, ["-F", "raw", "-b", str(base)], [])
    return target


def drop_rescue_disk(instances_root: Path, instance_uuid: str) -> None:
    (instance_dir(instances_root, instance_uuid) / RESCUE_DISK).unlink(missing_ok=True)
