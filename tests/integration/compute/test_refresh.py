"""A compute host keeps placement's view of it true: an inventory edited behind its back
is put back at the next refresh."""

import asyncio

from tests.harness import running
from tests.integration.test_server_lifecycle import ROLES, ok


async def test_inventory_drift_is_corrected(pool, tmp_path):
    async with running(pool, ROLES, tmp_path, compute={"simulate_hosts": 1, "sim_vcpus": 8,
                                                       "resource_refresh_interval": 0.05}) as h:
        [rp] = (await ok(await h.http.get("/placement/resource_providers", headers=h.admin), 200))[
            "resource_providers"]
        url = f"/placement/resource_providers/{rp['uuid']}/inventories"
        current = await ok(await h.http.get(url, headers=h.admin), 200)
        edited = {"resource_provider_generation": current["resource_provider_generation"],
                  "inventories": {**current["inventories"], "VCPU": {**current["inventories"]["VCPU"], "total": 2}}}
        await ok(await h.http.put(url, json=edited, headers=h.admin), 200)
        async with asyncio.timeout(10):
            while True:
                inv = await ok(await h.http.get(url, headers=h.admin), 200)
                if inv["inventories"]["VCPU"]["total"] == 8:
                    break
                await asyncio.sleep(0.05)
