"""Nothing lost: a boot request accepted (202) just before the service went down — its
cast to the conductor lost with the in-memory bus — is resumed by the next start, and a
delete that arrived meanwhile is honoured without leaking a claim."""

from __future__ import annotations

import pytest

from tests.harness import running
from tests.integration.test_server_lifecycle import ROLES, V, ok, wait_status

WITHOUT_CONDUCTOR = [r for r in ROLES if r != "conductor"]
SIM = {"simulate_hosts": 1}


async def prepare(h) -> dict:
    flavor = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "m1", "ram": 256, "vcpus": 1, "disk": 1}}), 200)
    image = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "img", "disk_format": "raw", "container_format": "bare"}), 201)
    await ok(await h.http.put(f"/image/v2/images/{image['id']}/file", data=b"\0" * 4096,
                              headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
    net = await ok(await h.http.post("/network/v2.0/networks", headers=h.alice,
                                     json={"network": {"name": "n"}}), 201)
    await ok(await h.http.post("/network/v2.0/subnets", headers=h.alice, json={"subnet": {
        "network_id": net["network"]["id"], "cidr": "10.9.0.0/24", "ip_version": 4}}), 201)
    return {"name": "vm", "imageRef": image["id"], "flavorRef": flavor["flavor"]["id"],
            "networks": [{"uuid": net["network"]["id"]}]}


@pytest.mark.parametrize("delete_before_restart", [False, True])
async def test_accepted_boot_survives_a_restart(pool, tmp_path, delete_before_restart):
    async with running(pool, WITHOUT_CONDUCTOR, tmp_path, compute=SIM) as h:
        server = await prepare(h)
        created = await ok(await h.http.post(V + "/servers", headers=h.alice, json={"server": server}), 202)
        server_id = created["server"]["id"]
        if delete_before_restart:
            assert (await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice)).status == 204
        body = await ok(await h.http.get(f"{V}/servers/{server_id}", headers=h.alice), 200)
        assert body["server"]["status"] == "BUILD"

    async with running(pool, ROLES, tmp_path, compute=SIM) as h:
        if delete_before_restart:
            await wait_status(h, server_id, "GONE")
            assert await h.pool.fetchval("SELECT count(*) FROM allocations") == 0
            assert await h.pool.fetchval("SELECT count(*) FROM ports") == 0
        else:
            server = await wait_status(h, server_id, "ACTIVE", "ERROR")
            assert server["status"] == "ACTIVE", server.get("fault")
