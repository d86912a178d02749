"""A stock Debian 12 cloud image, built offline from Debian's packages and cached.

The demo guest (guest_image.py) proves that a server boots and reads its config drive; a
user wants a guest they can log in to. This is the guest a real cloud would offer: Debian
bookworm with cloud-init, openssh-server and sudo, nothing of ours inside. No root
password, no SSH key, no user: cloud-init makes the `debian` user (its Debian default) and
gives it the keypair the server was booted with, from the config drive or the metadata
service, exactly as on any OpenStack cloud.

How it is made, without loop devices or mounts (these machines may not allow them):
`mmdebstrap` (root mode) installs a minimal bookworm into a directory, `mkfs.ext4 -d`
writes that directory into a raw file as a whole-disk ext4 file system, and
`qemu-img convert -c` turns it into a compressed qcow2 (compression costs nothing at boot:
compute converts a qcow2 image to a raw base once per host). Docs, man pages, info and
locales are never unpacked; mmdebstrap drops apt's lists and caches.

The network: cloud-init 22.4 on Debian renders its network config for ifupdown
(/etc/network/interfaces.d/50-cloud-init, its `eni` renderer, first in its list on Debian;
systemd-networkd would also do, but ifupdown is what Debian 12's cloud-init package
recommends) and uses isc-dhcp-client both for a DHCP interface and for the ephemeral DHCP
it runs before asking the metadata service. Seen working: the e2e boot's NIC comes up with
the static address of the config drive's network_data.

The boot: there is no boot loader in the disk. Writing GRUB into a partitioned disk image
needs a loop device or a second tool chain (grub-mkimage plus a hand-made partition table
and core image placement); instead the image is AMI-style, as Nova models it: a kernel
image (aki) and a ramdisk image (ari) beside the machine image, named by its `kernel_id` /
`ramdisk_id` properties, with `os_command_line` saying `root=/dev/vda`. Direct kernel boot
is also what is fast under TCG: no firmware boot menu and no boot loader reading the disk
through emulated BIOS calls. The kernel and initramfs are those the packages installed in
the image (linux-image-cloud-amd64, initramfs-tools), copied out of /boot; the image keeps
them too, with their modules, so it stays a complete Debian system.

Unlike the demo guest, the compressed `vmlinuz` is booted, not an extracted `vmlinux`:
Debian's cloud kernel is LZ4-compressed, and measured here under TCG the uncompressed
kernel reached /init 0.5 s sooner (6.0 s against 6.5 s) in a boot of two minutes, for
39 MB more to store and copy (53 MB against 14 MB). The xz kernel of the demo guest is
another matter (guest_image.py).

Measured on this machine (2 cores shared with other builds, TCG): the build takes 2 to 6
minutes with the load (mmdebstrap most of it, mkfs 1.5 s, compressing 20 s); the tree is
403 MB, the disk 725 MiB virtual and 142 MiB as compressed qcow2, the kernel 14 MB, the
initramfs 16 MB. Booted through the service with a config drive, cloud-init
printed the SSH host keys and "finished" 70–110 s after the create request (systemd at
12 s; each cloud-init stage's Python start-up costs 5–30 s under TCG).

The file system is the whole disk (no partition table), mounted by its label from fstab;
the initramfs checks it (fsck.ext4) before mounting it read-only, as on any Debian system.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nova_async.common import build_cache, errors, process
from nova_async.compute import guest_image

RECIPE = 3                  # bump when the package list or the recipe changes: rebuilds caches
SUITE = "bookworm"
# What cloud-init needs to make the guest reachable, and a kernel to boot it:
#   systemd-sysv, udev     init, and devices (virtio NIC, the config drive's CD-ROM) as they come
#   ifupdown, isc-dhcp-client   cloud-init's network renderer on Debian, and its DHCP client
#   e2fsprogs              resize2fs for cloud-init's resizefs, fsck for systemd-fsck
#   linux-image-cloud-amd64, initramfs-tools   Debian's cloud kernel (virtio and ATA as modules)
PACKAGES = ("systemd-sysv", "udev", "cloud-init", "openssh-server", "sudo", "ifupdown",
            "isc-dhcp-client", "iproute2", "netbase", "e2fsprogs", "linux-image-cloud-amd64",
            "initramfs-tools")
# Never unpacked: nobody reads them on a cloud guest (dpkg's path-exclude, as Debian's
# own minimal images do); the copyright files stay.
EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*",
            "/usr/share/lintian/*", "/usr/share/linda/*")
INCLUDES = ("/usr/share/doc/*/copyright", "/usr/share/locale/locale.alias")
LABEL = "debian-root"
# cloud-init's Debian default locale (en_US.UTF-8) needs the locales package and a
# locale-gen run at first boot; C.UTF-8 is built into libc.
CLOUD_CFG = {"etc/cloud/cloud.cfg.d/01_locale.cfg": "# C.UTF-8 is built in: nothing to generate at boot\n"
                                                     "locale: C.UTF-8\n"}
# No "quiet": the console log is how a user (and the boot check) sees cloud-init's keys and
# its "finished" line, which reach the console either way; kernel messages help debugging.
# "no_timer_check" as in build.DEFAULT_CMDLINE.
CMDLINE = "root=/dev/vda console=ttyS0 no_timer_check"
DEFAULT_USER = "debian"
# cloud-init's last line on the console, and the header it prints host keys under.
FINISHED_MARK = "Cloud-init v. "
KEYS_MARK = "-----BEGIN SSH HOST KEY KEYS-----"
# Free space in the file system beyond what the tree uses, for logs and host keys; cloud-init
# grows the file system to the flavor's disk on first boot (resizefs).
SLACK = 256 * 1024 * 1024
# Measured under TCG: 256 MiB reaches cloud-init's end; 128 MiB panics unpacking the initramfs.
MIN_RAM_MB = 256


class CloudImageError(errors.NovaAsyncError):
    """The cloud image could not be built; the message says which step failed."""


def default_cache_dir() -> Path:
    """/var/cache/nova-async/cloud-image as root, else $XDG_CACHE_HOME/nova-async/cloud-image."""
    return guest_image.default_cache_dir().parent / "cloud-image"


SYSTEM_CACHE = Path("/var/cache/nova-async/cloud-image")


def find_cached() -> CloudImage | None:
    """The image in this user's cache, else the one root built (`sudo make cloud-image`: the
    build needs root, the service need not)."""
    for out in dict.fromkeys((default_cache_dir(), SYSTEM_CACHE)):
        if (image := load_cached(out)) is not None:
            return image
    return None


@dataclass(frozen=True)
class CloudImage:
    disk: Path              # qcow2, whole-disk ext4
    kernel: Path            # vmlinuz (see the module docstring)
    initrd: Path
    cmdline: str
    kernel_version: str
    cloud_init: str         # its Debian package version
    virtual_size: int       # bytes the disk shows the guest
    built: bool             # False: reused from the cache
    build_seconds: float = 0.0
    # Per file name (disk.qcow2, vmlinuz, initrd.img): size, md5 and sha512, as Glance
    # reports them, computed once at build time so registering costs no hashing.
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary(self) -> str:
        how = "built" if self.built else "cached"
        took = f" in {self.build_seconds:.0f} s" if self.built else ""
        return (f"cloud-image: {how}{took}: Debian 12 ({self.kernel_version}, cloud-init {self.cloud_init}), "
                f"disk {self.disk} ({self.disk.stat().st_size / 2**20:.0f} MiB, "
                f"{self.virtual_size / 2**30:.2f} GiB virtual), kernel {self.kernel}, initrd {self.initrd}")

    def properties(self) -> dict[str, str]:
        """The machine image's properties (Glance's common ones), besides its kernel and ramdisk."""
        return {"os_command_line": self.cmdline, "os_distro": "debian", "os_version": "12",
                "os_type": "linux", "os_admin_user": DEFAULT_USER, "default_user": DEFAULT_USER}

    @property
    def min_disk_gb(self) -> int:
        """The smallest flavor root disk that holds the image (Glance's min_disk, whole GiB)."""
        return -(-self.virtual_size // 2**30)


def load_cached(out: Path) -> CloudImage | None:
    """The cached image when its manifest matches this recipe and its files are intact."""
    try:
        m = json.loads((out / "manifest.json").read_text())
        if m["recipe"] != RECIPE:
            return None
        for name, size in m["sizes"].items():
            if (out / name).stat().st_size != size:
                return None
        return CloudImage(disk=out / "disk.qcow2", kernel=out / m["kernel"], initrd=out / "initrd.img",
                          cmdline=CMDLINE, kernel_version=m["kernel_version"], cloud_init=m["cloud_init"],
                          virtual_size=m["virtual_size"], built=False, build_seconds=m["build_seconds"],
                          facts=build_cache.recorded_facts(m))
    except (OSError, ValueError, KeyError, TypeError):
        return None


async def _run(*argv: str, timeout: float = 1800) -> str:
    try:
        done = await process.run(*argv, timeout=timeout)
    except process.ProcessTimeout as exc:
        raise CloudImageError(exc.message) from None
    if done.returncode != 0:
        raise CloudImageError(f"`{' '.join(argv[:3])} …` failed ({done.returncode}): {done.output.strip()[-600:]}")
    return done.output


FSTAB = f"LABEL={LABEL} / ext4 defaults,errors=remount-ro 0 1\n"


def mmdebstrap_argv(root: Path) -> list[str]:
    dpkg = [f"--dpkgopt=path-exclude={p}" for p in EXCLUDES] + [f"--dpkgopt=path-include={p}" for p in INCLUDES]
    # initramfs-tools finds the root file system's type by probing the device it mounts,
    # which a tree has none of, and so leaves fsck.ext4 out: it is told (FSTYPE) and the
    # initramfs made again, in mmdebstrap's chroot (it has /proc and /dev while hooks run).
    hooks = [f"--customize-hook=printf '%s' '{FSTAB}' > \"$1/etc/fstab\"",
             "--customize-hook=echo FSTYPE=ext4 > \"$1/etc/initramfs-tools/conf.d/fstype\"",
             '--customize-hook=chroot "$1" update-initramfs -u -k all']
    return ["mmdebstrap", "--mode=root", "--variant=minbase", "--include=" + ",".join(PACKAGES),
            *dpkg, *hooks, SUITE, str(root)]


def make_generic(root: Path) -> None:
    """Strip what makes the tree one machine rather than an image every server starts from:
    SSH host keys (cloud-init makes new ones and prints them on the console), the machine
    id (systemd makes one at first boot), the build host's name and resolver, and logs."""
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    (root / "etc/machine-id").write_text("")
    (root / "var/lib/dbus/machine-id").unlink(missing_ok=True)
    for name in ("etc/hostname", "etc/resolv.conf"):
        (root / name).unlink(missing_ok=True)
    for log in (root / "var/log").rglob("*"):
        if log.is_file():
            log.unlink()
    for leftover in (root / "boot").glob("*.dpkg-bak"):
        leftover.unlink()
    for name, text in CLOUD_CFG.items():
        (root / name).write_text(text)
    interfaces = root / "etc/network/interfaces"
    if "interfaces.d" not in (interfaces.read_text() if interfaces.exists() else ""):
        # ifupdown reads the file cloud-init renders (interfaces.d/50-cloud-init) only from here.
        interfaces.write_text("source /etc/network/interfaces.d/*\n\nauto lo\niface lo inet loopback\n")


def _tree_bytes(root: Path) -> int:
    total = 0
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            total += path.lstat().st_size
    return total


def _package_version(root: Path, package: str) -> str:
    status = (root / "var/lib/dpkg/status").read_text()
    for stanza in status.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " ")
        if fields.get("Package") == package:
            return fields.get("Version", "")
    raise CloudImageError(f"{package} is not installed in the image")


async def build(out: Path) -> CloudImage:
    if os.geteuid() != 0:
        # mmdebstrap's root mode makes the files root's; an unprivileged build would need
        # user namespaces and a tar-aware mkfs, which Debian 12's e2fsprogs is not.
        raise CloudImageError("building the cloud image needs root: run `sudo nova-async cloud-image`")
    for tool in ("mmdebstrap", "mkfs.ext4", "qemu-img"):
        if shutil.which(tool) is None:
            raise CloudImageError(f"{tool} is missing: apt-get install mmdebstrap e2fsprogs qemu-utils")
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cloud-image-", dir=out) as tmp:
        work = Path(tmp)
        root = work / "root"
        await _run(*mmdebstrap_argv(root))
        make_generic(root)
        vmlinuz = next((root / "boot").glob("vmlinuz-*"), None)
        if vmlinuz is None:
            raise CloudImageError("the image has no kernel in /boot")
        version = vmlinuz.name.removeprefix("vmlinuz-")
        initrd = root / "boot" / f"initrd.img-{version}"
        if not initrd.exists():
            raise CloudImageError(f"the image has no initramfs for {version}")
        kernel_name = "vmlinuz"
        shutil.copyfile(vmlinuz, work / kernel_name)
        shutil.copyfile(initrd, work / "initrd.img")
        cloud_init = _package_version(root, "cloud-init")
        size = (await asyncio.to_thread(_tree_bytes, root) * 5 // 4 + SLACK + 2**20 - 1) // 2**20 * 2**20
        raw = work / "disk.raw"
        with open(raw, "wb") as fh:
            fh.truncate(size)
        await _run("mkfs.ext4", "-q", "-F", "-L", LABEL, "-d", str(root), str(raw))
        shutil.rmtree(root)
        await _run("qemu-img", "convert", "-q", "-c", "-f", "raw", "-O", "qcow2", str(raw),
                   str(work / "disk.qcow2"))
        raw.unlink()
        files = (kernel_name, "initrd.img", "disk.qcow2")
        manifest = {"recipe": RECIPE, "kernel": kernel_name, "kernel_version": version,
                    "cloud_init": cloud_init, "virtual_size": size, "packages": list(PACKAGES),
                    "build_seconds": round(time.monotonic() - started, 1),
                    "sizes": {n: (work / n).stat().st_size for n in files}}
        for name in files:
            md5, sha512 = await asyncio.to_thread(_hashes, work / name)
            manifest.setdefault("md5", {})[name] = md5
            manifest.setdefault("sha512", {})[name] = sha512
        (out / "manifest.json").unlink(missing_ok=True)
        for name in files:
            os.replace(work / name, out / name)
        # The manifest goes last: a build interrupted before this point is simply redone.
        (work / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        os.replace(work / "manifest.json", out / "manifest.json")
    image = load_cached(out)
    assert image is not None
    return CloudImage(**{**image.__dict__, "built": True})


def _hashes(path: Path) -> tuple[str, str]:
    md5, sha512 = hashlib.md5(usedforsecurity=False), hashlib.sha512()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            md5.update(chunk)
            sha512.update(chunk)
    return md5.hexdigest(), sha512.hexdigest()


async def build_or_reuse(out: Path | None = None) -> CloudImage:
    """The cached cloud image, building it first when it is missing or stale."""
    return await build_cache.build_once(out or default_cache_dir(), load_cached, build, "cloud-image-*")
