"""PUT/DELETE /v2/images/{id}/tags/{tag}: add one tag (idempotent) or remove one, by the
image's owner only, as Glance does."""

from __future__ import annotations

import pytest

from tests.harness import running


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as harness:
        yield harness


async def _tags(h, image_id):
    resp = await h.http.get(f"/image/v2/images/{image_id}", headers=h.alice)
    return (await resp.json())["tags"]


async def test_add_and_remove_tags(h):
    resp = await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "cirros", "disk_format": "qcow2", "container_format": "bare", "tags": ["old"]})
    image_id = (await resp.json())["id"]
    url = f"/image/v2/images/{image_id}/tags"

    for _ in range(2):   # a second PUT of the same tag changes nothing
        resp = await h.http.put(f"{url}/new%20one", headers=h.alice)
        assert resp.status == 204
    assert await _tags(h, image_id) == ["old", "new one"]
    listed = await (await h.http.get("/image/v2/images?tag=new%20one", headers=h.alice)).json()
    assert [i["id"] for i in listed["images"]] == [image_id]

    resp = await h.http.delete(f"{url}/old", headers=h.alice)
    assert resp.status == 204
    assert await _tags(h, image_id) == ["new one"]
    resp = await h.http.delete(f"{url}/old", headers=h.alice)
    assert resp.status == 404

    # Another project: a private image does not exist for it; a public one is not its to tag.
    resp = await h.http.put(f"{url}/x", headers=h.bob)
    assert resp.status == 404
    resp = await h.http.post("/image/v2/images", headers=h.admin, json={
        "name": "pub", "disk_format": "qcow2", "container_format": "bare", "visibility": "public"})
    public_id = (await resp.json())["id"]
    resp = await h.http.put(f"/image/v2/images/{public_id}/tags/x", headers=h.bob)
    assert resp.status == 403
    resp = await h.http.put(f"/image/v2/images/{public_id}/tags/{'t' * 256}", headers=h.admin)
    assert resp.status == 400
    resp = await h.http.put("/image/v2/images/nope/tags/x", headers=h.alice)
    assert resp.status == 404


async def test_an_images_task_list_is_empty_and_private(h):
    # Nothing is imported here, so no task ever works on an image (Tempest's compute tests
    # wait on this list after a snapshot).
    resp = await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "mine", "disk_format": "qcow2", "container_format": "bare"})
    image_id = (await resp.json())["id"]
    resp = await h.http.get(f"/image/v2/images/{image_id}/tasks", headers=h.alice)
    assert resp.status == 200 and await resp.json() == {"tasks": []}
    assert (await h.http.get(f"/image/v2/images/{image_id}/tasks", headers=h.bob)).status == 404
