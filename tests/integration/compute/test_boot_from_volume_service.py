"""Boot from volume against the real volume role (file backend), through both APIs: what a
user of `openstack volume …` and `openstack server create --boot-from-volume` sees.

test_boot_from_volume.py holds the finer cases over a stand-in volume service; these run
once the volume role (branches i22-a1, i22-a2, i22-b) is in the tree."""

from __future__ import annotations

import importlib.util
import uuid

import pytest

from tests.harness import running
from tests.integration.compute.test_boot_from_volume import BFV_MV, bdm_rows, bfv_body, boot, domain_disks
from tests.integration.test_server_lifecycle import V, ok, wait_status
from tests.waiting import until

pytestmark = pytest.mark.skipif(importlib.util.find_spec("nova_async.volume.backends.files") is None,
                                reason="the volume role's file backend is not in this tree yet")

ROLES = ["identity", "image", "network", "placement", "api", "conductor", "scheduler", "compute", "volume"]
V3 = "/volume/v3"
CINDER = {"OpenStack-API-Version": "volume 3.44"}


@pytest.fixture
async def cloud(pool, tmp_path):
    async with running(pool, ROLES, tmp_path, volume={"dir": str(tmp_path / "volumes")},
                       compute={"simulate_hosts": 1, "sim_vcpus": 4, "sim_memory_mb": 4096,
                                "sim_disk_gb": 50}) as h:
        flavor = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": "m1.small", "ram": 512, "vcpus": 1, "disk": 1}}), 200)
        h.flavor = flavor["flavor"]["id"]
        image = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
            "name": "demo", "disk_format": "raw", "container_format": "bare", "kernel_id": str(uuid.uuid4())}),
            201)
        await ok(await h.http.put(f"/image/v2/images/{image['id']}/file", data=b"boot" * 16384,
                                  headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
        h.image = image["id"]
        net = await ok(await h.http.post("/network/v2.0/networks", headers=h.alice,
                                         json={"network": {"name": "net1"}}), 201)
        h.net = net["network"]["id"]
        await ok(await h.http.post("/network/v2.0/subnets", headers=h.alice, json={"subnet": {
            "network_id": h.net, "cidr": "10.0.0.0/24", "ip_version": 4}}), 201)
        yield h


async def volume(h, volume_id: str) -> dict:
    return (await ok(await h.http.get(f"{V3}/volumes/{volume_id}", headers={**h.alice, **CINDER}), 200))["volume"]


async def settled_volume(h, volume_id: str) -> dict:
    return await until(lambda: volume(h, volume_id), lambda v: v["status"] not in ("creating", "downloading"),
                       what=f"volume {volume_id} made")


async def test_boot_from_image_to_a_new_volume(cloud):
    h = cloud
    sid = await boot(h, bfv_body(h, [{"boot_index": 0, "uuid": h.image, "source_type": "image",
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
    created = await ok(await h.http.post(f"{V3}/volumes", headers={**h.alice, **CINDER}, json={
        "volume": {"size": 1, "imageRef": h.image, "name": "root"}}), 202)
    root = await settled_volume(h, created["volume"]["id"])
    assert root["status"] == "available" and root["bootable"] == "true"
    snap = await ok(await h.http.post(f"{V3}/snapshots", headers={**h.alice, **CINDER}, json={
        "snapshot": {"volume_id": root["id"], "name": "snap"}}), 202)
    await until(lambda: h.http.get(f"{V3}/snapshots/{snap['snapshot']['id']}", headers={**h.alice, **CINDER}),
                lambda r: r.status == 200, what="snapshot")

    sid = await boot(h, bfv_body(h, [{"boot_index": 0, "uuid": root["id"], "source_type": "volume",
                                      "destination_type": "volume"}]))
    await wait_status(h, sid, "ACTIVE")
    assert (await volume(h, root["id"]))["status"] == "in-use"
    # taken: a second server cannot boot from it
    resp = await h.http.post(V + "/servers", headers={**h.alice, **BFV_MV}, json=bfv_body(h, [
        {"boot_index": 0, "uuid": root["id"], "source_type": "volume", "destination_type": "volume"}]))
    assert "Invalid volume" in (await ok(resp, 400))["badRequest"]["message"]

    from_snap = await boot(h, bfv_body(h, [{"boot_index": 0, "uuid": snap["snapshot"]["id"],
                                            "source_type": "snapshot", "destination_type": "volume"}]))
    await wait_status(h, from_snap, "ACTIVE")
    [bdm] = await bdm_rows(h, from_snap)
    assert (await volume(h, str(bdm["volume_id"])))["status"] == "in-use"


async def test_a_snapshot_that_does_not_exist_fails_the_build(cloud):
    h = cloud
    sid = await boot(h, bfv_body(h, [{"boot_index": 0, "uuid": str(uuid.uuid4()), "source_type": "snapshot",
                                      "destination_type": "volume"}]))
    server = await wait_status(h, sid, "ERROR")
    assert "could not be found" in server["fault"]["message"]


@pytest.mark.skipif(importlib.util.find_spec("nova_async.compute.volumes") is None,
                    reason="terminate lets go of volumes in compute/volumes.py (branch i22-c)")
async def test_delete_keeps_the_volume_unless_it_was_to_go(cloud):
    """What the README's `openstack server delete vm3` shows: its volume stays (available,
    with its bits), while one marked delete_on_termination goes."""
    h = cloud
    kept = await boot(h, bfv_body(h, [{"boot_index": 0, "uuid": h.image, "source_type": "image",
                                       "destination_type": "volume", "volume_size": 1}]))
    gone = await boot(h, bfv_body(h, [{"boot_index": 0, "uuid": h.image, "source_type": "image",
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
    resp = await h.http.get(f"{V3}/volumes/{volumes[gone]}", headers={**h.alice, **CINDER})
    assert resp.status == 404 or (await resp.json())["volume"]["status"] == "deleting"
