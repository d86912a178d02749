"""The Debian cloud image registered on a fresh database: once, public, AMI-style, with
what a user needs to log in; its files linked into the image store, not copied."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

from nova_async import service
from nova_async.compute import cloud_image
from nova_async.compute.cloud_image import CloudImage
from tests.harness import running
from tests.integration.image.test_demo_guest_images import images


def fake_cloud_image(tmp_path: Path) -> CloudImage:
    """Files shaped like a build's (a qcow2 header saying 725 MiB), with their manifest facts."""
    cache = tmp_path / "cache"
    cache.mkdir()
    virtual = 725 * 2**20
    blobs = {"vmlinuz": b"MZ kernel" * 1000, "initrd.img": b"070701 ramdisk",
             "disk.qcow2": b"QFI\xfb" + struct.pack(">IQIIQ", 3, 0, 0, 16, virtual) + b"\0" * 4096}
    facts = {}
    for name, blob in blobs.items():
        (cache / name).write_bytes(blob)
        facts[name] = {"size": len(blob), "md5": hashlib.md5(blob).hexdigest(),
                       "sha512": hashlib.sha512(blob).hexdigest()}
    return CloudImage(disk=cache / "disk.qcow2", kernel=cache / "vmlinuz", initrd=cache / "initrd.img",
                      cmdline=cloud_image.CMDLINE, kernel_version="6.1.0-test-cloud-amd64",
                      cloud_init="22.4.2-1", virtual_size=virtual, built=False, facts=facts)


async def test_a_fresh_database_offers_debian_cloud_with_its_login_user(pool, tmp_path, monkeypatch):
    built = fake_cloud_image(tmp_path)
    monkeypatch.setattr(cloud_image, "find_cached", lambda: built)
    async with running(pool, ["image"], tmp_path / "state") as h:
        await service.register_cloud_image(pool, list(h.roles.values()))
        await service.register_cloud_image(pool, list(h.roles.values()))   # a second start: nothing new
        found = await images(h)
        assert set(found) == {"debian-cloud", "debian-cloud-kernel", "debian-cloud-ramdisk"}
        kernel, ramdisk, machine = (found[f"debian-cloud{s}"] for s in ("-kernel", "-ramdisk", ""))
        assert (machine["disk_format"], machine["container_format"]) == ("qcow2", "bare")
        assert (machine["kernel_id"], machine["ramdisk_id"]) == (kernel["id"], ramdisk["id"])
        assert machine["os_command_line"].startswith("root=/dev/vda")
        assert (machine["os_distro"], machine["os_version"]) == ("debian", "12")
        assert machine["os_admin_user"] == machine["default_user"] == "debian"
        assert "img_config_drive" not in machine          # a cloud image needs no drive of ours
        assert (machine["min_disk"], machine["min_ram"]) == (1, cloud_image.MIN_RAM_MB)
        assert machine["virtual_size"] == 725 * 2**20 and machine["size"] == built.disk.stat().st_size
        assert all(i["status"] == "active" and i["visibility"] == "public" for i in found.values())
        assert machine["checksum"] == hashlib.md5(built.disk.read_bytes()).hexdigest()
        assert machine["os_hash_value"] == hashlib.sha512(built.disk.read_bytes()).hexdigest()

        # The data is the build's file, linked (same file system here): nothing was copied.
        resp = await h.http.get(f"/image/v2/images/{machine['id']}/file", headers=h.bob)
        assert resp.status == 200 and await resp.read() == built.disk.read_bytes()
        stored = h.roles["image"].files.path(machine["id"])
        assert stored.stat().st_ino == built.disk.stat().st_ino


async def test_without_a_built_image_the_service_starts_and_registers_it_later(pool, tmp_path, monkeypatch):
    monkeypatch.setattr(cloud_image, "find_cached", lambda: None)
    async with running(pool, ["image"], tmp_path / "state") as h:
        await service.register_cloud_image(pool, list(h.roles.values()))
        assert await images(h) == {}
        built = fake_cloud_image(tmp_path)
        monkeypatch.setattr(cloud_image, "find_cached", lambda: built)
        await service.register_cloud_image(pool, list(h.roles.values()))
        assert "debian-cloud" in await images(h)

