"""Cells v2: the API database maps cells, hosts and instances; each cell's instances are in
its own database. A server that gets a host lives in cell1, one that never does in cell0
(ERROR, with the scheduler's explanation), and the API answers for both as one cloud."""

from __future__ import annotations

import asyncio
import uuid as uuidlib

import asyncpg
import pytest

from nova_async.db import cells as cells_mod
from tests.conftest import dsn_for
from tests.integration import test_server_lifecycle
from tests.integration.compute.support import add_instance
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, wait_status
from tests.waiting import until, waiting_for_locks

cloud = test_server_lifecycle.cloud  # sim-1 and sim-2, 4096 MB each, in cell1


async def where(h, server_id: str) -> dict[str, int]:
    """How many rows of the instance each database holds (the API's should hold none)."""
    found = {"api": await h.pool.fetchval("SELECT count(*) FROM instances WHERE uuid = $1", server_id)}
    for cell in h.cells.all():
        found[cell.name] = await cell.pool.fetchval("SELECT count(*) FROM instances WHERE uuid = $1", server_id)
    return found


async def servers_of(h) -> list[dict]:
    return (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"]


async def mapped_cell(h, server_id: str) -> str:
    return await h.pool.fetchval("SELECT c.name FROM instance_mappings m JOIN cell_mappings c"
                                 " ON c.uuid = m.cell_uuid WHERE m.instance_uuid = $1", server_id)


async def test_the_default_install_has_cell0_and_cell1_in_their_own_databases(cloud):
    h = cloud
    rows = await h.pool.fetch("SELECT uuid::text, name, database_connection FROM cell_mappings ORDER BY name")
    api_db = await h.pool.fetchval("SELECT current_database()")
    assert [(r["name"], r["database_connection"]) for r in rows] == [
        ("cell0", f"{api_db}_cell0"), ("cell1", f"{api_db}_cell1")]
    assert rows[0]["uuid"] == cells_mod.CELL0_UUID
    for cell in h.cells.all():
        assert await cell.pool.fetchval("SELECT current_database()") == f"{api_db}_{cell.name}"
    hosts = await h.pool.fetch("SELECT h.host, c.name FROM host_mappings h JOIN cell_mappings c"
                               " ON c.uuid = h.cell_uuid ORDER BY h.host")
    assert [(r["host"], r["name"]) for r in hosts] == [("sim-1", "cell1"), ("sim-2", "cell1")]


async def test_a_placed_server_lives_in_cell1_and_an_unplaceable_one_in_cell0(cloud):
    h = cloud
    placed = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name="ok")), 202)
    placed_id = placed["server"]["id"]
    assert (await wait_status(h, placed_id, "ACTIVE"))["status"] == "ACTIVE"
    assert await where(h, placed_id) == {"api": 0, "cell0": 0, "cell1": 1}
    assert await mapped_cell(h, placed_id) == "cell1"

    big = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "too-big", "ram": 8192, "vcpus": 1, "disk": 1}}), 200)
    failed = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(
        h, name="nope", flavorRef=big["flavor"]["id"])), 202)
    failed_id = failed["server"]["id"]
    server = await wait_status(h, failed_id, "ERROR")
    assert "8192 MB MEMORY_MB" in server["fault"]["message"]
    # ERROR first, then the move to cell0: copy, re-map, and only then the delete from cell1
    # (a moment after the mapping changed), so wait for where the rows are, not the mapping.
    await until(lambda: where(h, failed_id), lambda w: w == {"api": 0, "cell0": 1, "cell1": 0},
                what="the failed server's rows in cell0 alone")
    assert await mapped_cell(h, failed_id) == "cell0"
    # Its history moved with it.
    actions = (await ok(await h.http.get(f"{V}/servers/{failed_id}/os-instance-actions",
                                         headers=h.alice), 200))["instanceActions"]
    assert [a["action"] for a in actions] == ["create"]
    detail = await ok(await h.http.get(f"{V}/servers/{failed_id}/os-instance-actions/{actions[0]['request_id']}",
                                       headers={**h.admin, **MV}), 200)
    assert [(e["event"], e["result"]) for e in detail["instanceAction"]["events"]] == [
        ("conductor_schedule_and_build_instances", "Error"), ("scheduler_select_destinations_and_claim", "Error")]

    # One cloud: the list merges both cells, newest first, and pages across them.
    listed = (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"]
    assert [s["id"] for s in listed] == [failed_id, placed_id]
    detail = (await ok(await h.http.get(V + "/servers/detail", headers={**h.alice, **MV}), 200))["servers"]
    faults = {s["id"]: (s.get("fault") or {}).get("message", "") for s in detail}
    assert "8192 MB MEMORY_MB" in faults[failed_id] and faults[placed_id] == ""
    page = (await ok(await h.http.get(V + f"/servers?limit=1&marker={failed_id}", headers=h.alice), 200))["servers"]
    assert [s["id"] for s in page] == [placed_id]
    # cell0's instances count against the quota too, as Nova counts ERROR servers.
    limits = (await ok(await h.http.get(V + "/limits", headers=h.alice), 200))["limits"]["absolute"]
    assert limits["totalInstancesUsed"] == 2
    # ...and they are deleted where they are.
    assert (await h.http.delete(f"{V}/servers/{failed_id}", headers=h.alice)).status == 204
    assert (await h.http.get(f"{V}/servers/{failed_id}", headers=h.alice)).status == 404
    assert await h.cells.cell0.pool.fetchval("SELECT deleted_at IS NOT NULL FROM instances WHERE uuid = $1",
                                             failed_id)


async def test_a_delete_between_the_error_and_the_move_to_cell0_is_finished(cloud, monkeypatch):
    """The API marks the ERROR row `deleting` in cell1, the move carries the mark to cell0,
    and the API's finish then finds nothing in cell1: the conductor finishes it in cell0."""
    h = cloud
    real_move = h.cells.move

    async def delete_lands_first(uuid, source, target):
        await source.pool.execute("UPDATE instances SET task_state = 'deleting' WHERE uuid = $1", uuid)
        await real_move(uuid, source, target)

    monkeypatch.setattr(h.cells, "move", delete_lands_first)
    big = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "too-big", "ram": 8192, "vcpus": 1, "disk": 1}}), 200)
    failed = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(
        h, name="nope", flavorRef=big["flavor"]["id"])), 202)
    await wait_status(h, failed["server"]["id"], "GONE")


async def test_a_restart_finishes_deletes_of_servers_without_a_host(cloud):
    """A delete the API marked and did not finish (it stopped in between) is finished when
    the conductor resumes its work."""
    h = cloud
    big = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "too-big", "ram": 8192, "vcpus": 1, "disk": 1}}), 200)
    failed = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(
        h, name="nope", flavorRef=big["flavor"]["id"])), 202)
    failed_id = failed["server"]["id"]
    await wait_status(h, failed_id, "ERROR")
    await until(lambda: mapped_cell(h, failed_id), lambda c: c == "cell0", what="the move to cell0")
    await h.cells.cell0.pool.execute("UPDATE instances SET task_state = 'deleting' WHERE uuid = $1", failed_id)
    await h.roles["conductor"]._resume()
    await wait_status(h, failed_id, "GONE")


async def test_tidy_finishes_an_interrupted_move_and_drops_unanswered_boots(cloud):
    h = cloud
    cell0, cell1 = h.cells.cell0, h.cells.default
    # A move a crash cut short after the copy: the mapping still names cell1, so cell0's copy goes.
    moved, _ = await add_instance(cell1.pool, host=None, vm_state="building", task_state="scheduling")
    await h.pool.execute("INSERT INTO instance_mappings (instance_uuid, cell_uuid, project_id, user_id)"
                         " VALUES ($1, $2, 'proj', 'user')", moved, cell1.uuid)
    exported = await cell1.pool.fetchrow(cells_mod.Q.export_instance, moved)
    await cell0.pool.execute(cells_mod.Q.import_instance, exported["instance"], exported["faults"],
                             exported["actions"], exported["events"])
    # A boot whose API transaction never committed: rows without a mapping, a minute old.
    unanswered, _ = await add_instance(cell1.pool, host=None, vm_state="building", task_state="scheduling")
    await cell1.pool.execute("UPDATE instances SET created_at = now() - interval '2 minutes' WHERE uuid = $1",
                             unanswered)
    # One just written, whose mapping may still be on its way: left alone.
    fresh, _ = await add_instance(cell1.pool, host=None, vm_state="building", task_state="scheduling")

    assert sorted(await h.cells.tidy()) == sorted([moved, unanswered])
    assert await where(h, moved) == {"api": 0, "cell0": 0, "cell1": 1}
    assert await where(h, unanswered) == {"api": 0, "cell0": 0, "cell1": 0}
    assert await where(h, fresh) == {"api": 0, "cell0": 0, "cell1": 1}
    # A move repeated after a crash ends as one: the copy is replaced, not doubled.
    await h.cells.move(moved, cell1, cell0)
    await h.cells.move(moved, cell1, cell0)
    assert await where(h, moved) == {"api": 0, "cell0": 1, "cell1": 0}
    assert await mapped_cell(h, moved) == "cell0"
    assert await cell0.pool.fetchval("SELECT count(*) FROM instance_actions WHERE instance_uuid = $1", moved) == 1


async def test_tidy_keeps_a_copy_a_move_is_making_the_real_one(cloud):
    """tidy() runs again and again beside the conductor's moves: a copy it finds in the
    middle of a move (copied, mapping not yet re-pointed) must survive if the move ends."""
    h = cloud
    cell0, cell1 = h.cells.cell0, h.cells.default
    moving, _ = await add_instance(cell1.pool, host=None, vm_state="building", task_state="scheduling")
    await h.pool.execute("INSERT INTO instance_mappings (instance_uuid, cell_uuid, project_id, user_id)"
                         " VALUES ($1, $2, 'proj', 'user')", moving, cell1.uuid)
    # The move's first half, by hand: its source row locked, the copy committed in cell0.
    async with h.pool.acquire() as api, cell1.pool.acquire() as src, src.transaction():
        await src.fetchval(cells_mod.Q.lock_instance, moving)
        exported = await src.fetchrow(cells_mod.Q.export_instance, moving)
        await cell0.pool.execute(cells_mod.Q.import_instance, exported["instance"], exported["faults"],
                                 exported["actions"], exported["events"])
        tidying = asyncio.create_task(h.cells.tidy())
        await waiting_for_locks(cell1.pool, what="tidy() waiting for the moving row's lock")
        assert not tidying.done()   # it waits for the move …
        await api.execute(cells_mod.Q.remap_instance, moving, cell0.uuid)
        await src.execute(cells_mod.Q.drop_instance, moving)
    assert moving not in await tidying   # … which made cell0's copy the instance
    assert await where(h, moving) == {"api": 0, "cell0": 1, "cell1": 0}


async def test_instances_from_before_cells_move_into_cell1(cloud):
    h = cloud
    legacy = str(uuidlib.uuid4())
    await add_instance_in(h.pool, legacy)
    assert await cells_mod.adopt_legacy_instances(h.cells) == 1
    assert await where(h, legacy) == {"api": 0, "cell0": 0, "cell1": 1}
    assert await mapped_cell(h, legacy) == "cell1"
    assert await h.cells.default.pool.fetchval(
        "SELECT count(*) FROM instance_faults WHERE instance_uuid = $1", legacy) == 1
    # New faults continue the cell's sequence after the ids that came in.
    await h.cells.default.pool.execute("INSERT INTO instance_faults (instance_uuid, code, message) "
                                       "VALUES ($1, 500, 'later')", legacy)
    assert await cells_mod.adopt_legacy_instances(h.cells) == 0


async def test_adoption_drops_group_memberships_of_servers_deleted_before_cells(cloud):
    h = cloud
    group = (await ok(await h.http.post(V + "/os-server-groups", headers={**h.alice, **MV}, json={
        "server_group": {"name": "g", "policy": "anti-affinity"}}), 200))["server_group"]["id"]
    alive, gone = str(uuidlib.uuid4()), str(uuidlib.uuid4())
    for legacy in (alive, gone):
        await add_instance_in(h.pool, legacy, fault_id=None)
        await h.pool.execute("INSERT INTO server_group_members (group_uuid, instance_uuid) VALUES ($1, $2)",
                             group, legacy)
    await h.pool.execute("UPDATE instances SET deleted_at = now() WHERE uuid = $1", gone)
    # Adopted by two processes starting at once: one does it, the other finds nothing left.
    assert sorted(await asyncio.gather(*(cells_mod.adopt_legacy_instances(h.cells) for _ in range(2)))) == [0, 2]
    members = (await ok(await h.http.get(f"{V}/os-server-groups/{group}", headers=h.alice), 200)
               )["server_group"]["members"]
    assert members == [alive]
    assert await where(h, alive) == await where(h, gone) == {"api": 0, "cell0": 0, "cell1": 1}


async def add_instance_in(pool, instance_uuid: str, fault_id: int | None = 7) -> None:
    await pool.execute(
        "INSERT INTO instances (uuid, display_name, project_id, user_id, reservation_id, flavor, request_spec,"
        " vm_state) VALUES ($1, 'old', 'proj', 'user', 'r-0', '{}', '{}', 'error')", instance_uuid)
    if fault_id is not None:
        await pool.execute("INSERT INTO instance_faults (id, instance_uuid, code, message) VALUES ($1, $2, 500, 'x')",
                           fault_id, instance_uuid)


@pytest.fixture
async def two_cells(pool, database, pg_cluster, template_db, tmp_path):
    """sim-1 in cell1 and sim-2 in a second cell, cell2, whose database is made here."""
    api_db = await pool.fetchval("SELECT current_database()")
    admin = await asyncpg.connect(dsn_for(pg_cluster, "postgres"))
    try:
        await admin.execute(f'CREATE DATABASE "{api_db}_cell2" TEMPLATE "{template_db}"')
        await pool.execute("INSERT INTO cell_mappings (uuid, name, database_connection) VALUES ($1, 'cell2', $2)",
                           str(uuidlib.uuid4()), f"{api_db}_cell2")
        await pool.execute("INSERT INTO host_mappings (host, cell_uuid) "
                           "SELECT 'sim-2', uuid FROM cell_mappings WHERE name = 'cell2'")
        async with test_server_lifecycle.sim_cloud(pool, tmp_path) as h:
            yield h
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{api_db}_cell2" WITH (FORCE)')
        await admin.close()


async def test_a_server_placed_on_a_host_of_another_cell_moves_there_and_works(two_cells):
    h = two_cells
    cell2 = h.cells.named("cell2")
    assert h.roles["compute"].hosts["sim-2"].pool is cell2.pool
    assert h.roles["compute"].hosts["sim-1"].pool is h.cells.default.pool
    ids = []
    for i in range(4):  # 1024 MB each on two 4096 MB hosts: the weighers spread them
        created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name=f"s{i}")), 202)
        ids.append(created["server"]["id"])
    hosts = {}
    for server_id in ids:
        server = await wait_status(h, server_id, "ACTIVE", headers={**h.admin, **MV})
        assert server["status"] == "ACTIVE", server.get("fault")
        hosts[server_id] = server["OS-EXT-SRV-ATTR:host"]
    assert set(hosts.values()) == {"sim-1", "sim-2"}
    for server_id, host in hosts.items():
        cell = "cell1" if host == "sim-1" else "cell2"
        assert await mapped_cell(h, server_id) == cell
        assert (await where(h, server_id))[cell] == 1 and sum((await where(h, server_id)).values()) == 1
    listed = (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"]
    assert sorted(s["id"] for s in listed) == sorted(ids)
    # Actions and deletes reach the server in whichever cell it is.
    on_cell2 = next(s for s, host in hosts.items() if host == "sim-2")
    assert (await h.http.post(f"{V}/servers/{on_cell2}/action", headers=h.alice, json={"os-stop": None})).status == 202
    assert (await wait_status(h, on_cell2, "SHUTOFF"))["status"] == "SHUTOFF"
    for server_id in ids:
        assert (await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice)).status == 204
    await until(lambda: servers_of(h), lambda listed: not listed, what="no servers left")
    assert await cell2.pool.fetchval("SELECT count(*) FROM instances WHERE deleted_at IS NULL") == 0


async def test_a_cell_another_process_created_is_seen_after_the_next_tidy(cloud, pg_cluster, template_db):
    h = cloud
    api_db = await h.pool.fetchval("SELECT current_database()")
    admin = await asyncpg.connect(dsn_for(pg_cluster, "postgres"))
    try:
        await admin.execute(f'CREATE DATABASE "{api_db}_late" TEMPLATE "{template_db}"')
        await h.pool.execute("INSERT INTO cell_mappings (uuid, name, database_connection) VALUES ($1, 'late', $2)",
                             str(uuidlib.uuid4()), f"{api_db}_late")
        assert "late" not in [c.name for c in h.cells.all()]
        await h.cells.tidy()   # the conductor's periodic pass
        late = h.cells.named("late")
        assert late in h.cells.compute_cells
        assert f"{api_db}_late" in [r["db"] for r in await h.cells.gather("SELECT current_database() AS db")]
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{api_db}_late" WITH (FORCE)')
        await admin.close()


async def test_cell_commands_list_create_and_show_hosts(database, pool, tmp_path, pg_cluster):
    from argparse import Namespace

    from nova_async import config
    from nova_async.db import cells_cli

    settings = config.load(None, {("service", "database"): database, ("service", "state_dir"): str(tmp_path)})
    api_db = await pool.fetchval("SELECT current_database()")
    try:
        listed = await cells_cli.run(Namespace(cell_command="list"), settings)
        assert [line.split("\t")[0] for line in listed.splitlines()] == ["name", "cell0", "cell1"]
        created = await cells_cli.run(Namespace(cell_command="create", name="edge2", cell_database=None), settings)
        assert created.startswith("created cell edge2 (")
        admin = await asyncpg.connect(dsn_for(pg_cluster, f"{api_db}_edge2"))
        try:  # its own database, migrated
            assert await admin.fetchval("SELECT count(*) FROM instances") == 0
        finally:
            await admin.close()
        with pytest.raises(Exception, match="exists already"):
            await cells_cli.run(Namespace(cell_command="create", name="edge2", cell_database=None), settings)
        with pytest.raises(Exception, match="letters, digits"):
            await cells_cli.run(Namespace(cell_command="create", name='x"; DROP', cell_database=None), settings)
        assert await cells_cli.run(Namespace(cell_command="hosts"), settings) == "no compute host is mapped yet"
    finally:
        admin = await asyncpg.connect(dsn_for(pg_cluster, "postgres"))
        await admin.execute(f'DROP DATABASE IF EXISTS "{api_db}_edge2" WITH (FORCE)')
        await admin.close()
