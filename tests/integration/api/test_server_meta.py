"""Server metadata and tags, as the clients drive them."""

from __future__ import annotations

import asyncio

import pytest

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud
T = {"OpenStack-API-Version": "compute 2.26"}


async def server(h, **extra) -> str:
    created = await ok(await h.http.post(V + "/servers", headers={**h.alice, "OpenStack-API-Version": "compute 2.52"},
                                         json=boot_body(h, **extra)), 202)
    await wait_status(h, created["server"]["id"], "ACTIVE")
    return created["server"]["id"]


async def test_metadata_merge_replace_items(cloud):
    h = cloud
    sid = await server(h, metadata={"a": "1"})
    m = f"{V}/servers/{sid}/metadata"
    assert await ok(await h.http.get(m, headers=h.alice), 200) == {"metadata": {"a": "1"}}
    merged = await ok(await h.http.post(m, headers=h.alice, json={"metadata": {"b": "2"}}), 200)
    assert merged == {"metadata": {"a": "1", "b": "2"}}
    replaced = await ok(await h.http.put(m, headers=h.alice, json={"metadata": {"c": "3"}}), 200)
    assert replaced == {"metadata": {"c": "3"}}
    assert await ok(await h.http.put(m + "/d", headers=h.alice, json={"meta": {"d": "4"}}), 200) == {"meta": {"d": "4"}}
    assert await ok(await h.http.get(m + "/d", headers=h.alice), 200) == {"meta": {"d": "4"}}
    assert (await h.http.delete(m + "/c", headers=h.alice)).status == 204
    assert (await h.http.get(m + "/c", headers=h.alice)).status == 404
    assert (await h.http.put(m + "/x", headers=h.alice, json={"meta": {"y": "1"}})).status == 400
    assert (await h.http.get(m, headers=h.bob)).status == 404
    shown = await ok(await h.http.get(f"{V}/servers/{sid}", headers=h.alice), 200)
    assert shown["server"]["metadata"] == {"d": "4"}


async def test_concurrent_merges_keep_every_key_and_the_quota_holds(cloud):
    h = cloud
    sid = await server(h)
    m = f"{V}/servers/{sid}/metadata"
    await asyncio.gather(*(h.http.post(m, headers=h.alice, json={"metadata": {f"k{i}": "v"}}) for i in range(20)))
    assert len((await ok(await h.http.get(m, headers=h.alice), 200))["metadata"]) == 20
    await ok(await h.http.put(V + "/os-quota-sets/proj-a", headers=h.admin,
                              json={"quota_set": {"metadata_items": 20}}), 200)
    assert (await h.http.post(m, headers=h.alice, json={"metadata": {"one": "more"}})).status == 403


async def test_tags(cloud):
    h = cloud
    sid = await server(h, tags=["web"])
    t = f"{V}/servers/{sid}/tags"
    assert await ok(await h.http.get(t, headers={**h.alice, **T}), 200) == {"tags": ["web"]}
    assert (await h.http.put(t + "/db", headers={**h.alice, **T})).status == 201
    assert (await h.http.put(t + "/db", headers={**h.alice, **T})).status == 204
    assert (await h.http.get(t + "/db", headers={**h.alice, **T})).status == 204
    assert (await h.http.get(t + "/nope", headers={**h.alice, **T})).status == 404
    shown = await ok(await h.http.get(f"{V}/servers/{sid}", headers={**h.alice, **T}), 200)
    assert shown["server"]["tags"] == ["web", "db"]
    assert await ok(await h.http.put(t, headers={**h.alice, **T}, json={"tags": ["x", "x", "y"]}), 200) == {
        "tags": ["x", "y"]}
    assert (await h.http.delete(t + "/x", headers={**h.alice, **T})).status == 204
    assert (await h.http.delete(t, headers={**h.alice, **T})).status == 204
    assert await ok(await h.http.get(t, headers={**h.alice, **T}), 200) == {"tags": []}
    assert (await h.http.get(t, headers=h.alice)).status == 404            # before 2.26


@pytest.mark.parametrize("method, path, body", [
    ("PUT", "/tags", {"tags": ["a,b"]}),
    ("PUT", "/tags", {"tags": ["x" * 61]}),
    ("PUT", "/tags", {"tags": [str(i) for i in range(51)]}),
    ("PUT", "/tags/" + "y" * 61, None),
    ("POST", "/metadata", {"metadata": {"k": 1}}),
    ("POST", "/metadata", {"metadata": {"": "v"}}),
    ("PUT", "/metadata", {"meta": {}}),
])
async def test_bad_metadata_and_tags_are_400(cloud, method, path, body):
    h = cloud
    sid = await server(h)
    resp = await h.http.request(method, f"{V}/servers/{sid}{path}", headers={**h.alice, **T}, json=body)
    assert resp.status == 400, await resp.text()


async def test_rename_and_describe_a_server(cloud):
    h = cloud
    sid = await server(h, description="first")
    v = {"OpenStack-API-Version": "compute 2.19"}
    shown = (await ok(await h.http.get(f"{V}/servers/{sid}", headers={**h.alice, **v}), 200))["server"]
    assert shown["description"] == "first"
    updated = await ok(await h.http.put(f"{V}/servers/{sid}", headers={**h.alice, **v}, json={
        "server": {"name": "renamed", "description": None}}), 200)
    assert (updated["server"]["name"], updated["server"]["description"]) == ("renamed", None)
    for bad in ({"server": {"name": ""}}, {"server": {"flavor": "x"}}, {"server": {"accessIPv4": "nope"}}):
        assert (await h.http.put(f"{V}/servers/{sid}", headers={**h.alice, **v}, json=bad)).status == 400
    assert (await h.http.put(f"{V}/servers/{sid}", headers=h.alice,
                             json={"server": {"description": "old clients cannot"}})).status == 400
