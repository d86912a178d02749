"""Flavor access, as Nova: a private flavor is listed, shown and booted only by admins and the
projects an admin gave access to; the access list of a public flavor is a 404; and from
2.55 an admin changes a flavor's description with PUT."""

from __future__ import annotations

import pytest

from tests.integration.test_server_lifecycle import V, boot_body, ok, sim_cloud, wait_status

V255 = {"OpenStack-API-Version": "compute 2.55"}


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path) as h:
        h.private = (await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": "secret", "ram": 512, "vcpus": 1, "disk": 1, "os-flavor-access:is_public": False}}),
            200))["flavor"]["id"]
        yield h


async def names(h, headers) -> set[str]:
    return {f["name"] for f in (await ok(await h.http.get(V + "/flavors", headers=headers), 200))["flavors"]}


async def test_a_private_flavor_is_for_the_projects_given_access(cloud):
    h = cloud
    assert "secret" not in await names(h, h.alice)
    await ok(await h.http.get(f"{V}/flavors/{h.private}", headers=h.alice), 404)
    refused = await ok(await h.http.post(V + "/servers", headers=h.alice,
                                         json=boot_body(h, flavorRef=h.private)), 400)
    assert "could not be found" in refused["badRequest"]["message"]
    assert await ok(await h.http.get(f"{V}/flavors/{h.private}/os-flavor-access", headers=h.admin), 200) == {
        "flavor_access": []}

    url = f"{V}/flavors/{h.private}/action"
    given = await ok(await h.http.post(url, headers=h.admin, json={"addTenantAccess": {"tenant": "proj-a"}}), 200)
    assert given == {"flavor_access": [{"flavor_id": h.private, "tenant_id": "proj-a"}]}
    await ok(await h.http.post(url, headers=h.admin, json={"addTenantAccess": {"tenant": "proj-a"}}), 409)
    await ok(await h.http.post(url, headers=h.alice, json={"addTenantAccess": {"tenant": "proj-a"}}), 403)
    assert "secret" in await names(h, h.alice) and "secret" not in await names(h, h.bob)
    await ok(await h.http.get(f"{V}/flavors/{h.private}", headers=h.alice), 200)
    await ok(await h.http.get(f"{V}/flavors/{h.private}", headers=h.bob), 404)
    made = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, flavorRef=h.private)), 202)
    await wait_status(h, made["server"]["id"], "ACTIVE")

    await ok(await h.http.post(url, headers=h.admin, json={"removeTenantAccess": {"tenant": "proj-a"}}), 200)
    await ok(await h.http.post(url, headers=h.admin, json={"removeTenantAccess": {"tenant": "proj-a"}}), 404)
    assert "secret" not in await names(h, h.alice)
    await ok(await h.http.post(url, headers=h.admin, json={"addTenantAccess": {}}), 400)
    await ok(await h.http.post(url, headers=h.admin, json={"shareWithEveryone": {"tenant": "x"}}), 400)

    # A public flavor has no access list, and takes none.
    await ok(await h.http.get(f"{V}/flavors/{h.flavor}/os-flavor-access", headers=h.admin), 404)
    await ok(await h.http.post(f"{V}/flavors/{h.flavor}/action", headers=h.admin,
                               json={"addTenantAccess": {"tenant": "proj-a"}}), 409)


async def test_description_changes_from_2_55(cloud):
    h = cloud
    url = f"{V}/flavors/{h.flavor}"
    await ok(await h.http.put(url, headers=h.admin, json={"flavor": {"description": "small"}}), 404)   # 2.1
    changed = await ok(await h.http.put(url, headers={**h.admin, **V255},
                                        json={"flavor": {"description": "a small one"}}), 200)
    assert changed["flavor"]["description"] == "a small one" and changed["flavor"]["ram"] == 1024
    await ok(await h.http.put(url, headers={**h.alice, **V255}, json={"flavor": {"description": "x"}}), 403)
    await ok(await h.http.put(url, headers={**h.admin, **V255}, json={"flavor": {"name": "x"}}), 400)
    await ok(await h.http.put(f"{V}/flavors/nope", headers={**h.admin, **V255},
                              json={"flavor": {"description": None}}), 404)
