"""os-networks and os-tenant-networks (until 2.35): the networks the network service shows
the caller, as Nova shows Neutron's there; another project's network is not found."""

from __future__ import annotations

import pytest

from tests.integration.test_server_lifecycle import V, ok, sim_cloud


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path) as h:   # alice's network net1 (h.net)
        yield h


async def test_networks_as_the_caller_sees_them(cloud):
    h = cloud
    mine = (await ok(await h.http.get(V + "/os-networks", headers=h.alice), 200))["networks"]
    assert [(n["id"], n["label"], n["cidr"]) for n in mine] == [(h.net, "net1", None)]
    assert "project_id" not in mine[0]
    as_admin = (await ok(await h.http.get(f"{V}/os-networks/{h.net}", headers=h.admin), 200))["network"]
    assert as_admin["project_id"] == "proj-a" and as_admin["mtu"] == 1500 and as_admin["bridge"] is None
    tenant = (await ok(await h.http.get(V + "/os-tenant-networks", headers=h.alice), 200))["networks"]
    assert tenant == [{"id": h.net, "label": "net1", "cidr": None}]
    assert (await ok(await h.http.get(f"{V}/os-tenant-networks/{h.net}", headers=h.alice), 200))["network"] == tenant[0]
    assert (await ok(await h.http.get(V + "/os-tenant-networks", headers=h.bob), 200))["networks"] == []
    await ok(await h.http.get(f"{V}/os-tenant-networks/{h.net}", headers=h.bob), 404)
    await ok(await h.http.get(f"{V}/os-networks/not-a-uuid", headers=h.alice), 404)
    await ok(await h.http.get(V + "/os-networks", headers={**h.alice, "OpenStack-API-Version": "compute 2.36"}), 404)
