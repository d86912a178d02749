"""Quota while servers move: an upsize takes its growth under the project's quota locks, as a
boot does, so neither two upsizes nor an upsize and a boot can share the last cores; and a
server being resized or migrated counts once, with the larger of its two flavors, until its
move is confirmed or reverted (in os-quota-sets, limits and os-simple-tenant-usage alike)."""

from __future__ import annotations

import asyncio

from nova_async.api import quotas
from tests.harness import running
from tests.integration import test_server_lifecycle
from tests.integration.api.test_quotas import V257, set_quota
from tests.integration.test_resize import action, boot, flavor
from tests.integration.test_server_lifecycle import ROLES, V, boot_body, ok, seed, settled, wait_status
from tests.waiting import waiting_for_locks

cloud = test_server_lifecycle.cloud   # two simulated hosts; alice of proj-a; m1.small: 1 VCPU, 1024 MB
SIMS = {"simulate_hosts": 2, "sim_vcpus": 4, "sim_memory_mb": 4096, "sim_disk_gb": 50}
EACH_BOOT = {"instances": 1, "cores": 1, "ram": 1024}


async def in_use(h) -> dict[str, int]:
    """What the project uses, as os-quota-sets/detail and limits both say it (they must agree)."""
    detail = (await ok(await h.http.get(V + "/os-quota-sets/proj-a/detail", headers={**h.alice, **V257}),
                       200))["quota_set"]
    shown = {res: detail[res]["in_use"] for res in ("instances", "cores", "ram")}
    absolute = (await ok(await h.http.get(V + "/limits", headers={**h.alice, **V257}), 200))["limits"]["absolute"]
    assert (absolute["totalInstancesUsed"], absolute["totalCoresUsed"], absolute["totalRAMUsed"]) == \
        (shown["instances"], shown["cores"], shown["ram"])
    return shown


async def resize(h, sid: str, flavor_id: str):
    return await h.http.post(f"{V}/servers/{sid}/action", headers=h.alice, json={"resize": {"flavorRef": flavor_id}})


async def test_an_accepted_upsize_keeps_its_growth_taken_until_it_is_done(pool, tmp_path):
    async with running(pool, ROLES, tmp_path, compute=SIMS) as h:
        await seed(h)
        first, second = await boot(h), await boot(h)
        medium = await flavor(h, "m1.medium", 2048, 2, 2)
        await set_quota(h, cores=3)
        seeded = {"image": h.image, "flavor": h.flavor, "net": h.net}
    # Without a conductor an accepted resize waits in resize_prep, as it does while a busy
    # conductor has not reached it yet: its growth must be counted from the moment it is accepted.
    async with running(pool, [r for r in ROLES if r != "conductor"], tmp_path, compute=SIMS) as h:
        vars(h).update(seeded)
        assert (await resize(h, first, medium)).status == 202
        assert await in_use(h) == {"instances": 2, "cores": 3, "ram": 3072}
        refused = await resize(h, second, medium)
        assert refused.status == 403
        assert (await refused.json())["forbidden"]["message"] == (
            "Quota exceeded for cores: Requested 1, but already used 3 of 3 cores")
        assert (await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name="late"))).status == 403
        assert await h.cell1.fetchval("SELECT count(*) FROM migrations") == 1


async def test_an_upsize_waits_for_the_boot_counting_before_it(cloud):
    h = cloud
    sid = await boot(h)
    medium = await flavor(h, "m1.medium", 2048, 2, 2)
    await set_quota(h, cores=3)
    async with h.pool.acquire() as conn, conn.transaction():
        # a boot in flight (of any API process: the lock is the database's) holds the counting lock
        _limit, counting = await quotas.lock_for_boot(conn, h.deps.settings.quota, "proj-a", EACH_BOOT)
        assert counting
        resizing = asyncio.ensure_future(resize(h, sid, medium))
        await waiting_for_locks(h.pool, what="the upsize waiting for the project's counting lock")
        assert not resizing.done()
    assert (await resizing).status == 202
    assert (await settled(h, sid))["status"] == "VERIFY_RESIZE"


async def test_concurrent_upsizes_and_boots_never_pass_the_quota(cloud):
    h = cloud
    servers = [await boot(h), await boot(h)]
    medium = await flavor(h, "m1.medium", 2048, 2, 2)
    await set_quota(h, cores=4)   # two used: room for two more cores, whoever asks first
    answers = await asyncio.gather(*(resize(h, sid, medium) for sid in servers),
                                   *(h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name=f"b{i}"))
                                     for i in range(2)))
    assert sorted(r.status for r in answers) == [202, 202, 403, 403]
    for sid in servers:
        await settled(h, sid)
    assert (await in_use(h))["cores"] <= 4


async def test_a_downsized_server_counts_its_larger_flavor_until_confirmed(cloud):
    h = cloud
    big = await flavor(h, "m1.big", 2048, 2, 1)
    made = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, flavorRef=big)), 202)
    sid = made["server"]["id"]
    await wait_status(h, sid, "ACTIVE")
    await set_quota(h, cores=3)
    await action(h, sid, {"resize": {"flavorRef": h.flavor}}, 202)
    assert (await settled(h, sid))["status"] == "VERIFY_RESIZE"
    # Counted once, with the flavor it may go back to: a revert never lands over the quota.
    assert await in_use(h) == {"instances": 1, "cores": 2, "ram": 2048}
    assert (await h.http.post(V + "/servers", headers=h.alice,
                              json=boot_body(h, name="two", flavorRef=big))).status == 403
    usage = (await ok(await h.http.get(V + "/os-simple-tenant-usage/proj-a?detailed=1", headers=h.alice),
                      200))["tenant_usage"]
    assert [u["instance_id"] for u in usage["server_usages"]] == [sid]
    assert usage["server_usages"][0]["vcpus"] == 1   # the flavor it runs with now, once

    await action(h, sid, {"revertResize": None}, 202)
    assert (await settled(h, sid))["status"] == "ACTIVE"
    assert await in_use(h) == {"instances": 1, "cores": 2, "ram": 2048}
    await action(h, sid, {"resize": {"flavorRef": h.flavor}}, 202)
    assert (await settled(h, sid))["status"] == "VERIFY_RESIZE"
    await action(h, sid, {"confirmResize": None}, 204)
    await wait_status(h, sid, "ACTIVE")
    assert await in_use(h) == {"instances": 1, "cores": 1, "ram": 1024}


async def test_a_migrating_server_counts_once(cloud):
    h = cloud
    sid = await boot(h)
    await action(h, sid, {"migrate": None}, 202, headers=h.admin)
    assert (await settled(h, sid, h.admin))["status"] == "VERIFY_RESIZE"
    # placement holds it twice (the migration keeps the source's claim); the quota counts it once
    assert await h.pool.fetchval("SELECT count(*) FROM consumers") == 2
    assert await in_use(h) == {"instances": 1, "cores": 1, "ram": 1024}
    usage = (await ok(await h.http.get(V + "/os-simple-tenant-usage/proj-a?detailed=1", headers=h.alice),
                      200))["tenant_usage"]
    assert len(usage["server_usages"]) == 1 and usage["total_vcpus_usage"] >= 0
