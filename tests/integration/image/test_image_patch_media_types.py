"""PATCH /v2/images/{id} takes both JSON-patch media types Glance takes: v2.1 (RFC 6902
operations) and the older v2.0 (the op named as the key), and refuses any other with 415."""

from __future__ import annotations

import pytest

from tests.harness import running


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as harness:
        yield harness


async def _patch(h, image_id, media_type, ops):
    return await h.http.patch(f"/image/v2/images/{image_id}", json=ops,
                              headers={**h.alice, "Content-Type": media_type})


async def test_both_glance_patch_media_types_update_an_image(h):
    resp = await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "cirros", "disk_format": "qcow2", "container_format": "bare", "flavour": "mint"})
    image = await resp.json()

    resp = await _patch(h, image["id"], "application/openstack-images-v2.0-json-patch", [
        {"replace": "/name", "value": "fedora"}, {"add": "/colour", "value": "red"},
        {"remove": "/flavour"}])
    assert resp.status == 200, await resp.text()
    shown = await resp.json()
    assert shown["name"] == "fedora" and shown["colour"] == "red" and "flavour" not in shown

    resp = await _patch(h, image["id"], "application/openstack-images-v2.1-json-patch", [
        {"op": "replace", "path": "/colour", "value": "blue"}])
    assert resp.status == 200
    assert (await resp.json())["colour"] == "blue"


@pytest.mark.parametrize("ops", [[{"op": "replace", "path": "/name", "value": "x"}],
                                 [{"replace": "/name", "add": "/x", "value": "x"}],
                                 [{"path": "/name", "value": "x"}], {"replace": "/name"}])
async def test_a_malformed_v20_patch_is_a_400(h, ops):
    resp = await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "cirros", "disk_format": "qcow2", "container_format": "bare"})
    image = await resp.json()
    resp = await _patch(h, image["id"], "application/openstack-images-v2.0-json-patch", ops)
    assert resp.status == 400


async def test_other_media_types_are_a_415(h):
    resp = await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "cirros", "disk_format": "qcow2", "container_format": "bare"})
    image = await resp.json()
    resp = await _patch(h, image["id"], "application/json-patch+json",
                        [{"op": "replace", "path": "/name", "value": "x"}])
    assert resp.status == 415
