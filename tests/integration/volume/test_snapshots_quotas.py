"""Snapshots, volumes made from snapshots and from other volumes, and the volume quotas
(os-quota-sets, over-quota refusals in Cinder's 413 overLimit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import running
from tests.integration.volume.helpers import call, make_snapshot, make_volume, settled


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["volume"], tmp_path) as harness:
        yield harness


def bits(h, volume_id: str) -> Path:
    return Path(h.roles["volume"].api.store.connection(volume_id).path)


async def test_snapshot_then_volume_from_it_has_the_same_bits(h):
    vol = await make_volume(h, h.alice, name="data1", size=1)
    with open(bits(h, vol["id"]), "r+b") as f:
        f.write(b"hello volume")
    snap = await make_snapshot(h, h.alice, vol["id"], name="snap1", metadata={"a": "b"})
    assert snap["status"] == "available" and snap["size"] == 1 and snap["volume_id"] == vol["id"]
    assert snap["os-extended-snapshot-attributes:progress"] == "100%"
    assert snap["os-extended-snapshot-attributes:project_id"] == "proj-a"

    status, body = await call(h, "GET", "/snapshots?name=snap1", h.alice)
    assert [s["id"] for s in body["snapshots"]] == [snap["id"]]
    status, body = await call(h, "GET", "/snapshots/detail", h.bob)
    assert body["snapshots"] == []
    status, body = await call(h, "GET", f"/snapshots/{snap['id']}", h.bob)
    assert status == 404 and "itemNotFound" in body

    made = await make_volume(h, h.alice, name="data2", snapshot_id=snap["id"], size=None)
    assert made["status"] == "available" and made["snapshot_id"] == snap["id"] and made["size"] == 1
    with open(bits(h, made["id"]), "rb") as f:
        assert f.read(12) == b"hello volume"
    clone = await make_volume(h, h.alice, source_volid=vol["id"], size=2)
    assert clone["source_volid"] == vol["id"] and clone["size"] == 2

    status, body = await call(h, "POST", "/volumes", h.alice, {"volume": {"size": 1, "snapshot_id": snap["id"]}})
    assert status == 202  # the same size is fine; smaller is not (sizes are whole GiB)
    await settled(h)

    # a volume with snapshots is not deleted, unless the snapshots go with it
    status, body = await call(h, "DELETE", f"/volumes/{vol['id']}", h.alice)
    assert status == 400 and "snapshots" in body["badRequest"]["message"]
    status, _ = await call(h, "PUT", f"/snapshots/{snap['id']}", h.alice, {"snapshot": {"name": "renamed"}})
    assert status == 200
    status, _ = await call(h, "DELETE", f"/volumes/{vol['id']}?cascade=true", h.alice)
    assert status == 202
    await settled(h)
    assert (await call(h, "GET", f"/snapshots/{snap['id']}", h.alice))[0] == 404
    assert (await call(h, "GET", f"/volumes/{vol['id']}", h.alice))[0] == 404
    assert not bits(h, vol["id"]).exists()
    assert (await call(h, "GET", f"/volumes/{made['id']}", h.alice))[1]["volume"]["status"] == "available"


async def test_snapshot_delete_and_bad_input(h):
    vol = await make_volume(h, h.alice)
    snap = await make_snapshot(h, h.alice, vol["id"])
    status, _ = await call(h, "DELETE", f"/snapshots/{snap['id']}", h.alice)
    assert status == 202
    await settled(h)
    assert (await call(h, "GET", f"/snapshots/{snap['id']}", h.alice))[0] == 404
    for body in ({"snapshot": {}}, {"snapshot": {"volume_id": "nope"}}, {"snapshot": {"volume_id": vol["id"], "x": 1}},
                 {"snap": {}}):
        status, fault = await call(h, "POST", "/snapshots", h.alice, body)
        assert 400 <= status < 500 and fault[next(iter(fault))]["code"] == status, body


async def test_quota_counts_and_refuses(h):
    status, body = await call(h, "GET", "/os-quota-sets/proj-a", h.alice)
    assert body["quota_set"]["volumes"] == 10 and body["quota_set"]["gigabytes"] == 1000
    status, body = await call(h, "PUT", "/os-quota-sets/proj-a", h.alice, {"quota_set": {"volumes": 1}})
    assert status == 403 and "forbidden" in body
    status, body = await call(h, "PUT", "/os-quota-sets/proj-a", h.admin,
                              {"quota_set": {"volumes": 2, "gigabytes": 5, "snapshots": 1}})
    assert status == 200 and body["quota_set"]["volumes"] == 2

    vol = await make_volume(h, h.alice, size=2)
    await make_snapshot(h, h.alice, vol["id"])
    status, body = await call(h, "GET", "/os-quota-sets/proj-a?usage=True", h.alice)
    quota = body["quota_set"]
    assert quota["volumes"] == {"limit": 2, "in_use": 1, "reserved": 0, "allocated": 0}
    assert quota["gigabytes"]["in_use"] == 4 and quota["snapshots"]["in_use"] == 1

    status, body = await call(h, "POST", "/volumes", h.alice, {"volume": {"size": 2}})
    assert status == 413 and "gigabytes" in body["overLimit"]["message"]
    status, body = await call(h, "POST", "/snapshots", h.alice, {"snapshot": {"volume_id": vol["id"]}})
    assert status == 413 and "overLimit" in body
    status, body = await call(h, "POST", f"/volumes/{vol['id']}/action", h.alice, {"os-extend": {"new_size": 4}})
    assert status == 413
    await make_volume(h, h.alice, size=1)
    status, body = await call(h, "POST", "/volumes", h.alice, {"volume": {"size": 1}})
    assert status == 413 and "volumes" in body["overLimit"]["message"]

    status, body = await call(h, "GET", "/os-quota-sets/proj-a", h.bob)
    assert status == 403
    status, body = await call(h, "GET", "/os-quota-sets/proj-b/defaults", h.bob)
    assert body["quota_set"]["volumes"] == 10
    status, _ = await call(h, "DELETE", "/os-quota-sets/proj-a", h.admin)
    assert status == 200
    status, body = await call(h, "GET", "/os-quota-sets/proj-a", h.alice)
    assert body["quota_set"]["volumes"] == 10
