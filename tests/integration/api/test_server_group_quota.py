"""The server group quota under concurrency: creations of one project count one at a time
under a lock of their own, so they never pass the limit together, yet neither wait for the
project's boots nor hold them up; a quota update still waits for a creation in flight."""

from __future__ import annotations

import asyncio

from nova_async.api import quotas
from tests.integration import test_server_lifecycle
from tests.integration.api.test_quotas import V257, set_quota
from tests.integration.api.test_server_groups import MV
from tests.integration.test_server_lifecycle import V, boot_body, ok
from tests.waiting import TIMEOUT, waiting_for_locks

cloud = test_server_lifecycle.cloud   # alice is a member of proj-a
EACH_BOOT = {"instances": 1, "cores": 1, "ram": 1024}


def create(h, name: str):
    return h.http.post(V + "/os-server-groups", headers={**h.alice, **MV},
                       json={"server_group": {"name": name, "policy": "anti-affinity"}})


async def test_concurrent_creations_never_pass_the_server_group_quota(cloud):
    h = cloud
    await set_quota(h, server_groups=2)
    answers = await asyncio.gather(*(create(h, f"g{i}") for i in range(8)))
    assert sorted(r.status for r in answers) == [200] * 2 + [403] * 6
    listed = (await ok(await h.http.get(V + "/os-server-groups", headers=h.alice), 200))["server_groups"]
    assert len(listed) == 2


async def test_a_creation_waits_for_the_one_counting_before_it(cloud):
    h = cloud
    await set_quota(h, server_groups=5)
    async with h.pool.acquire() as conn, conn.transaction():
        limit, counting = await quotas.lock_to_count(conn, h.deps.settings.quota, "proj-a", "server_groups")
        assert counting and limit["server_groups"] == 5
        creating = asyncio.ensure_future(create(h, "second"))
        await waiting_for_locks(h.pool, what="the creation waiting for the server group counting lock")
        assert not creating.done()
    assert (await creating).status == 200


async def test_a_creation_neither_waits_for_boots_nor_holds_them_up(cloud):
    h = cloud
    await set_quota(h, cores=20, server_groups=5)   # boots count (cores limited), creations too
    async with h.pool.acquire() as conn, conn.transaction():
        # a boot in flight, in any API process: the quota lock shared and the counting lock held
        _limit, counting = await quotas.lock_for_boot(conn, h.deps.settings.quota, "proj-a", EACH_BOOT)
        assert counting
        async with asyncio.timeout(TIMEOUT):   # a safety net: before, this waited for the boot
            assert (await create(h, "beside-a-boot")).status == 200
    async with h.pool.acquire() as conn, conn.transaction():
        # a creation in flight, holding its own counting lock
        _limit, counting = await quotas.lock_to_count(conn, h.deps.settings.quota, "proj-a", "server_groups")
        assert counting
        async with asyncio.timeout(TIMEOUT):
            booted = await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name="beside-a-group"))
            assert booted.status == 202


async def test_a_quota_update_waits_for_a_creation_in_flight(cloud):
    h = cloud
    await set_quota(h, server_groups=5)
    async with h.pool.acquire() as conn, conn.transaction():
        await quotas.lock_to_count(conn, h.deps.settings.quota, "proj-a", "server_groups")
        update = asyncio.ensure_future(set_quota(h, server_groups=1))
        await waiting_for_locks(h.pool, what="the quota update waiting for the creation's shared lock")
        assert not update.done()
    await update
    assert (await create(h, "one")).status == 200
    assert (await create(h, "two")).status == 403


async def test_the_groups_in_use_are_shown_and_a_lower_limit_needs_force(cloud):
    h = cloud
    for name in ("one", "two"):
        assert (await create(h, name)).status == 200
    detail = (await ok(await h.http.get(V + "/os-quota-sets/proj-a/detail", headers={**h.alice, **V257}),
                       200))["quota_set"]
    assert detail["server_groups"] == {"limit": 10, "in_use": 2, "reserved": 0}
    absolute = (await ok(await h.http.get(V + "/limits", headers={**h.alice, **V257}), 200))["limits"]["absolute"]
    assert absolute["totalServerGroupsUsed"] == 2
    resp = await h.http.put(V + "/os-quota-sets/proj-a", headers={**h.admin, **V257},
                            json={"quota_set": {"server_groups": 1}})
    assert resp.status == 400 and "already used and reserved 2" in (await resp.json())["badRequest"]["message"]
