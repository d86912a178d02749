import gzip
import hashlib
import json
import lzma
import re
import shutil
import struct
import subprocess

import pytest

from nova_async.compute import guest_image
from nova_async.compute.config_drive import DriveContent, Nic, drive_tree
from nova_async.compute.guest_image import (GuestImageError, collect_modules, cpio_newc, extract_vmlinux,
                                            initramfs, load_cached, load_order, modinfo)

ELF = b"\x7fELF\x02\x01\x01" + b"\0" * 57 + b"kernel text " * 1000


def bzimage(payload: bytes) -> bytes:
    """A stand-in for vmlinuz: setup code, a decoy magic, the payload, then trailing bytes."""
    return b"MZ" + b"\0" * 500 + b"\xfd7zXZ\x00 decoy" + b"\x90" * 300 + payload + b"\0\0\0\x10trailer"


def test_extracts_an_xz_compressed_kernel():
    assert extract_vmlinux(bzimage(lzma.compress(ELF, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32))) == ELF


def test_extracts_a_gzip_compressed_kernel():
    assert extract_vmlinux(bzimage(gzip.compress(ELF))) == ELF


def test_a_payload_that_is_not_elf_is_refused():
    with pytest.raises(GuestImageError, match="ELF"):
        extract_vmlinux(bzimage(lzma.compress(b"not a kernel" * 100)))


def fake_module(**info: str) -> bytes:
    """A minimal ELF64 relocatable with a .shstrtab and a .modinfo section."""
    modinfo_data = b"".join(f"{k}={v}".encode() + b"\0" for k, v in info.items())
    shstrtab = b"\0.shstrtab\0.modinfo\0"
    body = shstrtab + modinfo_data
    shoff = 64 + len(body)
    shoff += -shoff % 8
    header = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0,
                                                               64, 0, 0, 64, 3, 1)

    def sh(name: int, offset: int, size: int) -> bytes:
        return struct.pack("<IIQQQQIIQQ", name, 3 if name == 1 else 1, 0, 0, offset, size, 0, 0, 1, 0)

    sections = sh(0, 0, 0) + sh(1, 64, len(shstrtab)) + sh(11, 64 + len(shstrtab), len(modinfo_data))
    return (header + body).ljust(shoff, b"\0") + sections


def test_modinfo_reads_depends_from_the_module():
    assert modinfo(fake_module(license="GPL", depends="virtio,virtio_ring", name="virtio_pci")) == {
        "license": "GPL", "depends": "virtio,virtio_ring", "name": "virtio_pci"}


@pytest.mark.parametrize("wanted, depends, expected", [
    (["a"], {}, ["a"]),
    (["sr_mod", "isofs"], {"sr_mod": ["cdrom", "scsi_mod"], "scsi_mod": ["scsi_common"], "isofs": ["cdrom"]},
     ["cdrom", "scsi_common", "scsi_mod", "sr_mod", "isofs"]),
    (["top"], {"top": ["left", "right"], "left": ["base"], "right": ["base"]}, ["base", "left", "right", "top"]),
])
def test_modules_load_after_their_dependencies(wanted, depends, expected):
    assert load_order(wanted, depends) == expected


def test_a_dependency_cycle_is_reported():
    with pytest.raises(GuestImageError, match="cycle"):
        load_order(["a"], {"a": ["b"], "b": ["a"]})


def test_collect_modules_skips_builtins_and_decompresses(tmp_path):
    root = tmp_path / "6.1.0-test"
    (root / "kernel/drivers").mkdir(parents=True)
    (root / "modules.builtin").write_text("kernel/drivers/virtio/virtio.ko\n")
    (root / "kernel/drivers/virtio_blk.ko").write_bytes(fake_module(depends="virtio,virtio_ring"))
    (root / "kernel/drivers/virtio_ring.ko.xz").write_bytes(lzma.compress(fake_module(depends="")))
    (root / "kernel/drivers/isofs.ko").write_bytes(fake_module(depends=""))
    got = collect_modules(root, ("virtio", "virtio_blk", "isofs"))
    assert [name for name, _ in got] == ["virtio_ring", "virtio_blk", "isofs"]
    assert all(blob.startswith(b"\x7fELF") for _, blob in got)


def test_a_module_that_is_missing_is_an_error(tmp_path):
    (tmp_path / "modules.builtin").write_text("")
    with pytest.raises(GuestImageError, match="nosuch"):
        collect_modules(tmp_path, ("nosuch",))


def read_cpio(data: bytes) -> dict[str, tuple[int, bytes, tuple[int, int]]]:
    entries, pos = {}, 0
    while True:
        assert data[pos:pos + 6] == b"070701"
        f = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        name_end = pos + 110 + f[11]
        name = data[pos + 110:name_end - 1].decode()
        start = name_end + (-name_end % 4)
        body = data[start:start + f[6]]
        pos = start + f[6] + (-(start + f[6]) % 4)
        if name == "TRAILER!!!":
            return entries
        entries[name] = (f[1], body, (f[9], f[10]))


def test_cpio_archive_round_trips():
    entries = [("dir", 0o40755, b"", (0, 0)), ("dir/file", 0o100644, b"abc", (0, 0)),
               ("dev/console", 0o20600, b"", (5, 1))]
    assert read_cpio(cpio_newc(entries)) == {p: (m, d, r) for p, m, d, r in entries}


@pytest.mark.skipif(not shutil.which("cpio"), reason="cpio(1) not installed")
def test_cpio_archive_is_readable_by_cpio(tmp_path):
    archive = cpio_newc([("a", 0o40755, b"", (0, 0)), ("a/b.txt", 0o100644, b"hello\n", (0, 0))])
    listing = subprocess.run(["cpio", "-it", "--quiet"], input=archive, capture_output=True, check=True)
    assert listing.stdout.decode().split() == ["a", "a/b.txt"]


def test_initramfs_holds_init_console_and_ordered_modules():
    files = read_cpio(gzip.decompress(initramfs(b"BUSYBOX", [("virtio", b"V"), ("virtio_blk", b"B")])))
    assert files["init"][0] == 0o100755 and files["init"][1].startswith(b"#!/bin/sh")
    assert files["dev/console"][2] == (5, 1)
    assert files["bin/busybox"][1] == b"BUSYBOX"
    assert files["etc/modules.order"][1] == b"virtio\nvirtio_blk\n"
    assert files["lib/modules/virtio_blk.ko"][1] == b"B"
    assert b"poweroff -f" in files["etc/acpi/PWRF/00000080"][1]


def init_field_function() -> str:
    return re.search(r"^field\(\) \{.*?^\}", guest_image.INIT, re.M | re.S).group(0)


@pytest.mark.parametrize("name", ['plain', 'has "uuid": "00000000-0000-0000-0000-000000000000"',
                                  'comma, {brace} [bracket] $(x) `y` \\ end', "ünïcode"])
def test_the_guests_json_reader_finds_the_right_fields(tmp_path, name):
    tree = drive_tree(DriveContent(
        uuid="6f1c2a9e-1b1e-4c3b-9a55-0d1f2e3a4b5c", name=name, project_id="p",
        nics=(Nic(port_id="p1", mac="52:54:00:00:00:01", ip_address="10.1.2.3", netmask="255.255.0.0",
                  network_id="n1"),
              Nic(port_id="p2", mac="52:54:00:00:00:02", ip_address="10.9.9.9", netmask="255.0.0.0",
                  network_id="n2"))))
    for rel, body in tree.items():
        (tmp_path / rel.rsplit("/", 1)[1]).write_bytes(body)
    script = init_field_function() + """
field uuid meta_data.json 0-9a-fA-F-
field ip_address network_data.json 0-9a-fA-F.:
field netmask network_data.json 0-9.
field ethernet_mac_address network_data.json 0-9a-fA-F:
"""
    env = None
    if shutil.which("busybox"):     # the guest's own shell and tools, not the host's GNU ones
        bindir = tmp_path / "bin"
        bindir.mkdir()
        for tool in ("sh", "tr", "sed", "head"):
            (bindir / tool).symlink_to(shutil.which("busybox"))
        env = {"PATH": str(bindir)}
    out = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True,
                         env=env, executable=str(tmp_path / "bin" / "sh") if env else None)
    assert out.stdout.split("\n") == ["6f1c2a9e-1b1e-4c3b-9a55-0d1f2e3a4b5c", "10.1.2.3", "255.255.0.0",
                                      "52:54:00:00:00:01", ""]


def write_manifest(out, **over):
    files = {"vmlinux": ELF, "vmlinuz": b"z", "initrd.img": b"i"}
    for name, body in files.items():
        (out / name).write_bytes(body)
    manifest = {"recipe": guest_image.RECIPE, "kernel": "vmlinux", "kernel_version": "6.1.0-test",
                "sizes": {n: len(b) for n, b in files.items()},
                "md5": {n: hashlib.md5(b).hexdigest() for n, b in files.items()},
                "sha512": {n: hashlib.sha512(b).hexdigest() for n, b in files.items()}}
    (out / "manifest.json").write_text(json.dumps({**manifest, **over}))


def test_a_cache_built_with_another_command_line_boots_with_todays(tmp_path):
    """The command line is not part of what was built: a cache made before it changed (its
    manifest still naming the old one) boots with the current one."""
    write_manifest(tmp_path, cmdline="console=ttyS0 quiet")
    assert load_cached(tmp_path).cmdline == guest_image.CMDLINE


def test_a_complete_cache_is_reused(tmp_path):
    write_manifest(tmp_path)
    image = load_cached(tmp_path)
    assert image is not None and not image.built
    assert image.kernel == tmp_path / "vmlinux" and image.initrd == tmp_path / "initrd.img"
    assert image.facts["vmlinux"] == {"size": len(ELF), "md5": hashlib.md5(ELF).hexdigest(),
                                      "sha512": hashlib.sha512(ELF).hexdigest()}
    assert image.cmdline == guest_image.CMDLINE


@pytest.mark.parametrize("damage", ["old recipe", "truncated", "no manifest", "no hashes"])
def test_a_stale_or_damaged_cache_is_rebuilt(tmp_path, damage):
    write_manifest(tmp_path, **({"recipe": guest_image.RECIPE - 1} if damage == "old recipe" else
                                {"md5": {}} if damage == "no hashes" else {}))
    if damage == "truncated":
        (tmp_path / "vmlinux").write_bytes(ELF[:100])
    if damage == "no manifest":
        (tmp_path / "manifest.json").unlink()
    assert load_cached(tmp_path) is None
