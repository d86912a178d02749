"""Quotas as a user meets them: os-quota-sets and limits, boots refused with the reason,
multi-create trimmed to what fits, and no race past a limit."""

from __future__ import annotations

import asyncio

import pytest

from nova_async.api import quotas
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status
from tests.waiting import waiting_for_locks

cloud = test_server_lifecycle.cloud   # alice is a member of proj-a; flavor m1.small: 1 VCPU, 1024 MB
Q = V + "/os-quota-sets/proj-a"
V257, V235 = {"OpenStack-API-Version": "compute 2.57"}, {"OpenStack-API-Version": "compute 2.35"}


async def set_quota(h, **limits) -> dict:
    return await ok(await h.http.put(Q, headers={**h.admin, **V257}, json={"quota_set": limits}), 200)


async def test_members_read_their_quotas_and_admins_change_them(cloud):
    h = cloud
    shown = (await ok(await h.http.get(Q, headers={**h.alice, **V257}), 200))["quota_set"]
    assert shown == {"id": "proj-a", "instances": 10, "cores": 20, "ram": 51200, "metadata_items": 128,
                     "key_pairs": 100, "server_groups": 10, "server_group_members": 10}
    old = (await ok(await h.http.get(Q, headers={**h.alice, **V235}), 200))["quota_set"]
    assert old["injected_files"] == 5 and old["floating_ips"] == -1
    assert (await h.http.get(V + "/os-quota-sets/proj-b", headers=h.alice)).status == 403
    assert (await h.http.put(Q, headers=h.alice, json={"quota_set": {"instances": 50}})).status == 403

    updated = (await set_quota(h, instances=3, cores=-1))["quota_set"]
    assert (updated["instances"], updated["cores"], "id" in updated) == (3, -1, False)
    defaults = (await ok(await h.http.get(Q + "/defaults", headers=h.alice), 200))["quota_set"]
    assert defaults["instances"] == 10
    assert (await h.http.delete(Q, headers={**h.admin, **V257})).status == 202
    assert (await ok(await h.http.get(Q, headers=h.alice), 200))["quota_set"]["instances"] == 10


async def test_a_boot_over_quota_is_refused_with_the_reason_and_nothing_is_made(cloud):
    h = cloud
    await set_quota(h, cores=2)
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    await wait_status(h, created["server"]["id"], "ACTIVE")
    resp = await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, min_count=2))
    assert resp.status == 403
    assert (await resp.json())["forbidden"]["message"] == (
        "Quota exceeded for cores: Requested 2, but already used 1 of 2 cores")
    servers = (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"]
    assert len(servers) == 1

    detail = (await ok(await h.http.get(Q + "/detail", headers={**h.alice, **V257}), 200))["quota_set"]
    assert detail["cores"] == {"limit": 2, "in_use": 1, "reserved": 0}
    assert detail["ram"] == {"limit": 51200, "in_use": 1024, "reserved": 0}
    limits = (await ok(await h.http.get(V + "/limits", headers={**h.alice, **V257}), 200))["limits"]
    assert limits["absolute"]["maxTotalCores"] == 2 and limits["absolute"]["totalCoresUsed"] == 1
    assert "maxPersonality" not in limits["absolute"]

    # Lowering a limit below what is used needs force.
    resp = await h.http.put(Q, headers={**h.admin, **V257}, json={"quota_set": {"instances": 0}})
    assert resp.status == 400 and "already used" in (await resp.json())["badRequest"]["message"]
    await ok(await h.http.put(Q, headers={**h.admin, **V257},
                              json={"quota_set": {"instances": 0, "force": True}}), 200)


async def test_multi_create_takes_as_many_as_fit_down_to_min_count(cloud):
    h = cloud
    await set_quota(h, instances=3)
    body = boot_body(h, name="many", min_count=2, max_count=5, return_reservation_id=True)
    await ok(await h.http.post(V + "/servers", headers=h.alice, json=body), 202)
    names = sorted(s["name"] for s in (await ok(await h.http.get(V + "/servers", headers=h.alice),
                                                200))["servers"])
    assert names == ["many-1", "many-2", "many-3"]


async def test_metadata_items_are_limited(cloud):
    h = cloud
    await set_quota(h, metadata_items=2)
    resp = await h.http.post(V + "/servers", headers=h.alice,
                             json=boot_body(h, metadata={"a": "1", "b": "2", "c": "3"}))
    assert resp.status == 403 and "metadata items" in await resp.text()


@pytest.mark.parametrize("body", [
    {"quota_set": {"instances": -2}},
    {"quota_set": {"instances": "ten"}},
    {"quota_set": {"bananas": 3}},
    {"quota_set": {"injected_files": 3}},     # gone at 2.57
    {"instances": 3},
])
async def test_bad_quota_updates_are_400(cloud, body):
    h = cloud
    resp = await h.http.put(Q, headers={**h.admin, **V257}, json=body)
    assert resp.status == 400, await resp.text()


async def test_fifty_concurrent_boots_never_pass_a_quota_of_ten(cloud):
    h = cloud
    await set_quota(h, cores=-1, ram=-1)
    responses = await asyncio.gather(*(h.http.post(V + "/servers", headers=h.alice,
                                                   json=boot_body(h, name=f"r{i}")) for i in range(50)))
    statuses = sorted(r.status for r in responses)
    assert statuses == [202] * 10 + [403] * 40
    servers = (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"]
    assert len(servers) == 10


async def test_unlimited_boots_still_take_the_project_lock(cloud):
    """With nothing limited a boot counts nothing, but it still takes the project's quota
    lock (shared): a quota update (which counts under that lock, exclusively) never misses a
    boot writing beside it."""
    h = cloud
    await set_quota(h, instances=-1, cores=-1, ram=-1)
    async with h.pool.acquire() as conn, conn.transaction():
        await conn.execute(quotas.Q.lock_project, "proj-a")   # as a quota update holds it
        boot = asyncio.ensure_future(h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name="u")))
        await waiting_for_locks(h.pool, what="the boot waiting for the project's quota lock")
        assert not boot.done()   # it waits for the lock …
    assert (await boot).status == 202   # … and goes on once the lock is free


async def test_unlimited_boots_do_not_wait_for_each_other_but_a_quota_update_waits_for_them(cloud):
    h = cloud
    await set_quota(h, instances=-1, cores=-1, ram=-1)
    each = {"instances": 1, "cores": 1, "ram": 1024}
    async with h.pool.acquire() as conn, conn.transaction():
        # an unlimited boot in flight: it holds the quota lock shared, and no counting lock
        limit, counting = await quotas.lock_for_boot(conn, h.deps.settings.quota, "proj-a", each)
        assert not counting and limit["instances"] == -1
        await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name="side")), 202)
        update = asyncio.ensure_future(set_quota(h, instances=5))
        await waiting_for_locks(h.pool, what="the quota update waiting for the boot's lock")
        assert not update.done()   # the quota update waits for the boot in flight …
    await update                   # … and is made once it is gone
    async with h.pool.acquire() as conn, conn.transaction():
        limit, counting = await quotas.lock_for_boot(conn, h.deps.settings.quota, "proj-a", each)
        assert counting and limit["instances"] == 5


async def test_boots_that_count_wait_for_each_other(cloud):
    h = cloud
    await set_quota(h, instances=-1, cores=20, ram=-1)   # cores limited: every boot counts
    each = {"instances": 1, "cores": 1, "ram": 1024}
    async with h.pool.acquire() as conn, conn.transaction():
        limit, counting = await quotas.lock_for_boot(conn, h.deps.settings.quota, "proj-a", each)
        assert counting and limit["cores"] == 20
        boot = asyncio.ensure_future(h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name="c")))
        await waiting_for_locks(h.pool, what="the boot waiting for the counting lock")
        assert not boot.done()   # a boot that counts waits for the one counting before it
    assert (await boot).status == 202


async def test_a_limit_set_after_unlimited_boots_holds_for_the_next_ones(cloud):
    """Boots after unlimited ones (which counted nothing) count again as soon as a limit is
    set: concurrent ones stop exactly at it."""
    h = cloud
    await set_quota(h, instances=-1, cores=-1, ram=-1)
    await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name="free")), 202)
    await set_quota(h, instances=3)
    responses = await asyncio.gather(*(h.http.post(V + "/servers", headers=h.alice,
                                                   json=boot_body(h, name=f"l{i}")) for i in range(6)))
    assert sorted(r.status for r in responses) == [202] * 2 + [403] * 4
    servers = (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"]
    assert len(servers) == 3
