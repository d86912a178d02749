"""Small read-only parts of the compute API that clients and Tempest use: a server's
addresses alone (`/ips`, `/ips/{network}`), its posted password (never one here), and the
legacy `/extensions` list."""

from __future__ import annotations

import pytest

from tests.integration.test_server_lifecycle import V, boot_body, ok, sim_cloud, wait_status


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path) as h:
        server = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
        h.server = await wait_status(h, server["server"]["id"], "ACTIVE")
        yield h


async def test_a_servers_addresses_alone_and_by_network(cloud):
    h = cloud
    sid = h.server["id"]
    addresses = (await ok(await h.http.get(f"{V}/servers/{sid}/ips", headers=h.alice), 200))["addresses"]
    [addr] = addresses["net1"]
    assert addr["version"] == 4 and addr["addr"].startswith("10.0.0.") and set(addr) == {"version", "addr"}
    assert addresses == {"net1": [{"version": 4, "addr": h.server["addresses"]["net1"][0]["addr"]}]}
    assert await ok(await h.http.get(f"{V}/servers/{sid}/ips/net1", headers=h.alice), 200) == {"net1": [addr]}
    missing = await ok(await h.http.get(f"{V}/servers/{sid}/ips/other", headers=h.alice), 404)
    assert missing["itemNotFound"]["message"] == "Instance is not a member of specified network"
    await ok(await h.http.get(f"{V}/servers/{sid}/ips", headers=h.bob), 404)   # another project's


async def test_no_password_was_posted_and_clearing_it_does_nothing(cloud):
    h = cloud
    sid = h.server["id"]
    assert await ok(await h.http.get(f"{V}/servers/{sid}/os-server-password", headers=h.alice), 200) == {"password": ""}
    assert (await h.http.delete(f"{V}/servers/{sid}/os-server-password", headers=h.alice)).status == 204
    await ok(await h.http.get(f"{V}/servers/{sid}/os-server-password", headers=h.bob), 404)


async def test_extensions_list_what_this_api_has(cloud):
    h = cloud
    listed = (await ok(await h.http.get(f"{V}/extensions", headers=h.alice), 200))["extensions"]
    aliases = {e["alias"] for e in listed}
    assert {"os-hypervisors", "os-keypairs", "os-server-groups", "OS-EXT-STS"} <= aliases
    assert all(set(e) == {"name", "alias", "description", "links", "namespace", "updated"} for e in listed)
    one = await ok(await h.http.get(f"{V}/extensions/os-keypairs", headers=h.alice), 200)
    assert one["extension"]["name"] == "Keypairs"
    await ok(await h.http.get(f"{V}/extensions/os-nothing", headers=h.alice), 404)
