"""POST /v2/images/{id}/actions/deactivate|reactivate: an admin or the image's owner takes an
active image out of use and back; while deactivated only admins may download it (403 for
others, its owner too)."""

from __future__ import annotations

import io

import pytest

from tests.harness import running

DATA = b"disk bytes" * 100


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as harness:
        yield harness


async def _action(h, image_id, action, headers):
    return (await h.http.post(f"/image/v2/images/{image_id}/actions/{action}", headers=headers)).status


async def _status(h, image_id):
    return (await (await h.http.get(f"/image/v2/images/{image_id}", headers=h.alice)).json())["status"]


async def test_deactivate_and_reactivate(h):
    resp = await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "cirros", "disk_format": "raw", "container_format": "bare"})
    image_id = (await resp.json())["id"]
    assert await _action(h, image_id, "deactivate", h.admin) == 400   # queued: nothing to stop
    resp = await h.http.put(f"/image/v2/images/{image_id}/file", data=io.BytesIO(DATA),
                            headers={**h.alice, "Content-Type": "application/octet-stream"})
    assert resp.status == 204

    assert await _action(h, image_id, "deactivate", h.bob) == 404     # not his to see
    assert await _action(h, image_id, "deactivate", h.alice) == 204   # its owner
    for _ in range(2):   # deactivating a deactivated image changes nothing
        assert await _action(h, image_id, "deactivate", h.admin) == 204
    assert await _status(h, image_id) == "deactivated"

    resp = await h.http.get(f"/image/v2/images/{image_id}/file", headers=h.alice)
    assert resp.status == 403
    resp = await h.http.get(f"/image/v2/images/{image_id}/file", headers=h.admin)
    assert resp.status == 200 and await resp.read() == DATA

    assert await _action(h, image_id, "reactivate", h.bob) == 404
    assert await _action(h, image_id, "reactivate", h.alice) == 204
    assert await _action(h, image_id, "reactivate", h.admin) == 204
    assert await _status(h, image_id) == "active"
    resp = await h.http.get(f"/image/v2/images/{image_id}/file", headers=h.alice)
    assert resp.status == 200 and await resp.read() == DATA

    assert await _action(h, "no-such-image", "deactivate", h.admin) == 404
    assert await _action(h, image_id, "explode", h.admin) in (404, 405)
