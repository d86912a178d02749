"""Image members (/v2/images/{id}/members) as Glance has them: the owner offers a shared
image to another project, which accepts or rejects it; the answer decides whether the image
shows in that project's lists (member_status filters them), while any member may read and
boot the image itself; only shared images have members, only the owner adds and removes
them, only the member answers."""

from __future__ import annotations

import pytest

from nova_async.common import errors
from nova_async.image.client import ImageClient
from tests.harness import running

IMAGES = "/image/v2/images"


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as harness:
        yield harness


async def _new_image(h, **fields):
    resp = await h.http.post(IMAGES, headers=h.alice, json={"name": "shared-one", "disk_format": "raw",
                                                          "container_format": "bare", **fields})
    assert resp.status == 201
    return (await resp.json())["id"]


async def _listed(h, headers, query=""):
    resp = await h.http.get(f"{IMAGES}{query}", headers=headers)
    assert resp.status == 200
    return [i["id"] for i in (await resp.json())["images"]]


async def _answer(h, image_id, status, headers=None):
    return await h.http.put(f"{IMAGES}/{image_id}/members/proj-b", headers=headers or h.bob,
                            json={"status": status})


async def test_share_accept_reject_and_remove(h):
    image_id = await _new_image(h)   # visibility defaults to shared
    assert (await h.http.get(f"{IMAGES}/{image_id}", headers=h.bob)).status == 404

    resp = await h.http.post(f"{IMAGES}/{image_id}/members", headers=h.alice, json={"member": "proj-b"})
    assert resp.status == 200
    member = await resp.json()
    assert (member["image_id"], member["member_id"], member["status"]) == (image_id, "proj-b", "pending")
    assert member["schema"] == "/v2/schemas/member" and member["created_at"]

    # Pending: readable (and bootable) by the member, but not in its default list.
    assert (await h.http.get(f"{IMAGES}/{image_id}", headers=h.bob)).status == 200
    assert (await ImageClient(h.bus).get(image_id, "proj-b")).id == image_id
    assert image_id not in await _listed(h, h.bob)
    assert await _listed(h, h.bob, "?visibility=shared&member_status=pending") == [image_id]
    assert image_id in await _listed(h, h.bob, "?member_status=all")

    resp = await _answer(h, image_id, "accepted", h.alice)   # the owner cannot answer for bob
    assert resp.status == 403
    resp = await _answer(h, image_id, "maybe")
    assert resp.status == 400
    resp = await _answer(h, image_id, "accepted")
    assert resp.status == 200 and (await resp.json())["status"] == "accepted"
    assert image_id in await _listed(h, h.bob)
    assert await _listed(h, h.bob, "?visibility=shared&member_status=pending") == []

    resp = await h.http.get(f"{IMAGES}/{image_id}/members", headers=h.bob)
    body = await resp.json()
    assert [m["member_id"] for m in body["members"]] == ["proj-b"] and body["schema"] == "/v2/schemas/members"
    resp = await h.http.get(f"{IMAGES}/{image_id}/members/proj-b", headers=h.alice)
    assert (await resp.json())["status"] == "accepted"

    # A member may not change the image, nor remove itself; rejecting hides it again.
    resp = await h.http.delete(f"{IMAGES}/{image_id}", headers=h.bob)
    assert resp.status == 403
    assert (await h.http.delete(f"{IMAGES}/{image_id}/members/proj-b", headers=h.bob)).status == 403
    assert (await _answer(h, image_id, "rejected")).status == 200
    assert image_id not in await _listed(h, h.bob)

    assert (await h.http.delete(f"{IMAGES}/{image_id}/members/proj-b", headers=h.alice)).status == 204
    assert (await h.http.get(f"{IMAGES}/{image_id}", headers=h.bob)).status == 404
    with pytest.raises(errors.NotFound):
        await ImageClient(h.bus).get(image_id, "proj-b")
    assert (await h.http.delete(f"{IMAGES}/{image_id}/members/proj-b", headers=h.alice)).status == 404


async def test_member_rules(h):
    private = await _new_image(h, visibility="private")
    resp = await h.http.post(f"{IMAGES}/{private}/members", headers=h.alice, json={"member": "proj-b"})
    assert resp.status == 403   # only shared images have members
    assert (await h.http.get(f"{IMAGES}/{private}/members", headers=h.alice)).status == 403

    image_id = await _new_image(h)
    for body in ({}, {"member": ""}, {"member": 7}):
        resp = await h.http.post(f"{IMAGES}/{image_id}/members", headers=h.alice, json=body)
        assert resp.status == 400
    assert (await h.http.post(f"{IMAGES}/{image_id}/members", headers=h.alice,
                              json={"member": "proj-b"})).status == 200
    resp = await h.http.post(f"{IMAGES}/{image_id}/members", headers=h.alice, json={"member": "proj-b"})
    assert resp.status == 409
    await h.http.post(f"{IMAGES}/{image_id}/members", headers=h.alice, json={"member": "proj-c"})
    # bob sees only his own entry; someone else's is not there for him
    resp = await h.http.get(f"{IMAGES}/{image_id}/members", headers=h.bob)
    assert [m["member_id"] for m in (await resp.json())["members"]] == ["proj-b"]
    assert (await h.http.get(f"{IMAGES}/{image_id}/members/proj-c", headers=h.bob)).status == 404
    resp = await h.http.get(f"{IMAGES}/{image_id}/members", headers=h.admin)
    assert sorted(m["member_id"] for m in (await resp.json())["members"]) == ["proj-b", "proj-c"]

    # Made private, the image keeps its members but they no longer see it.
    resp = await h.http.patch(f"{IMAGES}/{image_id}", headers={
        **h.alice, "Content-Type": "application/openstack-images-v2.1-json-patch"},
        json=[{"op": "replace", "path": "/visibility", "value": "private"}])
    assert resp.status == 200
    assert (await h.http.get(f"{IMAGES}/{image_id}", headers=h.bob)).status == 404
    assert (await h.http.get(f"{IMAGES}?member_status=maybe", headers=h.bob)).status == 400
