"""The demo guest registered as images on a fresh database: once, complete, and public."""

from __future__ import annotations

import hashlib
from pathlib import Path

from nova_async import service
from nova_async.compute.guest_image import GuestImage
from nova_async.image import demo
from tests.harness import running


def fake_guest(tmp_path: Path) -> GuestImage:
    """A built guest, its files hashed as the build records them."""
    kernel, initrd = tmp_path / "vmlinux", tmp_path / "initrd.img"
    kernel.write_bytes(b"\x7fELF kernel" * 100_000)
    initrd.write_bytes(b"070701 ramdisk")
    facts = {p.name: {"size": p.stat().st_size, "md5": hashlib.md5(p.read_bytes()).hexdigest(),
                      "sha512": hashlib.sha512(p.read_bytes()).hexdigest()} for p in (kernel, initrd)}
    return GuestImage(kernel=kernel, initrd=initrd, cmdline="", kernel_version="test", built=False, facts=facts)


async def images(h) -> dict[str, dict]:
    resp = await h.http.get("/image/v2/images", headers=h.bob)   # any project sees them
    assert resp.status == 200
    return {i["name"]: i for i in (await resp.json())["images"]}


async def test_first_start_registers_kernel_ramdisk_and_machine_image_once(pool, tmp_path, monkeypatch):
    guest = fake_guest(tmp_path)
    monkeypatch.setattr(service, "load_cached", lambda _dir: guest)
    async with running(pool, ["image"], tmp_path / "state") as h:
        await service.register_demo_guest(pool, list(h.roles.values()))
        found = await images(h)
        assert set(found) == {"nova-async-demo", "nova-async-demo-kernel", "nova-async-demo-ramdisk"}
        kernel, ramdisk, machine = (found[f"nova-async-demo{s}"] for s in ("-kernel", "-ramdisk", ""))
        assert (kernel["disk_format"], kernel["container_format"]) == ("aki", "aki")
        assert (ramdisk["disk_format"], ramdisk["container_format"]) == ("ari", "ari")
        assert (machine["kernel_id"], machine["ramdisk_id"]) == (kernel["id"], ramdisk["id"])
        assert all(i["status"] == "active" and i["visibility"] == "public" for i in found.values())
        assert kernel["checksum"] == hashlib.md5(guest.kernel.read_bytes()).hexdigest()
        assert kernel["size"] == guest.kernel.stat().st_size
        assert kernel["os_hash_value"] == hashlib.sha512(guest.kernel.read_bytes()).hexdigest()
        # Its data is the built file itself (a hard link where the store shares its file
        # system), served back byte for byte.
        resp = await h.http.get(f"/image/v2/images/{kernel['id']}/file", headers=h.bob)
        assert resp.status == 200 and await resp.read() == guest.kernel.read_bytes()

        # A user deletes one; later starts do not bring it back (the step is recorded).
        resp = await h.http.delete(f"/image/v2/images/{machine['id']}", headers=h.admin)
        assert resp.status == 204
        await service.register_demo_guest(pool, list(h.roles.values()))
        assert "nova-async-demo" not in await images(h)


async def test_an_interrupted_registration_completes_the_same_images(pool, tmp_path):
    guest = fake_guest(tmp_path)
    async with running(pool, ["image"], tmp_path / "state") as h:
        files = h.roles["image"].files
        kernel, initrd = (service.built_file(p, guest.facts) for p in (guest.kernel, guest.initrd))
        first = await demo.register(pool, files, kernel, initrd)
        # As if the start was cut off after the kernel: the ramdisk's data never came.
        await pool.execute("UPDATE images SET status = 'queued', size = NULL WHERE name = $1",
                           "nova-async-demo-ramdisk")
        again = await demo.register(pool, files, kernel, initrd)
        assert again == first
        found = await images(h)
        assert len(found) == 3 and all(i["status"] == "active" for i in found.values())


async def test_without_a_built_guest_nothing_is_registered_and_the_next_start_tries_again(
        pool, tmp_path, monkeypatch):
    monkeypatch.setattr(service, "load_cached", lambda _dir: None)
    async with running(pool, ["image"], tmp_path / "state") as h:
        await service.register_demo_guest(pool, list(h.roles.values()))
        assert await images(h) == {}
        monkeypatch.setattr(service, "load_cached", lambda _dir: fake_guest(tmp_path))
        await service.register_demo_guest(pool, list(h.roles.values()))
        assert len(await images(h)) == 3


async def test_the_demo_image_makes_its_config_drive_mandatory(pool, tmp_path, monkeypatch):
    # The guest has no other way to learn who it is (no metadata service client in it).
    monkeypatch.setattr(service, "load_cached", lambda _dir: fake_guest(tmp_path))
    async with running(pool, ["image"], tmp_path / "state") as h:
        await service.register_demo_guest(pool, list(h.roles.values()))
        assert (await images(h))["nova-async-demo"]["img_config_drive"] == "mandatory"
