"""os-simple-tenant-usage: each project's servers counted for the hours they ran within the
period, times their flavor's sizes; deleted servers for the time they were there."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tests.integration.test_server_lifecycle import V, boot_body, ok, sim_cloud, wait_status
from tests.waiting import until


def at(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path) as h:
        servers = []
        for name in ("kept", "gone"):
            made = await ok(await h.http.post(V + "/servers", headers=h.alice,
                                              json=boot_body(h, name=name)), 202)
            servers.append(made["server"]["id"])
        for sid in servers:
            await wait_status(h, sid, "ACTIVE")
        # As if both had run since an hour ago (and "gone" until half an hour ago).
        cell = h.cells.default
        await cell.pool.execute("UPDATE instances SET launched_at = now() - interval '1 hour'")
        assert (await h.http.delete(f"{V}/servers/{servers[1]}", headers=h.alice)).status == 204
        async def status() -> int:
            async with h.http.get(f"{V}/servers/{servers[1]}", headers=h.alice) as resp:
                return resp.status
        await until(status, lambda code: code == 404, what="the server deleted")
        yield h, servers


async def test_usage_counts_hours_times_sizes(cloud):
    h, (kept, gone) = cloud
    cell = h.cells.default
    await cell.pool.execute("UPDATE instances SET terminated_at = now() - interval '30 minutes', deleted_at = now()"
                            " WHERE uuid = $1", gone)
    start, end = datetime.now(timezone.utc) - timedelta(hours=2), datetime.now(timezone.utc)
    query = f"start={at(start)}&end={at(end)}"
    mine = (await ok(await h.http.get(f"{V}/os-simple-tenant-usage/proj-a?{query}", headers=h.alice), 200))
    usage = mine["tenant_usage"]
    servers = {s["instance_id"]: s for s in usage["server_usages"]}
    assert servers[kept]["hours"] == pytest.approx(1, abs=0.05) and servers[kept]["state"] == "active"
    assert servers[gone]["hours"] == pytest.approx(0.5, abs=0.05) and servers[gone]["state"] == "terminated"
    assert usage["total_hours"] == pytest.approx(1.5, abs=0.1)
    assert usage["total_memory_mb_usage"] == pytest.approx(1.5 * 1024, rel=0.05)
    assert usage["total_vcpus_usage"] == pytest.approx(1.5, abs=0.1)
    assert servers[kept]["flavor"] == "m1.small" and servers[kept]["local_gb"] == 1

    # The admin's list of every project; summed unless detailed.
    every = (await ok(await h.http.get(f"{V}/os-simple-tenant-usage?{query}", headers=h.admin), 200))["tenant_usages"]
    assert [u["tenant_id"] for u in every] == ["proj-a"] and "server_usages" not in every[0]
    detailed = (await ok(await h.http.get(f"{V}/os-simple-tenant-usage?{query}&detailed=1", headers=h.admin),
                         200))["tenant_usages"]
    assert len(detailed[0]["server_usages"]) == 2

    # A period before they ran: nothing; paging over servers from 2.40.
    early = f"start={at(start - timedelta(days=1))}&end={at(start)}"
    assert (await ok(await h.http.get(f"{V}/os-simple-tenant-usage/proj-a?{early}", headers=h.alice), 200)) == {
        "tenant_usage": {}}
    paged = (await ok(await h.http.get(f"{V}/os-simple-tenant-usage?{query}&detailed=1&limit=1",
                                       headers={**h.admin, "OpenStack-API-Version": "compute 2.40"}), 200))
    assert len(paged["tenant_usages"][0]["server_usages"]) == 1


async def test_refusals(cloud):
    h, _ = cloud
    await ok(await h.http.get(f"{V}/os-simple-tenant-usage", headers=h.alice), 403)
    await ok(await h.http.get(f"{V}/os-simple-tenant-usage/proj-a", headers=h.bob), 403)
    await ok(await h.http.get(f"{V}/os-simple-tenant-usage/proj-a?start=yesterday", headers=h.alice), 400)
    await ok(await h.http.get(f"{V}/os-simple-tenant-usage/proj-a?start=2030-01-01T00:00:00&end=2029-01-01T00:00:00",
                              headers=h.alice), 400)
