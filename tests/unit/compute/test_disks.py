import asyncio
import json
import os
import pwd
import tempfile
import uuid
from pathlib import Path

import pytest

from nova_async.common.errors import Conflict, InvalidInput
from nova_async.compute import disks
from nova_async.compute.disks import ImageCache, prepare, unreachable_by_qemu
from nova_async.image.messages import ImageInfo


def image(path, image_id="img-1", disk_format="raw") -> ImageInfo:
    return ImageInfo(id=image_id, name="i", status="active", size=None, disk_format=disk_format,
                     container_format="bare", min_disk=0, min_ram=0, properties={}, path=str(path))


async def info(path) -> dict:
    proc = await asyncio.create_subprocess_exec("qemu-img", "info", "--output=json", str(path),
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    return json.loads(out)


async def test_concurrent_builds_copy_an_image_once(tmp_path, monkeypatch):
    src = tmp_path / "src.raw"
    src.write_bytes(b"x" * 4096)
    copies = []
    real_copy = ImageCache._copy

    async def counting_copy(self, img, target):
        copies.append(img.id)
        await real_copy(self, img, target)

    monkeypatch.setattr(ImageCache, "_copy", counting_copy)
    cache = ImageCache(tmp_path / "instances")
    paths = await asyncio.gather(*(cache.fetch(image(src)) for _ in range(5)))
    assert copies == ["img-1"]
    assert set(paths) == {tmp_path / "instances" / "_base" / "img-1"}
    assert paths[0].read_bytes() == src.read_bytes()
    assert [p.name for p in paths[0].parent.iterdir()] == ["img-1"]  # no temporary files left


async def test_qcow2_images_are_cached_as_raw(tmp_path):
    src = tmp_path / "src.qcow2"
    await disks.qemu_img("create", "-q", "-f", "qcow2", str(src), "1M")
    base = await ImageCache(tmp_path / "instances").fetch(image(src, disk_format="qcow2"))
    assert (await info(base))["format"] == "raw"


@pytest.mark.parametrize("img,error", [
    (image("", image_id="img-2"), Conflict),
    (image("/x", image_id="../etc"), InvalidInput),
])
async def test_unusable_images_are_refused(tmp_path, img, error):
    with pytest.raises(error):
        await ImageCache(tmp_path).fetch(img)


async def test_prepare_makes_overlay_ephemeral_and_swap(tmp_path):
    base = tmp_path / "base"
    base.write_bytes(b"\0" * 65536)
    instance = str(uuid.uuid4())
    made = await prepare(tmp_path, instance, base, root_gb=2, ephemeral_gb=1, swap_mb=128)
    assert [(d.target, d.path.rsplit("/", 1)[1]) for d in made] == [
        ("vda", "disk"), ("vdb", "disk.eph0"), ("vdc", "disk.swap")]
    root = await info(made[0].path)
    assert root["virtual-size"] == 2 * 1024 ** 3
    assert root["backing-filename"] == str(base) and root["backing-filename-format"] == "raw"
    assert (await info(made[1].path))["virtual-size"] == 1024 ** 3
    assert (await info(made[2].path))["virtual-size"] == 128 * 1024 ** 2

    # again, from scratch, without swap: nothing of the first attempt survives
    (tmp_path / instance / "junk").write_text("x")
    made = await prepare(tmp_path, instance, base, root_gb=0, ephemeral_gb=0, swap_mb=64)
    assert sorted(p.name for p in (tmp_path / instance).iterdir()) == ["disk", "disk.swap"]
    assert made[1].target == "vdb"
    assert (await info(made[0].path))["virtual-size"] == 65536  # root_gb 0: the image's size


async def test_a_new_disk_is_what_qemu_img_writes_with_its_zeros_left_as_holes(tmp_path):
    base = tmp_path / "base"
    base.write_bytes(b"\0" * 65536)
    own = tmp_path / "own.qcow2"
    await disks.qemu_img("create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(base), str(own), "2G")
    for attempt in range(2):   # the first makes the template, the second copies it
        instance = str(uuid.uuid4())
        [root] = await prepare(tmp_path, instance, base, root_gb=2, ephemeral_gb=0, swap_mb=0)
        made = Path(root.path)
        assert made.read_bytes() == own.read_bytes(), attempt
        assert made.stat().st_blocks * 512 < own.stat().st_size / 4   # mostly holes


async def test_flavor_disk_smaller_than_image_is_refused(tmp_path):
    base = tmp_path / "base"
    with base.open("wb") as fh:
        fh.truncate(2 * 1024 ** 3)  # sparse
    with pytest.raises(InvalidInput, match="too small"):
        await prepare(tmp_path, str(uuid.uuid4()), base, root_gb=1, ephemeral_gb=0, swap_mb=0)
    # nor is a root disk made from a template already there
    template = disks._template(tmp_path, ["-F", "raw", "-b", str(base)], ["1G"])
    template.parent.mkdir(parents=True, exist_ok=True)
    template.write_bytes(b"qcow2 header")
    instance = str(uuid.uuid4())
    with pytest.raises(InvalidInput, match="too small"):
        await prepare(tmp_path, instance, base, root_gb=1, ephemeral_gb=0, swap_mb=0)
    assert list((tmp_path / instance).iterdir()) == []


def test_a_directory_qemu_cannot_search_is_named_before_any_guest_fails():
    if not any(p.pw_name == "libvirt-qemu" for p in pwd.getpwall()):
        pytest.skip("no libvirt-qemu user on this machine")
    with tempfile.TemporaryDirectory() as top:  # /tmp/…, searchable by all (pytest's is not)
        os.chmod(top, 0o755)
        private = Path(top, "private")
        instances = private / "state" / "instances"
        instances.mkdir(parents=True)
        os.chmod(private, 0o700)
        reason = unreachable_by_qemu(instances)
        assert reason and f"{private} is mode drwx------" in reason and "chmod o+x" in reason
        os.chmod(private, 0o711)
        assert unreachable_by_qemu(instances) is None
        assert unreachable_by_qemu(instances, user="no-such-user-here") is None
