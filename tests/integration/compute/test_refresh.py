"""A compute host keeps placement's view of it true: an inventory edited behind its back
is put back at the next refresh."""

from tests.harness import running
from tests.integration.test_server_lifecycle import ROLES, ok
from tests.waiting import until


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

        async def inventories() -> dict:
            return await ok(await h.http.get(url, headers=h.admin), 200)

        await until(inventories, lambda inv: inv["inventories"]["VCPU"]["total"] == 8,
                    what="the VCPU total back to the host's 8")
