"""The compute API's images (`/compute/v2.1/images`, until 2.35): the image service's images
as Nova shows them, filtered, paged, their metadata changed within the metadata_items quota,
deleted by their owner only, and gone from 2.36."""

from __future__ import annotations

import pytest

from tests.integration.test_server_lifecycle import V, ok, sim_cloud

NEWER = {"OpenStack-API-Version": "compute 2.36"}


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path) as h:   # alice's raw image "demo" (h.image), active
        yield h


async def glance_image(h, **fields) -> str:
    made = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
        "disk_format": "raw", "container_format": "bare", **fields}), 201)
    return made["id"]


async def test_list_show_and_filters(cloud):
    h = cloud
    snap = await glance_image(h, name="snap", instance_uuid="8a164c54-3ee8-4acf-966a-b02342f020e1",
                              image_type="snapshot", min_ram=512)   # queued: no data yet
    listed = (await ok(await h.http.get(V + "/images", headers=h.alice), 200))["images"]
    assert {i["name"] for i in listed} >= {"demo", "snap"}
    assert set(listed[0]) == {"id", "name", "links"} and listed[0]["name"] == "snap"   # newest first
    assert [link["rel"] for link in listed[0]["links"]] == ["self", "bookmark", "alternate"]

    shown = (await ok(await h.http.get(f"{V}/images/{h.image}", headers=h.alice), 200))["image"]
    assert (shown["status"], shown["progress"], shown["minRam"], shown["minDisk"]) == ("ACTIVE", 100, 0, 0)
    assert shown["OS-EXT-IMG-SIZE:size"] == 65536 and shown["metadata"] == {} and "server" not in shown
    assert shown["created"].endswith("Z")
    queued = (await ok(await h.http.get(f"{V}/images/{snap}", headers=h.alice), 200))["image"]
    assert queued["status"] == "SAVING" and queued["server"]["id"] == "8a164c54-3ee8-4acf-966a-b02342f020e1"

    async def names(query: str) -> list[str]:
        found = (await ok(await h.http.get(f"{V}/images/detail?{query}", headers=h.alice), 200))["images"]
        return [i["name"] for i in found if i["name"] in ("demo", "snap")]
    assert await names("name=demo") == ["demo"]
    assert await names("status=SAVING") == ["snap"]
    assert await names("status=ACTIVE") == ["demo"]
    assert await names("server=http://x/compute/v2.1/servers/8a164c54-3ee8-4acf-966a-b02342f020e1") == ["snap"]
    assert await names("type=snapshot") == ["snap"]
    assert await names("minRam=512") == ["snap"] and await names("minDisk=1") == []
    first = (await ok(await h.http.get(V + "/images?limit=1", headers=h.alice), 200))["images"]
    assert len(first) == 1
    after = (await ok(await h.http.get(f"{V}/images?marker={first[0]['id']}", headers=h.alice), 200))["images"]
    assert first[0]["id"] not in {i["id"] for i in after} and len(after) == len(listed) - 1
    await ok(await h.http.get(f"{V}/images?minRam=x", headers=h.alice), 400)
    await ok(await h.http.get(f"{V}/images?marker=00000000-0000-0000-0000-000000000001", headers=h.alice), 400)

    # another project's private image is not there for bob
    await ok(await h.http.get(f"{V}/images/{h.image}", headers=h.bob), 404)
    assert h.image not in {i["id"] for i in (await ok(await h.http.get(V + "/images", headers=h.bob), 200))["images"]}
    await ok(await h.http.get(V + "/images", headers={**h.alice, **NEWER}), 404)


async def test_metadata_within_the_quota(cloud):
    h = cloud
    url = f"{V}/images/{h.image}/metadata"
    assert await ok(await h.http.post(url, headers=h.alice, json={"metadata": {"a": "1", "b": "2"}}), 200) == {
        "metadata": {"a": "1", "b": "2"}}
    assert await ok(await h.http.put(url, headers=h.alice, json={"metadata": {"c": "3"}}), 200) == {
        "metadata": {"c": "3"}}
    assert await ok(await h.http.put(f"{url}/d", headers=h.alice, json={"meta": {"d": "4"}}), 200) == {
        "meta": {"d": "4"}}
    assert await ok(await h.http.get(f"{url}/d", headers=h.alice), 200) == {"meta": {"d": "4"}}
    assert await ok(await h.http.get(url, headers=h.alice), 200) == {"metadata": {"c": "3", "d": "4"}}
    await ok(await h.http.put(f"{url}/d", headers=h.alice, json={"meta": {"e": "5"}}), 400)
    await ok(await h.http.post(url, headers=h.alice, json={"metadata": {"name": "renamed"}}), 403)   # core
    assert (await h.http.delete(f"{url}/d", headers=h.alice)).status == 204
    await ok(await h.http.get(f"{url}/d", headers=h.alice), 404)
    await ok(await h.http.delete(f"{url}/d", headers=h.alice), 404)
    await ok(await h.http.put("/compute/v2.1/os-quota-sets/proj-a", headers=h.admin,
                              json={"quota_set": {"metadata_items": 2}}), 200)
    over = await ok(await h.http.post(url, headers=h.alice, json={"metadata": {"x": "1", "y": "2"}}), 403)
    assert "metadata items" in over["forbidden"]["message"]
    await ok(await h.http.post(url, headers=h.bob, json={"metadata": {"x": "1"}}), 404)


async def test_only_the_owner_deletes(cloud):
    h = cloud
    await ok(await h.http.delete(f"{V}/images/{h.image}", headers=h.bob), 404)
    assert (await h.http.delete(f"{V}/images/{h.image}", headers=h.alice)).status == 204
    await ok(await h.http.get(f"{V}/images/{h.image}", headers=h.alice), 404)
    await ok(await h.http.get(f"/image/v2/images/{h.image}", headers=h.alice), 404)
