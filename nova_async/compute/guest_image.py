"""The demo guest: Debian's kernel plus a busybox initramfs, built offline and cached.

A real guest needs an image, and a lab box or CI runner has no internet, only Debian's
package mirror. So the guest is assembled from two Debian packages: the kernel from
`linux-image-amd64` (apt-get download, dpkg-deb -x) and `busybox-static`. It boots by
direct kernel boot (Nova's `kernel_id` / `ramdisk_id` image properties), reads its config
drive, reports what it found on the serial console and powers off on the ACPI power button:
enough to prove that a server we build is a real machine seeing what Nova gave it.

Why extract `vmlinux`? Under TCG the uncompressed ELF boots 2–3× faster than `vmlinuz`
(no in-guest decompression, QEMU loads it through its PVH entry point). Debian 12
compresses its kernel with xz; we find the payload by magic bytes, decompress it in
Python, and check that the result is an ELF. Before the image is cached it boots once
under TCG; if `vmlinux` does not come up, `vmlinuz` is used instead and the manifest says so.

Debian builds the drivers the guest needs (virtio, isofs, ACPI button, evdev…) as modules
and ships no modules.dep in the package (depmod runs at install time), so we read each
module's `depends=` from its `.modinfo` section and load them in dependency order.

The cache lives outside any checkout (`default_cache_dir()`), so every clone, CI run and
state dir on the machine shares one download.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nova_async.common import build_cache, errors, process

RECIPE = 2                  # bump when the init script or module list changes: rebuilds caches
                            # (2: the manifest records Glance's md5 and sha512 of each file)
KERNEL_META = "linux-image-amd64"
BUSYBOX = Path("/bin/busybox")
CMDLINE = "console=ttyS0 quiet no_timer_check"   # see build.DEFAULT_CMDLINE
READY_LINE = "nova-async-guest: ready"
# What the guest loads, in no particular order (dependencies are worked out from .modinfo):
# virtio disks and NIC, the IDE CD-ROM path (ata_piix → sr_mod), ISO 9660, and the ACPI power
# button with evdev so busybox acpid sees the button press.
WANTED_MODULES = ("virtio_pci", "virtio_blk", "virtio_net", "isofs", "ata_piix", "sr_mod", "button", "evdev")

_MAGICS = (("xz", b"\xfd7zXZ\x00"), ("zstd", b"\x28\xb5\x2f\xfd"), ("gzip", b"\x1f\x8b\x08"))


class GuestImageError(errors.NovaAsyncError):
    """The demo guest could not be built; the message says which step failed."""


def default_cache_dir() -> Path:
    """/var/cache/nova-async/guest-image as root, else $XDG_CACHE_HOME/nova-async/guest-image."""
    if os.geteuid() == 0:
        return Path("/var/cache/nova-async/guest-image")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base, "nova-async", "guest-image")


# ---- vmlinux out of vmlinuz -------------------------------------------------------------

def _decompress(kind: str, blob: bytes) -> bytes | None:
    try:
        if kind == "xz":
            return lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(blob)
        if kind == "gzip":
            return gzip.GzipFile(fileobj=io.BytesIO(blob)).read1(1 << 30)
        if kind == "zstd" and shutil.which("zstd"):
            # Python 3.11 has no zstd module; Debian 12 uses xz, so this path is for later kernels.
            done = subprocess.run(["zstd", "-dcq"], input=blob, capture_output=True, check=False)
            return done.stdout or None
    except (lzma.LZMAError, OSError, EOFError):
        return None
    return None


def extract_vmlinux(vmlinuz: bytes) -> bytes:
    """The uncompressed ELF kernel inside a bzImage (what scripts/extract-vmlinux does)."""
    for kind, magic in _MAGICS:
        start = vmlinuz.find(magic)
        while start != -1:
            out = _decompress(kind, vmlinuz[start:])
            if out and out.startswith(b"\x7fELF"):
                return out
            start = vmlinuz.find(magic, start + 1)
    raise GuestImageError("no xz, zstd or gzip payload holding an ELF kernel found in vmlinuz")


# ---- kernel modules -----------------------------------------------------------------------

def modinfo(ko: bytes) -> dict[str, str]:
    """Key=value strings of an ELF64 kernel module's .modinfo section."""
    if ko[:4] != b"\x7fELF" or ko[4] != 2:
        raise GuestImageError("not an ELF64 kernel module")
    shoff, = struct.unpack_from("<Q", ko, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ko, 0x3A)

    def section(i: int) -> tuple[int, int, int]:
        name, _t, _f, _a, off, size = struct.unpack_from("<IIQQQQ", ko, shoff + i * shentsize)
        return name, off, size

    _, stroff, _ = section(shstrndx)
    for i in range(shnum):
        name, off, size = section(i)
        if ko[stroff + name:ko.index(b"\0", stroff + name)] == b".modinfo":
            pairs = (s.split(b"=", 1) for s in ko[off:off + size].split(b"\0") if b"=" in s)
            return {k.decode(): v.decode(errors="replace") for k, v in pairs}
    return {}


def load_order(wanted: list[str] | tuple[str, ...], depends: dict[str, list[str]]) -> list[str]:
    """Every wanted module and what it depends on, each after its dependencies."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order:
            return
        if name in visiting:
            raise GuestImageError(f"module dependency cycle through {name}")
        visiting.add(name)
        for dep in depends.get(name, []):
            visit(dep)
        visiting.discard(name)
        order.append(name)

    for name in wanted:
        visit(name)
    return order


def _norm(name: str) -> str:
    return name.replace("-", "_")


def collect_modules(modules_root: Path, wanted: tuple[str, ...] = WANTED_MODULES) -> list[tuple[str, bytes]]:
    """(name, uncompressed .ko) in load order, skipping what the kernel has built in."""
    builtin = {_norm(Path(line).name.split(".ko")[0])
               for line in (modules_root / "modules.builtin").read_text().split()}
    files = {_norm(p.name.split(".ko")[0]): p for p in modules_root.rglob("*.ko*")}
    blobs: dict[str, bytes] = {}
    depends: dict[str, list[str]] = {}
    pending = [m for m in wanted if m not in builtin]
    while pending:
        name = pending.pop()
        if name in blobs or name in builtin:
            continue
        if name not in files:
            raise GuestImageError(f"kernel module {name} is neither built in nor shipped")
        raw = files[name].read_bytes()
        if files[name].name.endswith(".xz"):
            raw = lzma.decompress(raw)
        elif files[name].name.endswith(".zst"):
            raw = subprocess.run(["zstd", "-dcq"], input=raw, capture_output=True, check=True).stdout
        blobs[name] = raw
        deps = [_norm(d) for d in modinfo(raw).get("depends", "").split(",") if d]
        depends[name] = [d for d in deps if d not in builtin]
        pending += depends[name]
    return [(name, blobs[name]) for name in load_order([m for m in wanted if m not in builtin], depends)]


# ---- the initramfs ------------------------------------------------------------------------

# PID 1 of the guest. Every value read from the config drive is only ever expanded inside
# double quotes and printed with printf '%s': user data never becomes shell code.
INIT = r"""#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { printf 'nova-async-guest: %s\n' "$*"; }
while read -r m; do insmod "/lib/modules/$m.ko" || say "warning: cannot load module $m"; done < /etc/modules.order
# The ACPI power button arrives as an input event; acpid runs /etc/acpi/PWRF/00000080.
acpid -c /etc/acpi -l /dev/null
case " $(cat /proc/cmdline) " in *" nova_async.selftest "*) say "selftest ok"; poweroff -f ;; esac

field() {   # the first "NAME": "VALUE" in a JSON file whose VALUE uses only characters of $3
    tr ',{}' '\n\n\n' < "$2" | sed -n "s/.*\"$1\": *\"\([$3]*\)\".*/\1/p" | head -n 1
}
drive=""
tries=0
while [ -z "$drive" ] && [ "$tries" -lt 100 ]; do
    drive=$(findfs LABEL=config-2 2>/dev/null)
    for d in /dev/sr0 /dev/sr1 /dev/vd? /dev/sd?; do
        [ -z "$drive" ] && [ -b "$d" ] || continue
        if mount -t iso9660 -o ro "$d" /mnt/config 2>/dev/null; then
            [ -f /mnt/config/openstack/latest/meta_data.json ] && drive=$d
            umount /mnt/config
        fi
    done
    [ -n "$drive" ] || { usleep 100000; tries=$((tries + 1)); }
done
if [ -z "$drive" ]; then
    say "no config drive found"
elif ! mount -t iso9660 -o ro "$drive" /mnt/config; then
    say "cannot mount config drive $drive"
else
    md=/mnt/config/openstack/latest
    say "config_drive=$drive"
    say "uuid=$(field uuid "$md/meta_data.json" 0-9a-fA-F-)"
    if [ -f "$md/network_data.json" ]; then
        ip=$(field ip_address "$md/network_data.json" 0-9a-fA-F.:)
        mask=$(field netmask "$md/network_data.json" 0-9.)
        mac=$(field ethernet_mac_address "$md/network_data.json" 0-9a-fA-F:)
        say "ip=$ip"
        for n in /sys/class/net/*; do
            [ "$(cat "$n/address")" = "$mac" ] && dev=${n##*/}
        done
        if [ -n "$dev" ] && [ -n "$ip" ]; then
            PREFIX=$(ipcalc -p "$ip" "${mask:-255.255.255.255}" | sed -n 's/^PREFIX=//p')
            ip addr add "$ip/${PREFIX:-32}" dev "$dev" && ip link set "$dev" up &&
                say "configured $ip/${PREFIX:-32} on $dev ($mac)"
        elif [ -n "$mac" ]; then
            say "no interface with MAC $mac"
        fi
    fi
    if [ -f "$md/user_data" ]; then
        say "user_data_base64=$(base64 "$md/user_data" | tr -d '\n')"
        while IFS= read -r line || [ -n "$line" ]; do say "user_data=$line"; done < "$md/user_data"
    fi
fi
say "ready"
while :; do sleep 86400; done
"""

POWER_BUTTON = """#!/bin/sh
echo 'nova-async-guest: power button pressed, powering off' > /dev/console
sync
poweroff -f
"""


def cpio_newc(entries: list[tuple[str, int, bytes, tuple[int, int]]]) -> bytes:
    """An initramfs archive: (path, mode, data, (rdev major, minor)) in the kernel's newc format.

    Written here rather than with cpio(1) so device nodes (/dev/console, which the kernel
    opens before init runs) need no root and no mknod on the build host."""
    out = bytearray()

    def add(ino: int, name: str, mode: int, data: bytes, rdev: tuple[int, int]) -> None:
        raw = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(raw), 0)
        out.extend(b"070701" + b"".join(b"%08X" % f for f in fields) + raw)
        out.extend(b"\0" * (-len(out) % 4) + data)
        out.extend(b"\0" * (-len(out) % 4))

    for ino, (path, mode, data, rdev) in enumerate(entries, start=1):
        add(ino, path.lstrip("/"), mode, data, rdev)
    add(0, "TRAILER!!!", 0, b"", (0, 0))
    return bytes(out)


def initramfs(busybox: bytes, modules: list[tuple[str, bytes]]) -> bytes:
    d, f, x, lnk, chr_ = 0o40755, 0o100644, 0o100755, 0o120777, 0o20600
    entries = [(p, d, b"", (0, 0)) for p in ("bin", "dev", "etc", "etc/acpi", "etc/acpi/PWRF", "lib",
                                             "lib/modules", "mnt", "mnt/config", "proc", "sys", "tmp")]
    entries += [("dev/console", chr_, b"", (5, 1)), ("dev/null", chr_ | 0o066, b"", (1, 3)),
                ("bin/busybox", x, busybox, (0, 0)), ("bin/sh", lnk, b"busybox", (0, 0)),
                ("init", x, INIT.encode(), (0, 0)),
                ("etc/acpi/PWRF/00000080", x, POWER_BUTTON.encode(), (0, 0)),
                ("etc/modules.order", f, "".join(f"{n}\n" for n, _ in modules).encode(), (0, 0))]
    entries += [(f"lib/modules/{name}.ko", f, blob, (0, 0)) for name, blob in modules]
    return gzip.compress(cpio_newc(entries), compresslevel=6, mtime=0)


# ---- building and caching -----------------------------------------------------------------

@dataclass(frozen=True)
class GuestImage:
    kernel: Path            # vmlinux, or vmlinuz when vmlinux did not boot
    initrd: Path
    cmdline: str
    kernel_version: str
    built: bool             # False: reused from the cache
    note: str = ""
    # per file name: size, md5, sha512, as the build recorded them (image/demo.py adopts the
    # files with them instead of hashing them again at each fresh database)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary(self) -> str:
        how = "built" if self.built else "cached"
        return (f"guest-image: {how} {self.kernel_version}: kernel {self.kernel}, initrd {self.initrd}"
                + (f"\nguest-image: {self.note}" if self.note else ""))


def load_cached(out: Path) -> GuestImage | None:
    """The cached image when its manifest matches this recipe and its files are intact."""
    try:
        m = json.loads((out / "manifest.json").read_text())
        if m["recipe"] != RECIPE:
            return None
        for name, size in m["sizes"].items():
            if (out / name).stat().st_size != size:
                return None
        return GuestImage(kernel=out / m["kernel"], initrd=out / "initrd.img", cmdline=CMDLINE,
                          kernel_version=m["kernel_version"], built=False, note=m.get("note", ""),
                          facts=build_cache.recorded_facts(m))
    except (OSError, ValueError, KeyError, TypeError):
        return None


async def _run(*argv: str, cwd: Path | None = None, timeout: float = 600) -> str:
    try:
        done = await process.run(*argv, cwd=cwd, timeout=timeout)
    except process.ProcessTimeout as exc:
        raise GuestImageError(exc.message) from None
    if done.returncode != 0:
        raise GuestImageError(f"`{' '.join(argv)}` failed ({done.returncode}): {done.output.strip()[-400:]}")
    return done.output


async def _fetch_kernel(work: Path) -> tuple[Path, Path]:
    """Unpack the kernel package linux-image-amd64 points at; returns (vmlinuz, modules dir)."""
    deps = await _run("apt-cache", "depends", KERNEL_META)
    found = re.search(r"Depends: (linux-image-[0-9][^\s]*)", deps)
    if not found:
        raise GuestImageError(f"{KERNEL_META} names no kernel package (run apt-get update?)")
    await _run("apt-get", "download", "-q", found.group(1), cwd=work)
    deb = next(work.glob(f"{found.group(1)}_*.deb"))
    root = work / "root"
    await _run("dpkg-deb", "-x", str(deb), str(root))
    vmlinuz = next((root / "boot").glob("vmlinuz-*"))
    return vmlinuz, root / "lib" / "modules" / vmlinuz.name.removeprefix("vmlinuz-")


async def boots(kernel: Path, initrd: Path, timeout: float = 90, accel: str = "tcg") -> float | None:
    """Seconds until the guest's init ran (under TCG, or `accel`), or None when it never got there."""
    started = time.monotonic()
    cpu = ("-cpu", "host") if accel == "kvm" else ()
    proc = await asyncio.create_subprocess_exec(
        "qemu-system-x86_64", "-accel", accel, *cpu, "-machine", "pc", "-m", "256", "-nodefaults",
        "-display", "none", "-no-reboot", "-serial", "stdio", "-kernel", str(kernel),
        "-initrd", str(initrd), "-append", f"{CMDLINE} nova_async.selftest",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(timeout):
            async for line in proc.stdout:
                if b"nova-async-guest: selftest ok" in line:
                    return time.monotonic() - started
    except TimeoutError:
        pass
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    return None


async def build(out: Path) -> GuestImage:
    if not BUSYBOX.exists() or b"ld-linux" in BUSYBOX.read_bytes()[:8192]:
        raise GuestImageError(f"{BUSYBOX} is missing or not static: apt-get install busybox-static")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="guest-image-", dir=out) as tmp:
        work = Path(tmp)
        vmlinuz, modules_root = await _fetch_kernel(work)
        version = modules_root.name
        vmlinux = await asyncio.to_thread(extract_vmlinux, vmlinuz.read_bytes())
        modules = await asyncio.to_thread(collect_modules, modules_root)
        initrd = await asyncio.to_thread(initramfs, BUSYBOX.read_bytes(), modules)
        staged = {"vmlinux": vmlinux, "vmlinuz": vmlinuz.read_bytes(), "initrd.img": initrd}
        for name, blob in staged.items():
            (work / name).write_bytes(blob)
        kernel, note = "vmlinux", ""
        if await boots(work / "vmlinux", work / "initrd.img") is None:
            if await boots(work / "vmlinuz", work / "initrd.img") is None:
                raise GuestImageError(f"neither vmlinux nor vmlinuz of {version} boots the initramfs under TCG")
            kernel, note = "vmlinuz", "vmlinux did not boot under TCG; using the slower vmlinuz"
        manifest = {"recipe": RECIPE, "kernel": kernel, "kernel_version": version,
                    "note": note, "modules": [n for n, _ in modules],
                    "sizes": {n: len(b) for n, b in staged.items()},
                    "sha256": {n: hashlib.sha256(b).hexdigest() for n, b in staged.items()},
                    "md5": {n: hashlib.md5(b, usedforsecurity=False).hexdigest() for n, b in staged.items()},
                    "sha512": {n: hashlib.sha512(b).hexdigest() for n, b in staged.items()}}
        (out / "manifest.json").unlink(missing_ok=True)
        for name in staged:
            os.replace(work / name, out / name)
        # The manifest goes last: a build interrupted before this point is simply redone.
        (work / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        os.replace(work / "manifest.json", out / "manifest.json")
    image = load_cached(out)
    assert image is not None
    return GuestImage(**{**image.__dict__, "built": True})


async def build_or_reuse(out: Path | None = None) -> GuestImage:
    """The cached demo guest, building it first when it is missing or stale."""
    return await build_cache.build_once(out or default_cache_dir(), load_cached, build, "guest-image-*")
