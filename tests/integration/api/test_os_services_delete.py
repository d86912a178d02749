"""Deleting a compute service (`openstack compute service delete`): refused while it is up,
hosts servers or has a move unfinished; otherwise its record, nodes, resource providers and
cell mapping go, and `service.delete` is sent."""

from __future__ import annotations

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud  # two simulated hosts, sim-1 and sim-2

NEW, OLD = ({"OpenStack-API-Version": f"compute {v}"} for v in ("2.53", "2.1"))


async def services(h, headers=NEW) -> dict[str, dict]:
    body = await ok(await h.http.get(V + "/os-services", headers={**h.admin, **headers}), 200)
    return {s["host"]: s for s in body["services"]}


async def force_down(h, service_id: str) -> None:
    await ok(await h.http.put(f"{V}/os-services/{service_id}", headers={**h.admin, **NEW},
                              json={"forced_down": True}), 200)


async def providers(h) -> set[str]:
    body = await ok(await h.http.get("/placement/resource_providers", headers=h.admin), 200)
    return {rp["name"] for rp in body["resource_providers"]}


async def test_a_service_that_runs_nothing_is_deleted_with_its_nodes_and_providers(cloud):
    h = cloud
    sim2 = (await services(h))["sim-2"]
    resp = await h.http.delete(f"{V}/os-services/{sim2['id']}", headers={**h.admin, **NEW})
    assert resp.status == 409 and "is up" in await resp.text()
    await force_down(h, sim2["id"])
    with h.bus.listen() as heard:
        resp = await h.http.delete(f"{V}/os-services/{sim2['id']}", headers={**h.admin, **NEW})
        assert resp.status == 204, await resp.text()
        note = await heard.get()
    assert (note.event_type, note.publisher_id) == ("service.delete", "nova-compute:sim-2")
    assert note.data["uuid"] == sim2["id"]
    assert set(await services(h)) == {"sim-1"}
    hypervisors = await ok(await h.http.get(V + "/os-hypervisors", headers=h.admin), 200)
    assert [hv["hypervisor_hostname"] for hv in hypervisors["hypervisors"]] == ["sim-1"]
    assert "sim-2" not in await providers(h)
    resp = await h.http.delete(f"{V}/os-services/{sim2['id']}", headers={**h.admin, **NEW})
    assert resp.status == 404
    # New servers still build, on the host that is left.
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    assert (await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR"))["status"] == "ACTIVE"


async def test_a_service_hosting_a_server_is_not_deleted(cloud):
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    server = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR")
    detail = await ok(await h.http.get(f"{V}/servers/{server['id']}", headers=h.admin), 200)
    host = detail["server"]["OS-EXT-SRV-ATTR:host"]
    target = (await services(h))[host]
    await force_down(h, target["id"])
    resp = await h.http.delete(f"{V}/os-services/{target['id']}", headers={**h.admin, **NEW})
    assert resp.status == 409
    assert "hosting instances" in (await resp.json())["conflictingRequest"]["message"]
    assert host in await services(h) and host in await providers(h)


async def test_before_2_53_a_service_is_named_by_its_integer_id(cloud):
    h = cloud
    sim2 = (await services(h, OLD))["sim-2"]
    assert isinstance(sim2["id"], int)
    await force_down(h, (await services(h))["sim-2"]["id"])
    resp = await h.http.delete(f"{V}/os-services/{sim2['id']}", headers={**h.admin, **OLD})
    assert resp.status == 204, await resp.text()
    assert set(await services(h)) == {"sim-1"}


async def test_bad_ids_and_members_are_refused(cloud):
    h = cloud
    sim1 = (await services(h))["sim-1"]
    for headers, target, status in [(NEW, "not-a-uuid", 400), (OLD, "abc", 400), (OLD, "12345", 404),
                                    (NEW, "00000000-0000-0000-0000-000000000000", 404)]:
        resp = await h.http.delete(f"{V}/os-services/{target}", headers={**h.admin, **headers})
        assert resp.status == status, (target, await resp.text())
    resp = await h.http.delete(f"{V}/os-services/{sim1['id']}", headers={**h.alice, **NEW})
    assert resp.status == 403
    assert set(await services(h)) == {"sim-1", "sim-2"}
