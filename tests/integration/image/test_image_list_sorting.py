"""GET /v2/images sorts by the caller's keys and filters by size, as Glance does
(`openstack image list --sort size:desc`, Tempest's list tests), and by a column's exact
value (`?size=`, `?min_ram=`, `?protected=`)."""

from __future__ import annotations

import io

import pytest

from tests.harness import running


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as harness:
        yield harness


async def _image(h, name, size):
    resp = await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": name, "disk_format": "raw", "container_format": "bare"})
    assert resp.status == 201
    image = await resp.json()
    if size is not None:
        resp = await h.http.put(f"/image/v2/images/{image['id']}/file", data=io.BytesIO(b"x" * size),
                                headers={**h.alice, "Content-Type": "application/octet-stream"})
        assert resp.status == 204
    return image["id"]


async def _names(h, query):
    resp = await h.http.get(f"/image/v2/images?{query}", headers=h.alice)
    assert resp.status == 200, await resp.text()
    return [i["name"] for i in (await resp.json())["images"]]


async def test_sort_keys_directions_and_size_range(h):
    for name, size in (("b", 30), ("a", 10), ("c", 20), ("d", None)):
        await _image(h, name, size)

    assert await _names(h, "sort=size:desc&size_min=1") == ["b", "c", "a"]
    assert await _names(h, "sort=size:asc&size_min=1") == ["a", "c", "b"]
    assert await _names(h, "sort_key=name&sort_dir=asc") == ["a", "b", "c", "d"]
    assert await _names(h, "sort_key=name&sort_dir=desc") == ["d", "c", "b", "a"]
    assert await _names(h, "sort=name") == ["d", "c", "b", "a"]  # desc when unsaid
    assert await _names(h, "sort=status:asc,name:desc") == ["c", "b", "a", "d"]
    assert await _names(h, "sort=name:asc&size_min=15") == ["b", "c"]
    assert await _names(h, "sort=name:asc&size_max=20") == ["a", "c"]
    assert await _names(h, "sort=name:asc&size_min=11&size_max=29") == ["c"]
    assert await _names(h, "") == ["d", "c", "a", "b"]  # newest first by default


async def test_exact_column_filters(h):
    for name, size in (("b", 30), ("a", 10)):
        await _image(h, name, size)
    assert await _names(h, "size=30") == ["b"]
    assert await _names(h, "size=31") == []
    assert await _names(h, "min_ram=0&sort=name:asc") == ["a", "b"]
    assert await _names(h, "protected=true") == []
    resp = await h.http.get("/image/v2/images?size=big", headers=h.alice)
    assert resp.status == 400


async def test_pages_follow_the_chosen_order(h):
    for name, size in (("b", 2), ("a", 1), ("c", 3)):
        await _image(h, name, size)
    resp = await h.http.get("/image/v2/images?sort=size:asc&limit=2", headers=h.alice)
    first = await resp.json()
    assert [i["name"] for i in first["images"]] == ["a", "b"]
    resp = await h.http.get(f"/image{first['next']}", headers=h.alice)
    assert [i["name"] for i in (await resp.json())["images"]] == ["c"]


@pytest.mark.parametrize("query", ["sort=bogus:asc", "sort=name:up", "sort=name&sort_key=size",
                                   "sort_key=name&sort_key=size&sort_dir=asc&sort_dir=desc&sort_dir=asc",
                                   "sort=name,name", "size_min=big"])
async def test_bad_sort_or_size_is_a_400(h, query):
    resp = await h.http.get(f"/image/v2/images?{query}", headers=h.alice)
    assert resp.status == 400
    assert (await resp.text()).startswith("400 Bad Request")  # Glance's plain-text fault
