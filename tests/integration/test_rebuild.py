"""Rebuild: the same server (id, ports, host, claim) made anew from another image."""

from __future__ import annotations

import pytest

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, settled, wait_status

cloud = test_server_lifecycle.cloud


async def image(h, name: str) -> str:
    created = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": name, "disk_format": "raw", "container_format": "bare"}), 201)
    await ok(await h.http.put(f"/image/v2/images/{created['id']}/file", data=b"\1" * 4096,
                              headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
    return created["id"]


@pytest.mark.parametrize("stopped", [False, True], ids=["active", "stopped"])
async def test_rebuild_keeps_the_server_and_changes_its_image(cloud, stopped):
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    sid = created["server"]["id"]
    before = await wait_status(h, sid, "ACTIVE")
    if stopped:
        await ok(await h.http.post(f"{V}/servers/{sid}/action", headers=h.alice, json={"os-stop": None}), 202)
        await wait_status(h, sid, "SHUTOFF")
    new = await image(h, "second")
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers=h.alice, json={"rebuild": {
        "imageRef": new, "name": "reborn", "metadata": {"gen": "2"}}})
    assert resp.status == 202, await resp.text()
    body = (await resp.json())["server"]
    assert body["status"] == "REBUILD" and body["adminPass"]
    after = await settled(h, sid)
    assert after["status"] == ("SHUTOFF" if stopped else "ACTIVE"), after.get("fault")
    assert (after["image"]["id"], after["name"], after["metadata"]) == (new, "reborn", {"gen": "2"})
    assert after["addresses"] == before["addresses"]
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    assert actions[0]["action"] == "rebuild"


async def test_rebuild_refusals(cloud):
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    sid = created["server"]["id"]
    await wait_status(h, sid, "ACTIVE")
    act = f"{V}/servers/{sid}/action"
    assert (await h.http.post(act, headers=h.alice, json={"rebuild": {
        "imageRef": "00000000-0000-0000-0000-000000000000"}})).status == 400
    assert (await h.http.post(act, headers=h.alice, json={"rebuild": {}})).status == 400
    assert (await h.http.post(act, headers=h.alice, json={"rebuild": {"imageRef": h.image,
                                                                       "key_name": "nope"}})).status == 400
    await ok(await h.http.post(act, headers=h.alice, json={"pause": None}), 202)
    await wait_status(h, sid, "PAUSED")
    assert (await h.http.post(act, headers=h.alice, json={"rebuild": {"imageRef": h.image}})).status == 409
    assert (await h.http.post(act, headers=h.bob, json={"rebuild": {"imageRef": h.image}})).status == 404
