"""Nova's deprecated volume proxy (os-volumes and os-snapshots, until 2.35), answered by the
volume service: Nova's view of Cinder's volumes and snapshots, Nova's 400s for a bad size,
paging with offset and limit, an attached volume's attachment, the 2.36 cut-off, and one
project never seeing another's volumes."""

from __future__ import annotations

import pytest

from tests.integration.test_server_lifecycle import MV, ROLES, V, boot_body, ok, sim_cloud, wait_status
from tests.waiting import until

VOLS = V + "/os-volumes"
SNAPS = V + "/os-snapshots"
VOLUME_FIELDS = {"id", "status", "size", "availabilityZone", "createdAt", "attachments", "displayName",
                 "displayDescription", "volumeType", "snapshotId", "metadata"}


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path, ROLES + ["volume"], volume={"dir": str(tmp_path / "volumes")}) as h:
        yield h


async def _create(h, headers=None, **volume):
    body = {"volume": {"size": 1, "display_name": "v1", "display_description": "d", "metadata": {"Type": "work"},
                       **volume}}
    return (await ok(await h.http.post(VOLS, headers=headers or h.alice, json=body), 200))["volume"]


async def _available(h, kind: str, item_id: str, headers=None) -> dict:
    url, key = (VOLS, "volume") if kind == "volume" else (SNAPS, "snapshot")

    async def shown():
        return (await ok(await h.http.get(f"{url}/{item_id}", headers=headers or h.alice), 200))[key]
    return await until(shown, lambda v: v["status"] == "available", what=f"{kind} {item_id} available")


async def test_create_show_list_delete_in_novas_words(cloud):
    h = cloud
    made = await _create(h)
    assert set(made) == VOLUME_FIELDS
    assert made["displayName"] == "v1" and made["displayDescription"] == "d" and made["size"] == 1
    assert made["metadata"] == {"Type": "work"} and made["attachments"] == [{}]
    assert made["availabilityZone"] == "nova" and made["snapshotId"] is None and made["volumeType"]
    shown = await _available(h, "volume", made["id"])
    # the same volume through Cinder's own API
    cinder = await ok(await h.http.get(f"/volume/v3/proj-a/volumes/{made['id']}", headers=h.alice), 200)
    assert cinder["volume"]["name"] == "v1" and cinder["volume"]["status"] == "available"
    assert (await ok(await h.http.get(VOLS, headers=h.alice), 200))["volumes"] == [shown]
    assert (await ok(await h.http.get(VOLS + "/detail", headers=h.alice), 200))["volumes"] == [shown]
    await ok(await h.http.delete(f"{VOLS}/{made['id']}", headers=h.alice), 202)
    await until(lambda: h.http.get(f"{VOLS}/{made['id']}", headers=h.alice), lambda r: r.status == 404,
                what="the volume gone")


async def test_bad_sizes_and_unknown_ids(cloud):
    h = cloud
    for size in (0, "0", "", "#$%", -1, None, True):
        resp = await h.http.post(VOLS, headers=h.alice, json={"volume": {"size": size}})
        assert resp.status == 400, (size, await resp.text())
        assert "badRequest" in await resp.json()
    await ok(await h.http.post(VOLS, headers=h.alice, json={"volume": {"display_name": "no size"}}), 400)
    await ok(await h.http.post(VOLS, headers=h.alice, json={"volume": {"size": 1, "color": "red"}}), 400)
    await ok(await h.http.post(VOLS, headers=h.alice, json={"volume": {"size": 1, "snapshot_id": "nope"}}), 404)
    for missing in ("6d1e7ad8-8c3c-4d2a-9c1a-5d3f4c2b1a00", "not-a-uuid"):
        await ok(await h.http.get(f"{VOLS}/{missing}", headers=h.alice), 404)
        await ok(await h.http.delete(f"{VOLS}/{missing}", headers=h.alice), 404)
        await ok(await h.http.get(f"{SNAPS}/{missing}", headers=h.alice), 404)
        await ok(await h.http.delete(f"{SNAPS}/{missing}", headers=h.alice), 404)
    await ok(await h.http.get(VOLS + "?limit=x", headers=h.alice), 400)
    assert (await ok(await h.http.get(VOLS, headers=h.alice), 200))["volumes"] == []   # nothing made


async def test_offset_and_limit_page_the_newest_first_list(cloud):
    h = cloud
    ids = [(await _create(h, display_name=f"v{i}"))["id"] for i in range(3)]
    listed = [v["id"] for v in (await ok(await h.http.get(VOLS, headers=h.alice), 200))["volumes"]]
    assert sorted(listed) == sorted(ids) and listed[0] == ids[-1]
    two = (await ok(await h.http.get(VOLS + "?limit=2", headers=h.alice), 200))["volumes"]
    assert [v["id"] for v in two] == listed[:2]
    one = (await ok(await h.http.get(VOLS + "/detail?offset=1&limit=1", headers=h.alice), 200))["volumes"]
    assert [v["id"] for v in one] == listed[1:2]


async def test_a_project_never_sees_another_projects_volumes(cloud):
    h = cloud
    mine = await _create(h)
    assert (await ok(await h.http.get(VOLS, headers=h.bob), 200))["volumes"] == []
    await ok(await h.http.get(f"{VOLS}/{mine['id']}", headers=h.bob), 404)
    await ok(await h.http.delete(f"{VOLS}/{mine['id']}", headers=h.bob), 404)
    await ok(await h.http.post(SNAPS, headers=h.bob, json={"snapshot": {"volume_id": mine["id"]}}), 404)
    # an admin's list is the admin's own project's (Nova asks Cinder without all_tenants)
    assert (await ok(await h.http.get(VOLS, headers=h.admin), 200))["volumes"] == []
    assert (await ok(await h.http.get(f"{VOLS}/{mine['id']}", headers=h.admin), 200))["volume"]["id"] == mine["id"]
    await _available(h, "volume", mine["id"])
    snap = (await ok(await h.http.post(SNAPS, headers=h.alice, json={"snapshot": {"volume_id": mine["id"]}}),
                     200))["snapshot"]
    assert (await ok(await h.http.get(SNAPS, headers=h.bob), 200))["snapshots"] == []
    await ok(await h.http.get(f"{SNAPS}/{snap['id']}", headers=h.bob), 404)
    await ok(await h.http.delete(f"{SNAPS}/{snap['id']}", headers=h.bob), 404)


async def test_snapshots_in_novas_words(cloud):
    h = cloud
    volume = await _create(h)
    await _available(h, "volume", volume["id"])
    await ok(await h.http.post(SNAPS, headers=h.alice, json={"snapshot": {"volume_id": volume["id"],
                                                                          "force": "maybe"}}), 400)
    await ok(await h.http.post(SNAPS, headers=h.alice, json={"snapshot": {}}), 400)
    snap = (await ok(await h.http.post(SNAPS, headers=h.alice, json={"snapshot": {
        "volume_id": volume["id"], "display_name": "s1", "display_description": "first", "force": "false"}}),
        200))["snapshot"]
    assert set(snap) == {"id", "volumeId", "status", "size", "createdAt", "displayName", "displayDescription"}
    assert snap["volumeId"] == volume["id"] and snap["size"] == 1 and snap["displayName"] == "s1"
    shown = await _available(h, "snapshot", snap["id"])
    assert (await ok(await h.http.get(SNAPS, headers=h.alice), 200))["snapshots"] == [shown]
    assert (await ok(await h.http.get(SNAPS + "/detail", headers=h.alice), 200))["snapshots"] == [shown]
    # a volume from it (its size at least the snapshot's)
    copy = await _create(h, snapshot_id=snap["id"])
    assert copy["snapshotId"] == snap["id"]
    await ok(await h.http.delete(f"{SNAPS}/{snap['id']}", headers=h.alice), 202)


async def test_an_attached_volume_shows_its_server(cloud):
    h = cloud
    volume = await _create(h)
    await _available(h, "volume", volume["id"])
    server = (await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202))["server"]
    await wait_status(h, server["id"], "ACTIVE")
    await ok(await h.http.post(f"{V}/servers/{server['id']}/os-volume_attachments", headers={**h.alice, **MV},
                               json={"volumeAttachment": {"volumeId": volume["id"]}}), 200)
    shown = await until(lambda: _shown(h, volume["id"]), lambda v: v["status"] == "in-use",
                        what="the volume in use")
    assert shown["attachments"] == [{"id": volume["id"], "volumeId": volume["id"], "serverId": server["id"],
                                     "device": "/dev/vdb"}]
    await ok(await h.http.delete(f"{VOLS}/{volume['id']}", headers=h.alice), 400)   # attached: Cinder's 400


async def _shown(h, volume_id):
    return (await ok(await h.http.get(f"{VOLS}/{volume_id}", headers=h.alice), 200))["volume"]


async def test_the_proxies_are_gone_from_2_36(cloud):
    h = cloud
    new = {**h.alice, "OpenStack-API-Version": "compute 2.36"}
    made = await _create(h, headers={**h.alice, "OpenStack-API-Version": "compute 2.35"})
    for url in (VOLS, f"{VOLS}/detail", f"{VOLS}/{made['id']}", SNAPS, f"{SNAPS}/detail"):
        await ok(await h.http.get(url, headers=new), 404)
    await ok(await h.http.post(VOLS, headers=new, json={"volume": {"size": 1}}), 404)
    await ok(await h.http.delete(f"{VOLS}/{made['id']}", headers=new), 404)
    await ok(await h.http.post(SNAPS, headers=new, json={"snapshot": {"volume_id": made["id"]}}), 404)
    await ok(await h.http.get(f"{VOLS}/{made['id']}", headers=h.alice), 200)   # still there
