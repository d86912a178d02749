"""The scheduler looks at a random sample of hosts (scheduler.max_placement_results), yet a
request that only some host outside the sample can take still lands there."""

from __future__ import annotations

from tests.harness import running
from tests.integration.test_server_lifecycle import MV, ROLES, V, ok, wait_status


async def test_a_sample_that_misses_the_only_good_host_does_not_refuse(pool, tmp_path):
    async with running(pool, ROLES, tmp_path, compute={"simulate_hosts": 4},
                       scheduler={"max_placement_results": 1}) as h:
        flavor = (await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": "f", "ram": 64, "vcpus": 1, "disk": 1}}), 200))["flavor"]["id"]
        image = await ok(await h.http.post("/image/v2/images", headers=h.admin, json={
            "name": "i", "disk_format": "raw", "container_format": "bare"}), 201)
        await ok(await h.http.put(f"/image/v2/images/{image['id']}/file", data=b"\0" * 1024,
                                  headers={**h.admin, "Content-Type": "application/octet-stream"}), 204)
        agg = (await ok(await h.http.post(V + "/os-aggregates", headers=h.admin, json={
            "aggregate": {"name": "east", "availability_zone": "east"}}), 200))["aggregate"]["id"]
        await ok(await h.http.post(f"{V}/os-aggregates/{agg}/action", headers=h.admin,
                                   json={"add_host": {"host": "sim-3"}}), 200)
        for i in range(6):
            created = await ok(await h.http.post(V + "/servers", headers=h.admin, json={"server": {
                "name": f"s{i}", "imageRef": image["id"], "flavorRef": flavor, "networks": "none",
                "availability_zone": "east"}}), 202)
            server = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR", headers=h.admin)
            assert server["status"] == "ACTIVE", server.get("fault")
            shown = await ok(await h.http.get(f"{V}/servers/{server['id']}", headers={**h.admin, **MV}), 200)
            assert shown["server"]["OS-EXT-SRV-ATTR:host"] == "sim-3"
