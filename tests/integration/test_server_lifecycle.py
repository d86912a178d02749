"""A server's whole life through every role in one event loop: the API, conductor,
scheduler, placement, compute (two simulated libvirt hosts), network and image — real
PostgreSQL, real libvirt test driver, real HTTP, nothing mocked."""

from __future__ import annotations

import contextlib

import pytest

from nova_async.compute.domain_xml import domain_name
from tests.harness import running
from tests.waiting import until

V = "/compute/v2.1"
MV = {"OpenStack-API-Version": "compute 2.96"}
ROLES = ["identity", "image", "network", "placement", "api", "conductor", "scheduler", "compute"]


async def ok(resp, status: int):
    assert resp.status == status, f"{resp.method} {resp.url}: {resp.status} {await resp.text()}"
    return await resp.json() if resp.content_type == "application/json" else None


@contextlib.asynccontextmanager
async def sim_cloud(pool, tmp_path, roles=ROLES, **sections):
    """Simulated hosts (two of 4 VCPU, 4096 MB each unless `sections` say otherwise: they are
    the harness's settings sections), a flavor, an image and a network (`seed`)."""
    sections.setdefault("compute", {"simulate_hosts": 2, "sim_vcpus": 4, "sim_memory_mb": 4096, "sim_disk_gb": 50})
    async with running(pool, roles, tmp_path, **sections) as h:
        await seed(h)
        yield h


async def seed(h, ram: int = 1024, **image_properties: str) -> None:
    """What a boot needs: flavor m1.small (h.flavor), a small raw image (h.image, with
    `image_properties`), and a network with a subnet (h.net), all alice's but the flavor."""
    flavor = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "m1.small", "ram": ram, "vcpus": 1, "disk": 1}}), 200)
    h.flavor = flavor["flavor"]["id"]
    image = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "demo", "disk_format": "raw", "container_format": "bare", **image_properties}), 201)
    await ok(await h.http.put(f"/image/v2/images/{image['id']}/file", data=b"\0" * 65536,
                              headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
    h.image = image["id"]
    net = await ok(await h.http.post("/network/v2.0/networks", headers=h.alice,
                                     json={"network": {"name": "net1"}}), 201)
    h.net = net["network"]["id"]
    await ok(await h.http.post("/network/v2.0/subnets", headers=h.alice, json={"subnet": {
        "network_id": h.net, "cidr": "10.0.0.0/24", "ip_version": 4}}), 201)



@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path) as h:
        yield h

def boot_body(h, **extra):
    return {"server": {"name": "vm1", "imageRef": h.image, "flavorRef": h.flavor,
                       "networks": [{"uuid": h.net}], **extra}}


async def show_server(h, server_id: str, headers=None, gone_ok: bool = False) -> dict | None:
    """The server as its owner (alice unless `headers` say) sees it; None if it is gone and
    `gone_ok`, else a 404 fails."""
    resp = await h.http.get(f"{V}/servers/{server_id}", headers={**(headers or h.alice), **MV})
    if resp.status == 404 and gone_ok:
        return None
    return (await ok(resp, 200))["server"]


async def wait_status(h, server_id: str, *wanted: str, headers=None) -> dict:
    """The server once its status is one of `wanted` ("GONE": deleted, returns {})."""
    server = await until(lambda: show_server(h, server_id, headers, gone_ok="GONE" in wanted),
                         lambda s: (s["status"] if s else "GONE") in wanted,
                         what=f"server {server_id} in {' or '.join(wanted)}")
    return server or {}


async def settled(h, server_id: str, headers=None) -> dict:
    """Poll like a client until no task is under way (202 comes before the work is done)."""
    return await until(lambda: show_server(h, server_id, headers),
                       lambda s: s["OS-EXT-STS:task_state"] is None,
                       what=f"server {server_id} with no task under way")


async def test_boot_show_list_delete_leaves_nothing_behind(cloud):
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers={**h.alice, **MV}, json=boot_body(h)), 202)
    server_id = created["server"]["id"]
    assert created["server"]["adminPass"]

    server = await wait_status(h, server_id, "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-STS:power_state"] == 1 and server["OS-EXT-STS:task_state"] is None
    [addr] = server["addresses"]["net1"]
    assert addr["addr"].startswith("10.0.0.") and addr["OS-EXT-IPS-MAC:mac_addr"].startswith("fa:16:3e")
    assert server["flavor"]["original_name"] == "m1.small"

    admin_view = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.admin, **MV}), 200))["server"]
    host = admin_view["OS-EXT-SRV-ATTR:host"]
    hypervisor = h.roles["compute"].hosts[host].hypervisor
    assert await hypervisor.is_running(domain_name(server_id)) is True

    listed = await ok(await h.http.get(V + "/servers/detail", headers={**h.alice, **MV}), 200)
    assert [s["id"] for s in listed["servers"]] == [server_id]
    assert (await ok(await h.http.get(V + "/servers?name=vm", headers=h.alice), 200))["servers"][0]["name"] == "vm1"

    allocations = await ok(await h.http.get(f"/placement/allocations/{server_id}", headers=h.admin), 200)
    [(rp, alloc)] = allocations["allocations"].items()
    assert alloc["resources"] == {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1}

    actions = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions", headers=h.alice), 200)
    [create] = actions["instanceActions"]
    detail = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions/{create['request_id']}",
                                       headers={**h.alice, **MV}), 200)
    events = {e["event"]: e["result"] for e in detail["instanceAction"]["events"]}
    # each role records its own steps, in the order they started
    assert [e["event"] for e in detail["instanceAction"]["events"]] == [
        "conductor_schedule_and_build_instances", "scheduler_select_destinations_and_claim",
        "compute_build_and_run_instance", "compute_allocate_network", "compute_prepare_block_devices",
        "compute_spawn"]
    assert all(e["start_time"] and e["finish_time"] for e in detail["instanceAction"]["events"])
    assert events["conductor_schedule_and_build_instances"] == "Success"
    assert events["scheduler_select_destinations_and_claim"] == "Success"
    assert events["compute_allocate_network"] == events["compute_prepare_block_devices"] == "Success"
    assert events["compute_spawn"] == "Success"
    assert events["compute_build_and_run_instance"] == "Success"

    resp = await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice)
    assert resp.status == 204
    await wait_status(h, server_id, "GONE")
    assert await hypervisor.is_running(domain_name(server_id)) is None
    assert not (h.deps.state_dir / "instances" / server_id).exists()
    usages = await ok(await h.http.get(f"/placement/resource_providers/{rp}/usages", headers=h.admin), 200)
    assert all(v == 0 for v in usages["usages"].values())
    ports = await ok(await h.http.get("/network/v2.0/ports", headers=h.admin), 200)
    assert ports["ports"] == []


async def test_projects_do_not_see_each_others_servers(cloud):
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    server_id = created["server"]["id"]
    await wait_status(h, server_id, "ACTIVE")
    assert (await h.http.get(f"{V}/servers/{server_id}", headers=h.bob)).status == 404
    assert (await h.http.delete(f"{V}/servers/{server_id}", headers=h.bob)).status == 404
    assert (await ok(await h.http.get(V + "/servers/detail", headers=h.bob), 200))["servers"] == []
    everyone = await ok(await h.http.get(V + "/servers/detail?all_tenants=1", headers=h.admin), 200)
    assert [s["id"] for s in everyone["servers"]] == [server_id]


async def test_multiple_create_names_servers_and_spreads_them(cloud):
    h = cloud
    await ok(await h.http.post(V + "/servers", headers=h.alice,
                               json=boot_body(h, name="multi", min_count=2, max_count=2)), 202)
    listed = await ok(await h.http.get(V + "/servers/detail?all_tenants=1", headers={**h.admin, **MV}), 200)
    assert sorted(s["name"] for s in listed["servers"]) == ["multi-1", "multi-2"]
    hosts = set()
    for s in listed["servers"]:
        server = await wait_status(h, s["id"], "ACTIVE", "ERROR", headers=h.admin)
        assert server["status"] == "ACTIVE"
        hosts.add(server["OS-EXT-SRV-ATTR:host"])
    assert hosts == {"sim-1", "sim-2"}


async def test_no_valid_host_says_why(cloud):
    h = cloud
    big = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "huge", "ram": 8192, "vcpus": 1, "disk": 1}}), 200)
    created = await ok(await h.http.post(V + "/servers", headers=h.alice,
                                         json=boot_body(h, flavorRef=big["flavor"]["id"])), 202)
    server = await wait_status(h, created["server"]["id"], "ERROR")
    assert "MEMORY_MB" in server["fault"]["message"]
    [action] = (await ok(await h.http.get(f"{V}/servers/{server['id']}/os-instance-actions",
                                          headers=h.alice), 200))["instanceActions"]
    detail = await ok(await h.http.get(f"{V}/servers/{server['id']}/os-instance-actions/{action['request_id']}",
                                       headers={**h.admin, **MV}), 200)
    results = {e["event"]: e for e in detail["instanceAction"]["events"]}
    assert results["scheduler_select_destinations_and_claim"]["result"] == "Error"
    assert "MEMORY_MB" in results["scheduler_select_destinations_and_claim"]["details"]
    assert (await h.http.delete(f"{V}/servers/{created['server']['id']}", headers=h.alice)).status == 204
    await wait_status(h, created["server"]["id"], "GONE")


@pytest.mark.parametrize("change, fragment", [
    ({"flavorRef": "nope"}, "Flavor nope"),
    ({"imageRef": "9b1f0e0e-0000-4000-8000-000000000000"}, "Image"),
    ({"networks": [{"uuid": "9b1f0e0e-0000-4000-8000-000000000000"}]}, "9b1f0e0e"),
    # looked up at once, told in order: flavor, image, networks
    ({"flavorRef": "nope", "imageRef": "9b1f0e0e-0000-4000-8000-000000000000",
      "networks": [{"uuid": "9b1f0e0e-0000-4000-8000-000000000000"}]}, "Flavor nope"),
    ({"imageRef": "9b1f0e0e-0000-4000-8000-000000000000",
      "networks": [{"uuid": "9b1f0e0e-0000-4000-8000-000000000000"}]}, "Image"),
    ({"min_count": 3, "max_count": 2}, "min_count"),
    ({"min_count": -1}, "min_count"),
    ({"name": "x" * 256}, "name"),
    ({"name": "   "}, "name"),
    ({"metadata": {"k": "v" * 256}}, "metadata"),
    ({"metadata": "not-a-dict"}, "metadata"),
    ({"user_data": "***not base64***"}, "user_data"),
    ({"networks": "everything"}, "networks"),
    ({"unknown_field": 1}, "unknown_field"),
])
async def test_bad_boot_requests_are_400_and_write_nothing(cloud, change, fragment):
    h = cloud
    resp = await h.http.post(V + "/servers", headers={**h.alice, **MV}, json=boot_body(h, **change))
    assert resp.status == 400, await resp.text()
    assert fragment in (await resp.json())["badRequest"]["message"]
    assert await h.cell1.fetchval("SELECT count(*) FROM instances") == 0


async def test_malformed_and_missing_bodies_are_400(cloud):
    h = cloud
    assert (await h.http.post(V + "/servers", headers=h.alice, data=b"{nope")).status == 400
    assert (await h.http.post(V + "/servers", headers=h.alice, json={"server": {}})).status == 400
    assert (await h.http.post(V + "/servers", headers=h.alice, json=[])).status == 400
    assert (await h.http.get(V + "/servers/not-a-uuid", headers=h.alice)).status == 404
    assert (await h.http.delete(V + "/servers/not-a-uuid", headers=h.alice)).status == 404
    assert (await h.http.get(V + "/servers?name=(", headers=h.alice)).status == 400
    assert await h.cell1.fetchval("SELECT count(*) FROM instances") == 0


async def test_admins_see_compute_services_and_hypervisors(cloud):
    h = cloud
    services = await ok(await h.http.get(V + "/os-services", headers={**h.admin, "OpenStack-API-Version": "compute 2.69"}), 200)
    assert sorted((s["host"], s["binary"], s["state"], s["status"]) for s in services["services"]) == [
        ("sim-1", "nova-compute", "up", "enabled"), ("sim-2", "nova-compute", "up", "enabled")]
    hypervisors = await ok(await h.http.get(V + "/os-hypervisors/detail",
                                            headers={**h.admin, "OpenStack-API-Version": "compute 2.88"}), 200)
    assert sorted(x["hypervisor_hostname"] for x in hypervisors["hypervisors"]) == ["sim-1", "sim-2"]
    assert all(x["state"] == "up" and x["service"]["host"] == x["hypervisor_hostname"]
               for x in hypervisors["hypervisors"])
    assert (await h.http.get(V + "/os-services", headers=h.alice)).status == 403
    assert (await h.http.get(V + "/os-hypervisors", headers=h.alice)).status == 403
