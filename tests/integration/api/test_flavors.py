"""Flavors through the compute API, as `openstack flavor …` drives them."""

import pytest

from tests.harness import running

V = "/compute/v2.1"
MV = {"OpenStack-API-Version": "compute 2.61"}


@pytest.fixture
async def api(pool, tmp_path):
    async with running(pool, ["api"], tmp_path) as h:
        yield h


async def test_create_list_show_delete(api):
    h = api
    body = {"flavor": {"id": None, "name": "m1.tiny", "ram": 512, "vcpus": 1, "disk": 1, "swap": 0,
                       "OS-FLV-EXT-DATA:ephemeral": 0, "os-flavor-access:is_public": True}}
    resp = await h.http.post(V + "/flavors", json=body, headers={**h.admin, **MV})
    assert resp.status == 200, await resp.text()
    flavor = (await resp.json())["flavor"]
    assert flavor["swap"] == "" and flavor["extra_specs"] == {} and flavor["ram"] == 512
    assert resp.headers["OpenStack-API-Version"] == "compute 2.61"

    assert (await h.http.get(V + "/flavors/m1.tiny", headers=h.admin)).status == 404
    listed = await (await h.http.get(V + "/flavors/detail?is_public=None", headers={**h.admin, **MV})).json()
    assert [f["name"] for f in listed["flavors"]] == ["m1.tiny"]
    shown = await h.http.get(V + f"/flavors/{flavor['id']}", headers=h.alice)
    assert (await shown.json())["flavor"]["id"] == flavor["id"]

    dup = await h.http.post(V + "/flavors", json=body, headers=h.admin)
    assert dup.status == 409 and "conflictingRequest" in await dup.json()

    specs = await h.http.post(V + f"/flavors/{flavor['id']}/os-extra_specs",
                              json={"extra_specs": {"hw:cpu_policy": "shared"}}, headers=h.admin)
    assert (await specs.json())["extra_specs"] == {"hw:cpu_policy": "shared"}
    listed = await (await h.http.get(V + f"/flavors/{flavor['id']}/os-extra_specs", headers=h.admin)).json()
    assert listed == {"extra_specs": {"hw:cpu_policy": "shared"}}

    assert (await h.http.delete(V + f"/flavors/{flavor['id']}", headers=h.alice)).status == 403
    assert (await h.http.delete(V + f"/flavors/{flavor['id']}", headers=h.admin)).status == 202
    assert (await h.http.get(V + f"/flavors/{flavor['id']}", headers=h.admin)).status == 404


@pytest.mark.parametrize("flavor, fragment", [
    ({"name": "x", "ram": -1, "vcpus": 1, "disk": 1}, "ram"),
    ({"name": "x", "ram": "lots", "vcpus": 1, "disk": 1}, "ram"),
    ({"name": "", "ram": 1, "vcpus": 1, "disk": 1}, "name"),
    ({"name": "x" * 300, "ram": 1, "vcpus": 1, "disk": 1}, "name"),
    ({"name": "x", "vcpus": 1, "disk": 1}, "ram"),
    ({"name": "x", "ram": 1, "vcpus": 0, "disk": 1}, "vcpus"),
    ({"name": "x", "ram": 1, "vcpus": 1, "disk": 1, "bogus": 1}, "bogus"),
])
async def test_bad_flavors_are_400_naming_the_field(api, flavor, fragment):
    resp = await api.http.post(V + "/flavors", json={"flavor": flavor}, headers=api.admin)
    assert resp.status == 400
    assert fragment in (await resp.json())["badRequest"]["message"]


async def test_malformed_json_and_microversions(api):
    h = api
    resp = await h.http.post(V + "/flavors", data=b"{", headers=h.admin)
    assert resp.status == 400 and "badRequest" in await resp.json()
    resp = await h.http.get(V + "/flavors", headers={**h.admin, "OpenStack-API-Version": "compute 2.200"})
    assert resp.status == 406
    assert "maximum is 2.104" in (await resp.json())["computeFault"]["message"]
    resp = await h.http.get(V + "/flavors", headers={**h.admin, "X-OpenStack-Nova-API-Version": "latest"})
    assert resp.headers["OpenStack-API-Version"] == "compute 2.104"
    disc = await h.http.get(V)
    assert (await disc.json())["version"]["version"] == "2.104"
    assert (await h.http.get(V + "/nowhere", headers=h.admin)).status == 404
