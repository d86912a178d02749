"""Boot from volume against the real volume role (file backend), through both APIs: what a
user of `openstack volume …` and `openstack server create --boot-from-volume` sees, on one
host, from an image that names a kernel.

test_boot_from_volume.py holds the finer cases (the API's checks, rebuild, resize, failed
builds) on two hosts."""

from __future__ import annotations

import uuid

import pytest

from tests.harness import running
from tests.integration.compute.support import (BFV_MV, bdm_rows, bfv_body, boot_bfv, domain_disks, new_volume,
                                               volume, volume_status)
from tests.integration.test_server_lifecycle import ROLES, V, ok, seed, wait_status
from tests.integration.volume.helpers import make_snapshot


@pytest.fixture
async def cloud(pool, tmp_path):
    async with running(pool, ROLES + ["volume"], tmp_path, volume={"dir": str(tmp_path / "volumes")},
                       compute={"simulate_hosts": 1, "sim_vcpus": 4, "sim_memory_mb": 4096,
                                "sim_disk_gb": 50}) as h:
        await seed(h, ram=512, kernel_id=str(uuid.uuid4()))  # a kernel_id: image metadata a volume keeps
        yield h


async def test_boot_from_image_to_a_new_volume(cloud):
    h = cloud
    sid = await boot_bfv(h, bfv_body(h, [{"boot_index": 0, "uuid": h.image, "source_type": "image",
                                          "destination_type": "volume", "volume_size": 1}]))
    server = await wait_status(h, sid, "ACTIVE")
    assert server["image"] == ""
    [bdm] = await bdm_rows(h, sid)
    vol = await volume(h, str(bdm["volume_id"]))
    assert vol["status"] == "in-use" and vol["bootable"] == "true"
    assert vol["volume_image_metadata"]["image_id"] == h.image and "kernel_id" in vol["volume_image_metadata"]
    assert [a["server_id"] for a in vol["attachments"]] == [sid]
    assert str(bdm["volume_id"]) in await domain_disks(h, sid)


async def test_boot_from_an_existing_volume_and_a_snapshot(cloud):
    h = cloud
    root = await volume(h, await new_volume(h, imageRef=h.image, name="root"), h.alice)
    assert root["status"] == "available" and root["bootable"] == "true"
    snap = await make_snapshot(h, h.alice, root["id"], name="snap")

    sid = await boot_bfv(h, bfv_body(h, [{"boot_index": 0, "uuid": root["id"], "source_type": "volume",
                                          "destination_type": "volume"}]))
    await wait_status(h, sid, "ACTIVE")
    assert (await volume(h, root["id"]))["status"] == "in-use"
    # taken: a second server cannot boot from it
    resp = await h.http.post(V + "/servers", headers={**h.alice, **BFV_MV}, json=bfv_body(h, [
        {"boot_index": 0, "uuid": root["id"], "source_type": "volume", "destination_type": "volume"}]))
    assert "Invalid volume" in (await ok(resp, 400))["badRequest"]["message"]

    from_snap = await boot_bfv(h, bfv_body(h, [{"boot_index": 0, "uuid": snap["id"],
                                                "source_type": "snapshot", "destination_type": "volume"}]))
    await wait_status(h, from_snap, "ACTIVE")
    [bdm] = await bdm_rows(h, from_snap)
    assert (await volume(h, str(bdm["volume_id"])))["status"] == "in-use"


async def test_a_snapshot_that_does_not_exist_fails_the_build(cloud):
    h = cloud
    sid = await boot_bfv(h, bfv_body(h, [{"boot_index": 0, "uuid": str(uuid.uuid4()), "source_type": "snapshot",
                                          "destination_type": "volume"}]))
    server = await wait_status(h, sid, "ERROR")
    assert "could not be found" in server["fault"]["message"]


async def test_delete_keeps_the_volume_unless_it_was_to_go(cloud):
    """What the README's `openstack server delete vm3` shows: its volume stays (available,
    with its bits), while one marked delete_on_termination goes."""
    h = cloud
    kept = await boot_bfv(h, bfv_body(h, [{"boot_index": 0, "uuid": h.image, "source_type": "image",
                                           "destination_type": "volume", "volume_size": 1}]))
    gone = await boot_bfv(h, bfv_body(h, [{"boot_index": 0, "uuid": h.image, "source_type": "image",
                                           "destination_type": "volume", "volume_size": 1,
                                           "delete_on_termination": True}]))
    volumes = {}
    for sid in (kept, gone):
        await wait_status(h, sid, "ACTIVE")
        [bdm] = await bdm_rows(h, sid)
        volumes[sid] = str(bdm["volume_id"])
        await ok(await h.http.delete(f"{V}/servers/{sid}", headers=h.alice), 204)
    for sid in (kept, gone):
        await wait_status(h, sid, "GONE")
    assert (await volume(h, volumes[kept]))["status"] == "available"
    await volume_status(h, volumes[gone], "gone")
