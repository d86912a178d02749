"""What a boot writes, as a user meets it: the flavor a server shows is the one it was booted
with, whole (2.47+) or as a link (before); and a boot that fails after its instances reached
the cell leaves no server behind: none listed, none counted, no row in any database."""

from __future__ import annotations

import asyncio

import pytest

from nova_async.api import server_create
from nova_async.api.state import STATE
from nova_async.common.context import RequestContext
from nova_async.db.pool import PoolClosing
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, wait_status
from tests.waiting import until

cloud = test_server_lifecycle.cloud   # alice is a member of proj-a; flavor m1.small: 1 VCPU, 1024 MB
V246 = {"OpenStack-API-Version": "compute 2.46"}


async def test_a_server_shows_the_flavor_it_was_booted_with(cloud):
    h = cloud
    await ok(await h.http.post(f"{V}/flavors/{h.flavor}/os-extra_specs", headers=h.admin,
                               json={"extra_specs": {"hw:cpu_policy": "shared", "quota:cpu_shares": 7}}), 200)
    created = await ok(await h.http.post(V + "/servers", headers={**h.alice, **MV}, json=boot_body(h)), 202)
    server = await wait_status(h, created["server"]["id"], "ACTIVE")
    assert server["flavor"] == {"vcpus": 1, "ram": 1024, "disk": 1, "ephemeral": 0, "swap": 0,
                                "original_name": "m1.small",
                                "extra_specs": {"hw:cpu_policy": "shared", "quota:cpu_shares": "7"}}
    old = (await ok(await h.http.get(f"{V}/servers/{server['id']}", headers={**h.alice, **V246}), 200))["server"]
    [link] = old["flavor"].pop("links")
    assert old["flavor"] == {"id": h.flavor}
    assert link["rel"] == "bookmark" and link["href"].endswith(f"/compute/flavors/{h.flavor}")


async def test_a_boot_whose_mappings_fail_takes_its_instances_out_of_the_cell(cloud):
    h = cloud
    # The API database refuses the mappings: the cell's rows (written at the same time, and
    # committed there) are all that is left of the boot until it takes them out.
    await h.pool.execute("""
        CREATE FUNCTION refuse_mapping() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'no mappings today'; END $$;
        CREATE TRIGGER refuse_mapping BEFORE INSERT ON instance_mappings
           FOR EACH STATEMENT EXECUTE FUNCTION refuse_mapping();""")
    resp = await h.http.post(V + "/servers", headers={**h.alice, **MV}, json=boot_body(h, min_count=3))
    assert resp.status == 500
    assert (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"] == []
    for cell in h.cells.all():
        assert await cell.pool.fetchval("SELECT count(*) FROM instances") == 0, cell.name
        assert await cell.pool.fetchval("SELECT count(*) FROM instance_actions") == 0, cell.name
    assert await h.pool.fetchval("SELECT count(*) FROM instance_mappings") == 0
    usage = (await ok(await h.http.get(V + "/os-quota-sets/proj-a/detail", headers={**h.alice, **MV}),
                      200))["quota_set"]
    assert usage["instances"]["in_use"] == 0

    # With the API database answering again, the same boot goes through.
    await h.pool.execute("DROP TRIGGER refuse_mapping ON instance_mappings")
    created = await ok(await h.http.post(V + "/servers", headers={**h.alice, **MV}, json=boot_body(h)), 202)
    assert (await wait_status(h, created["server"]["id"], "ACTIVE"))["status"] == "ACTIVE"


async def test_a_boot_cancelled_while_it_takes_its_rows_back_leaves_them_for_tidy_never_mappings(cloud):
    """The order write_rows relies on, driven to its worst case: the cell's rows are in, the
    mappings fail, and the write is cancelled while it deletes the rows (a shutdown that cannot
    wait: boots written together are written by the pool's sender, which a request's own
    cancellation leaves alone). The mappings never commit; the rows stay unmapped, and the
    conductor's tidy() takes them out."""
    h = cloud
    cell = h.cells.default
    _, app = h.roles["api"].http()
    ctx = RequestContext(user_id="alice", project_id="proj-a", request_id="req-cancelled")
    async with h.pool.acquire() as gate, cell.pool.acquire() as blocker:
        # The mapping waits on a lock this test holds, then fails; the delete that takes the
        # rows back waits on a table lock this test takes once the rows are in.
        # (The test's own queries go through these two: a task holding a connection of a
        # pool takes no other from it, db/pool_order.py.)
        await gate.execute("SELECT pg_advisory_lock(4242)")
        await gate.execute("""
            CREATE FUNCTION refuse_mapping() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN PERFORM pg_advisory_xact_lock(4242); RAISE EXCEPTION 'no mappings today'; END $$;
            CREATE TRIGGER refuse_mapping BEFORE INSERT ON instance_mappings
               FOR EACH STATEMENT EXECUTE FUNCTION refuse_mapping();""")
        boot = asyncio.create_task(server_create.create(app[STATE], ctx, boot_body(h, min_count=2), (2, 96)))
        await until(lambda: blocker.fetchval("SELECT count(*) = 2 FROM instances"), what="both rows written")
        async with blocker.transaction():
            await blocker.execute("LOCK TABLE instances IN SHARE MODE")
            await gate.execute("SELECT pg_advisory_unlock(4242)")
            # another session's lock wait has no event to wait on
            await until(lambda: gate.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND query LIKE 'DELETE FROM instances%')"), what="the take-back waiting for its lock")
            [writer] = [t for t in asyncio.all_tasks() if t.get_name() == "db:boot-writes"]
            writer.cancel()
            with pytest.raises(PoolClosing):
                await boot
    assert await h.pool.fetchval("SELECT count(*) FROM instance_mappings") == 0
    assert await cell.pool.fetchval("SELECT count(*) FROM instances") == 2
    await cell.pool.execute("UPDATE instances SET created_at = now() - interval '2 minutes'")
    assert len(await h.cells.tidy()) == 2
    assert await cell.pool.fetchval("SELECT count(*) FROM instances") == 0
    assert (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"] == []


async def test_boots_that_arrive_together_are_written_together_each_within_the_quota(cloud, monkeypatch):
    """One user's boots arriving at once share the quota lock, the transaction and the insert
    (server_create._write_boots); each is still decided as if it came alone: those beyond the
    quota hear why, the others are written and built."""
    h = cloud
    batches: list[int] = []
    real = server_create._write_boots

    async def counting(state, cell, batch):
        batches.append(len(batch))
        return await real(state, cell, batch)

    monkeypatch.setattr(server_create, "_write_boots", counting)
    await ok(await h.http.put(V + "/os-quota-sets/proj-a", headers=h.admin,
                              json={"quota_set": {"instances": 3}}), 200)
    answers = await asyncio.gather(*(h.http.post(V + "/servers", headers={**h.alice, **MV},
                                                 json=boot_body(h, name=f"together-{i}")) for i in range(5)))
    assert sorted(r.status for r in answers) == [202, 202, 202, 403, 403]
    refused = [await r.json() for r in answers if r.status == 403]
    assert all("Quota exceeded for instances" in body["forbidden"]["message"] for body in refused), refused
    assert max(batches) > 1, batches     # they did share
    ids = [(await r.json())["server"]["id"] for r in answers if r.status == 202]
    for server_id in ids:
        assert (await wait_status(h, server_id, "ACTIVE"))["status"] == "ACTIVE"
    listed = (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"]
    assert sorted(s["name"] for s in listed) == sorted(f"together-{i}" for i in range(5)
                                                        if answers[i].status == 202)
