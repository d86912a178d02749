"""Boot from volume (block_device_mapping_v2 with destination volume) through every role,
the real volume role (file backend) among them: the API's checks and reservations, the
build that makes, attaches and connects the volumes, and what rebuild, resize and a failed
build do with them. What the volume service holds is read through its own API.

test_boot_from_volume_service.py holds what `openstack volume …` and `openstack server
create --boot-from-volume` see on one host."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.integration.compute.support import (BFV_MV, CINDER, V3, bdm_rows, bfv_body, boot_bfv, domain_disks,
                                               new_volume, volume, volume_attachments, volume_path, volume_status)
from tests.integration.test_server_lifecycle import MV, ROLES, V, ok, show_server, sim_cloud, wait_status
from tests.integration.volume.helpers import call, make_snapshot
from tests.waiting import until


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path, ROLES + ["volume"]) as h:
        big = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": "m1.big", "ram": 2048, "vcpus": 2, "disk": 1}}), 200)
        h.big = big["flavor"]["id"]
        yield h


async def image_volume(h, **fields) -> str:
    """A bootable volume of alice's: her image's bits, and its volume_image_metadata."""
    return await new_volume(h, imageRef=h.image, **fields)


async def test_boot_from_image_to_volume(cloud):
    h = cloud
    sid = await boot_bfv(h, bfv_body(h, [{"boot_index": 0, "uuid": h.image, "source_type": "image",
                                          "destination_type": "volume", "volume_size": 2,
                                          "delete_on_termination": True}], imageRef=""))
    server = await wait_status(h, sid, "ACTIVE")
    assert server["image"] == ""
    [bdm] = await bdm_rows(h, sid)
    assert bdm["device_name"] == "/dev/vda" and bdm["volume_id"] is not None
    volume_id = str(bdm["volume_id"])
    shown = await volume(h, volume_id)
    assert shown["status"] == "in-use" and shown["bootable"] == "true" and shown["size"] == 2
    assert shown["volume_image_metadata"]["image_id"] == h.image
    host = (await show_server(h, sid, h.admin))["OS-EXT-SRV-ATTR:host"]
    assert [(a["server_id"], a["host_name"]) for a in shown["attachments"]] == [(sid, host)]
    xml = await domain_disks(h, sid)
    assert volume_path(h, volume_id) in xml and f"<serial>{volume_id}</serial>" in xml
    # the volume is its root: no local root disk, and no DISK_GB claimed for it (flavor disk 1)
    assert "/disk'" not in xml and '/disk"' not in xml
    alloc = await ok(await h.http.get(f"/placement/allocations/{sid}", headers={
        **h.admin, "OpenStack-API-Version": "placement 1.28"}), 200)
    [resources] = [a["resources"] for a in alloc["allocations"].values()]
    assert "DISK_GB" not in resources


async def test_boot_from_existing_volume_and_its_lifecycle(cloud):
    h = cloud
    vol = await image_volume(h)
    sid = await boot_bfv(h, bfv_body(h, [{"boot_index": 0, "uuid": vol, "source_type": "volume",
                                          "destination_type": "volume"}]))
    await wait_status(h, sid, "ACTIVE")
    assert (await volume(h, vol))["status"] == "in-use"
    [bdm] = await bdm_rows(h, sid)
    assert str(bdm["volume_id"]) == vol and bdm["attachment_id"] is not None and not bdm["delete_on_termination"]
    path = volume_path(h, vol)
    first_host = (await show_server(h, sid, h.admin))["OS-EXT-SRV-ATTR:host"]

    # rebuild with the volume's own image recreates the guest around the same volume
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                             json={"rebuild": {"imageRef": h.image}})
    await ok(resp, 202)
    server = await until(lambda: show_server(h, sid), lambda s: s["OS-EXT-STS:task_state"] is None
                         and s["status"] == "ACTIVE", what="rebuilt")
    assert server["image"] == ""
    assert path in await domain_disks(h, sid)
    assert (await volume(h, vol))["status"] == "in-use"

    # resize keeps it in the domain too
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                               json={"resize": {"flavorRef": h.big}}), 202)
    await wait_status(h, sid, "VERIFY_RESIZE")
    assert path in await domain_disks(h, sid)
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                               json={"confirmResize": None}), 204)
    await wait_status(h, sid, "ACTIVE")
    shown = await volume(h, vol)
    assert shown["status"] == "in-use" and [a["server_id"] for a in shown["attachments"]] == [sid]
    # the attachment names the host the guest moved to: it connected the volume again
    moved_to = (await show_server(h, sid, h.admin))["OS-EXT-SRV-ATTR:host"]
    assert moved_to != first_host and [a["host_name"] for a in shown["attachments"]] == [moved_to]

    # stop and start: the persistent definition keeps it
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                               json={"os-stop": None}), 202)
    await wait_status(h, sid, "SHUTOFF")
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                               json={"os-start": None}), 202)
    await wait_status(h, sid, "ACTIVE")
    assert path in await domain_disks(h, sid)
    assert (await volume(h, vol))["status"] == "in-use"


async def test_rebuild_with_another_image_is_refused(cloud):
    h = cloud
    vol = await image_volume(h)
    sid = await boot_bfv(h, bfv_body(h, [{"boot_index": 0, "uuid": vol, "source_type": "volume",
                                          "destination_type": "volume"}]))
    await wait_status(h, sid, "ACTIVE")
    other = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "other", "disk_format": "raw", "container_format": "bare"}), 201)
    await ok(await h.http.put(f"/image/v2/images/{other['id']}/file", data=b"\0" * 4096,
                              headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                             json={"rebuild": {"imageRef": other["id"]}})
    body = await ok(resp, 400)
    assert "different image for a volume-backed server" in body["badRequest"]["message"]


async def test_image_of_a_volume_backed_server(cloud):
    """As Nova: each volume is snapshotted (in use), and the image, active with no data,
    names the snapshots in its block_device_mapping; no backup of such a server; a boot from
    that image is refused until the boot can make volumes from it."""
    h = cloud
    vol = await image_volume(h)
    sid = await boot_bfv(h, bfv_body(h, [
        {"boot_index": 0, "uuid": vol, "source_type": "volume", "destination_type": "volume"},
        {"boot_index": -1, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
         "delete_on_termination": True}]))
    await wait_status(h, sid, "ACTIVE")
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                             json={"createImage": {"name": "snap", "metadata": {"purpose": "test"}}})
    image_id = (await ok(resp, 202))["image_id"]
    image = await ok(await h.http.get(f"/image/v2/images/{image_id}", headers=h.alice), 200)
    assert image["status"] == "active" and image["size"] == 0 and image["bdm_v2"] == "True"
    assert image["purpose"] == "test" and image["root_device_name"] == "/dev/vda"
    source = await ok(await h.http.get(f"/image/v2/images/{h.image}", headers=h.alice), 200)
    assert image["disk_format"] == source["disk_format"]   # the root volume's image's
    root, blank = json.loads(image["block_device_mapping"])
    assert (root["boot_index"], root["source_type"], root["destination_type"]) == (0, "snapshot", "volume")
    assert blank["source_type"] == "snapshot" and blank["delete_on_termination"] is True
    for mapping in (root, blank):
        snapshot = await until(lambda m=mapping: call(h, "GET", f"/snapshots/{m['snapshot_id']}", h.alice),
                               lambda r: r[1]["snapshot"]["status"] == "available", what="the snapshot")
        assert snapshot[1]["snapshot"]["name"] == "snapshot for snap"

    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                             json={"createBackup": {"name": "b", "backup_type": "daily", "rotation": 1}})
    assert "volume-backed" in (await ok(resp, 400))["badRequest"]["message"]
    resp = await h.http.post(f"{V}/servers", headers={**h.alice, **MV}, json={"server": {
        "name": "vm2", "flavorRef": h.flavor, "imageRef": image_id, "networks": [{"uuid": h.net}]}})
    assert "volume-backed" in (await ok(resp, 400))["badRequest"]["message"]


async def test_boot_from_snapshot_and_blank_with_extra_volumes(cloud):
    h = cloud
    source = await image_volume(h)
    snap = (await make_snapshot(h, h.alice, source, name="snap"))["id"]
    sid = await boot_bfv(h, bfv_body(h, [
        {"boot_index": 0, "uuid": snap, "source_type": "snapshot", "destination_type": "volume",
         "delete_on_termination": True},
        {"boot_index": -1, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
         "tag": "data", "volume_type": "__DEFAULT__"}]))
    await wait_status(h, sid, "ACTIVE")
    root, blank = await bdm_rows(h, sid)
    assert (root["device_name"], blank["device_name"]) == ("/dev/vda", "/dev/vdb")
    assert blank["tag"] == "data" and blank["volume_type"] == "__DEFAULT__"
    made = {str(row["volume_id"]): await volume(h, str(row["volume_id"])) for row in (root, blank)}
    assert all(v["status"] == "in-use" for v in made.values()), made
    assert made[str(root["volume_id"])]["snapshot_id"] == snap
    assert made[str(blank["volume_id"])]["bootable"] == "false"
    assert (await volume(h, source))["status"] == "available"  # the snapshot's volume is not taken
    xml = await domain_disks(h, sid)
    assert "<target dev='vdb'" in xml or '<target dev="vdb"' in xml
    assert all(volume_path(h, v) in xml for v in made)


async def test_image_server_with_a_blank_volume_keeps_its_local_root(cloud):
    h = cloud
    sid = await boot_bfv(h, bfv_body(h, [
        {"boot_index": 0, "uuid": h.image, "source_type": "image", "destination_type": "local"},
        {"boot_index": -1, "source_type": "blank", "destination_type": "volume", "volume_size": 1}],
        imageRef=h.image))
    server = await wait_status(h, sid, "ACTIVE")
    assert server["image"]["id"] == h.image
    rows = await bdm_rows(h, sid)
    assert [(r["source_type"], r["destination_type"]) for r in rows] == [("image", "local"), ("blank", "volume")]
    path = volume_path(h, str(rows[1]["volume_id"]))
    assert path in await domain_disks(h, sid)
    # a rebuild makes the local disk anew and keeps the volume
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                               json={"rebuild": {"imageRef": h.image}}), 202)
    await until(lambda: show_server(h, sid), lambda s: s["OS-EXT-STS:task_state"] is None
                and s["status"] == "ACTIVE", what="rebuilt")
    xml = await domain_disks(h, sid)
    assert path in xml and "/disk'" in xml
    assert (await volume(h, str(rows[1]["volume_id"])))["status"] == "in-use"


async def test_an_image_beside_a_blank_root_volume_only_describes_it(cloud):
    # Nova (and Tempest's stable-rescue test): imageRef with a blank boot volume boots the
    # volume; the image is checked and its properties go with the server, nothing is copied.
    h = cloud
    other = await new_volume(h, name="other")
    sid = await boot_bfv(h, bfv_body(h, [{"boot_index": "0", "source_type": "blank", "destination_type": "volume",
                                          "volume_size": 1, "delete_on_termination": "true"}], imageRef=h.image))
    await wait_status(h, sid, "ACTIVE")
    (root,) = await bdm_rows(h, sid)
    assert (root["source_type"], root["boot_index"]) == ("blank", 0)
    made = await volume(h, str(root["volume_id"]))
    assert made["bootable"] == "false" and made["size"] == 1
    # The image is still looked up: one that does not exist is a 400, even beside a volume.
    body = await ok(await h.http.post(V + "/servers", headers={**h.alice, "OpenStack-API-Version": "compute 2.67"},
                                      json=bfv_body(h, [{"boot_index": 0, "uuid": other, "source_type": "volume",
                                                         "destination_type": "volume"}],
                                                    imageRef=str(uuid.uuid4()))), 400)
    assert "mage" in body["badRequest"]["message"], body


@pytest.mark.parametrize("bdms, extra, message", [
    ([{"boot_index": 0, "source_type": "image", "destination_type": "volume"}], {}, "Missing device UUID"),
    ([{"boot_index": 0, "uuid": "IMAGE", "source_type": "image", "destination_type": "volume"}], {},
     "non-zero size"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume"}], {}, "non-zero size"),
    ([{"boot_index": 1, "source_type": "blank", "destination_type": "volume", "volume_size": 1}], {},
     "Boot sequence"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 1},
      {"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 1}], {},
     "Boot sequence"),
    ([{"boot_index": 0, "uuid": str(uuid.uuid4()), "source_type": "volume", "destination_type": "volume"}], {},
     "failed to get volume"),
    ([{"boot_index": 0, "uuid": "IMAGE", "source_type": "image", "destination_type": "volume",
       "volume_size": "x"}], {}, "not an integer"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
       "volume_type": "fast"}], {"mv": "2.66"}, "volume_type"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
       "tag": "x"}], {"mv": "2.41"}, "tag"),
    ([], {}, "Missing imageRef"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 2**31}], {},
     "out of range"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 1}]
     + [{"source_type": "blank", "destination_type": "volume", "volume_size": 1}] * 22, {}, "at most 22"),
    ([{"boot_index": 0, "uuid": str(uuid.uuid4()), "source_type": "volume", "destination_type": "local"}], {},
     "only supported as the boot image"),
])
async def test_bad_mappings_are_400(cloud, bdms, extra, message):
    h = cloud
    for bdm in bdms:
        if bdm.get("uuid") == "IMAGE":
            bdm["uuid"] = h.image
    headers = {**h.alice, "OpenStack-API-Version": f"compute {extra.get('mv', '2.67')}"}
    resp = await h.http.post(V + "/servers", headers=headers, json=bfv_body(h, bdms))
    body = await ok(resp, 400)
    assert message in body["badRequest"]["message"]


async def test_volume_checks(cloud):
    h = cloud
    in_use = await image_volume(h)
    # in use: attached (os-complete) through the attachments API, to a server of another cloud
    attachment = await ok(await h.http.post(f"{V3}/attachments", headers={**h.alice, **CINDER}, json={
        "attachment": {"volume_uuid": in_use, "instance_uuid": str(uuid.uuid4()),
                       "connector": {"host": "elsewhere"}}}), 200)
    await ok(await h.http.post(f"{V3}/attachments/{attachment['attachment']['id']}/action",
                               headers={**h.alice, **CINDER}, json={"os-complete": None}), 204)
    assert (await volume(h, in_use))["status"] == "in-use"
    bobs = await new_volume(h, h.bob)
    not_bootable = await new_volume(h)
    free = await image_volume(h)
    for vol, message in ((in_use, "Invalid volume"), (bobs, "failed to get volume"),
                         (not_bootable, "is not bootable")):
        body = await ok(await h.http.post(V + "/servers", headers={**h.alice, **BFV_MV}, json=bfv_body(h, [
            {"boot_index": 0, "uuid": vol, "source_type": "volume", "destination_type": "volume"}])), 400)
        assert message in body["badRequest"]["message"]
    body = await ok(await h.http.post(V + "/servers", headers={**h.alice, **BFV_MV}, json=bfv_body(h, [
        {"boot_index": 0, "uuid": free, "source_type": "volume", "destination_type": "volume"}],
        min_count=2)), 400)
    assert "multiple instances" in body["badRequest"]["message"]
    # a request refused after the reservation (over the cores quota, counted under the lock)
    # gives the volume back
    many_cores = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "m1.cores", "ram": 512, "vcpus": 64, "disk": 1}}), 200)
    body = bfv_body(h, [{"boot_index": 0, "uuid": free, "source_type": "volume", "destination_type": "volume"}])
    body["server"]["flavorRef"] = many_cores["flavor"]["id"]
    await ok(await h.http.post(V + "/servers", headers={**h.alice, **BFV_MV}, json=body), 403)
    assert (await volume(h, free))["status"] == "available"
    assert await volume_attachments(h, free) == []
    for vol in (bobs, not_bootable):
        assert (await volume(h, vol))["status"] == "available"
    assert [a["id"] for a in await volume_attachments(h, in_use)] == [attachment["attachment"]["id"]]


async def test_failed_build_lets_go_of_its_volumes(cloud):
    """Every host fails the build after its volumes were made and connected: the network has
    no address left to give the server's port (its one address is taken by a port of
    alice's), which each host finds while it prepares the disks beside. The volume the
    server was given is available again; the blank one made for it, made once although both
    hosts tried (the second found it made), is deleted with it (delete_on_termination)."""
    h = cloud
    full = await ok(await h.http.post("/network/v2.0/networks", headers=h.alice,
                                      json={"network": {"name": "full"}}), 201)
    await ok(await h.http.post("/network/v2.0/subnets", headers=h.alice, json={"subnet": {
        "network_id": full["network"]["id"], "cidr": "10.9.9.0/24", "ip_version": 4, "enable_dhcp": False,
        "allocation_pools": [{"start": "10.9.9.10", "end": "10.9.9.10"}]}}), 201)
    await ok(await h.http.post("/network/v2.0/ports", headers=h.alice,
                               json={"port": {"network_id": full["network"]["id"]}}), 201)
    vol = await image_volume(h)
    with h.bus.listen() as notes:
        sid = await boot_bfv(h, bfv_body(h, [
            {"boot_index": 0, "uuid": vol, "source_type": "volume", "destination_type": "volume"},
            {"boot_index": -1, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
             "delete_on_termination": True}], networks=[{"uuid": full["network"]["id"]}]))
        server = await wait_status(h, sid, "ERROR")
        seen = []
        while not notes.empty():
            seen.append(notes.get_nowait())
    assert "No more IP addresses" in server["fault"]["message"], server["fault"]
    tried = {n.data["host"] for n in seen if n.event_type == "instance.create.start"}
    assert len(tried) == 2, tried
    [made] = {n.data["volume_id"] for n in seen if n.event_type == "volume.create.end"}
    assert len([n for n in seen if n.event_type == "volume.create.start"]) == 1
    assert (await volume(h, vol))["status"] == "available"
    await volume_status(h, made, "gone")
    assert await volume_attachments(h) == []
    listed = await ok(await h.http.get(f"{V3}/volumes", headers={**h.alice, **CINDER}), 200)
    assert [v["id"] for v in listed["volumes"]] == [vol]


async def test_no_valid_host_gives_the_volume_back(cloud):
    h = cloud
    huge = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "m1.huge", "ram": 8192, "vcpus": 1, "disk": 1}}), 200)
    vol = await image_volume(h)
    body = bfv_body(h, [{"boot_index": 0, "uuid": vol, "source_type": "volume", "destination_type": "volume"}])
    body["server"]["flavorRef"] = huge["flavor"]["id"]
    sid = await boot_bfv(h, body)
    await wait_status(h, sid, "ERROR")
    await volume_status(h, vol, "available")
    assert await volume_attachments(h, vol) == []
    resp = await h.http.delete(f"{V}/servers/{sid}", headers=h.alice)
    await ok(resp, 204)
    await wait_status(h, sid, "GONE")
    assert (await volume(h, vol))["status"] == "available"


async def test_delete_keeps_volumes_not_marked_for_deletion(cloud):
    h = cloud
    vol = await image_volume(h)
    sid = await boot_bfv(h, bfv_body(h, [
        {"boot_index": 0, "uuid": vol, "source_type": "volume", "destination_type": "volume"},
        {"boot_index": -1, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
         "delete_on_termination": True}]))
    server = await wait_status(h, sid, "ACTIVE")
    _, blank = await bdm_rows(h, sid)
    made = str(blank["volume_id"])
    assert sorted(server["os-extended-volumes:volumes_attached"], key=lambda v: v["id"]) == sorted(
        [{"id": vol, "delete_on_termination": False}, {"id": made, "delete_on_termination": True}],
        key=lambda v: v["id"])
    await ok(await h.http.delete(f"{V}/servers/{sid}", headers=h.alice), 204)
    await wait_status(h, sid, "GONE")
    assert (await volume(h, vol))["status"] == "available"
    await volume_status(h, made, "gone")
    assert await volume_attachments(h) == []


async def test_what_openstack_server_create_sends_with_swap(cloud):
    """`openstack server create --image … --swap 512`: image → local, and blank → local swap."""
    h = cloud
    sid = await boot_bfv(h, bfv_body(h, [
        {"uuid": h.image, "boot_index": 0, "source_type": "image", "destination_type": "local",
         "delete_on_termination": True},
        {"boot_index": -1, "source_type": "blank", "destination_type": "local", "guest_format": "swap",
         "volume_size": 512, "delete_on_termination": True}], imageRef=h.image))
    server = await wait_status(h, sid, "ACTIVE")
    assert server["image"]["id"] == h.image
    rows = await bdm_rows(h, sid)
    assert [(r["source_type"], r["destination_type"], r["device_name"]) for r in rows] == [
        ("image", "local", "/dev/vda"), ("blank", "local", None)]


async def test_multi_create_gives_each_instance_its_own_volume(cloud):
    h = cloud
    resp = await h.http.post(V + "/servers", headers={**h.alice, **BFV_MV}, json=bfv_body(h, [
        {"boot_index": 0, "uuid": h.image, "source_type": "image", "destination_type": "volume",
         "volume_size": 1}], min_count=2, return_reservation_id=True))
    reservation = (await ok(resp, 202))["reservation_id"]
    listed = await ok(await h.http.get(f"{V}/servers?reservation_id={reservation}", headers=h.alice), 200)
    ids = [s["id"] for s in listed["servers"]]
    assert len(ids) == 2
    server_of = {}
    for sid in ids:
        await wait_status(h, sid, "ACTIVE")
        [bdm] = await bdm_rows(h, sid)
        server_of[str(bdm["volume_id"])] = sid
    volumes = set(server_of)
    assert len(volumes) == 2
    for volume_id in volumes:
        shown = await volume(h, volume_id)
        assert shown["status"] == "in-use" and shown["bootable"] == "true", shown
        assert [a["server_id"] for a in shown["attachments"]] == [server_of[volume_id]]
