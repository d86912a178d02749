"""same_host / different_host hints and availability zones: servers land where asked, and
hints or zones that name nothing are refused before anything is made."""

from __future__ import annotations

import pytest

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud


async def boot(h, hints=None, **extra) -> str:
    body = {**boot_body(h, **extra), **({"os:scheduler_hints": hints} if hints else {})}
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=body), 202)
    server = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    return server["id"]


async def host_of(h, server_id: str) -> str:
    return (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.admin, **MV}),
                     200))["server"]["OS-EXT-SRV-ATTR:host"]


async def test_same_host_and_different_host(cloud):
    h = cloud
    first = await boot(h)
    home = await host_of(h, first)
    for _ in range(2):
        assert await host_of(h, await boot(h, {"same_host": first})) == home
    away = await boot(h, {"different_host": [first]})
    assert await host_of(h, away) != home


async def test_a_zone_that_exists_is_honoured(cloud):
    h = cloud
    server = await boot(h, availability_zone="nova")
    shown = (await ok(await h.http.get(f"{V}/servers/{server}", headers=h.alice), 200))["server"]
    assert shown["OS-EXT-AZ:availability_zone"] == "nova"


@pytest.mark.parametrize("extra, hints, words", [
    ({"availability_zone": "atlantis"}, None, "availability zone 'atlantis' is not available"),
    ({}, {"same_host": "not-a-uuid"}, "not an instance id"),
    ({}, {"different_host": ["00000000-0000-0000-0000-000000000000"]}, "do not exist"),
    ({}, {"same_host": 7}, "must be an instance id"),
])
async def test_unknown_zones_and_hints_are_400(cloud, extra, hints, words):
    h = cloud
    body = {**boot_body(h, **extra), **({"os:scheduler_hints": hints} if hints else {})}
    resp = await h.http.post(V + "/servers", headers=h.alice, json=body)
    assert resp.status == 400 and words in (await resp.json())["badRequest"]["message"]
    assert (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"] == []


async def test_another_projects_instance_cannot_be_named(cloud):
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers=h.admin,
                                         json=boot_body(h, networks="none")), 202)
    resp = await h.http.post(V + "/servers", headers=h.alice, json={
        **boot_body(h), "os:scheduler_hints": {"same_host": created["server"]["id"]}})
    assert resp.status == 400


async def test_a_hint_that_contradicts_the_group_policy_is_400(cloud):
    h = cloud
    first = await boot(h)
    group = (await ok(await h.http.post(V + "/os-server-groups", headers=h.alice, json={
        "server_group": {"name": "apart", "policies": ["anti-affinity"]}}), 200))["server_group"]["id"]
    resp = await h.http.post(V + "/servers", headers=h.alice, json={
        **boot_body(h), "os:scheduler_hints": {"group": group, "same_host": first}})
    assert resp.status == 400 and "contradicts" in await resp.text()
    shown = await ok(await h.http.get(f"{V}/os-server-groups/{group}", headers=h.alice), 200)
    assert shown["server_group"]["members"] == []
