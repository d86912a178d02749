"""Expand and contract migrations, for a site upgraded one host at a time: an expand applies
at once; a contract waits until every live service runs a release that ships it (refused,
naming them, when asked for explicitly); the hosts a starting process takes over do not hold
it back, so a single box upgrades in place; and a release refuses a database that a newer
one contracted, while a newer one's expand migrations leave it working."""

import uuid

import asyncpg
import pytest

from nova_async.db import migrate as migrator
from nova_async.db.migrate import ContractBlocked, Gate, Mode, SchemaAhead, migrate
from nova_async.db.queries import SQL_DIR as SHIPPED

EXPAND = "-- phase: expand\n-- a column the next release writes\nALTER TABLE services ADD COLUMN k9_note text;\n"
CONTRACT = "-- phase: contract\n-- the old column no release reads any more\nALTER TABLE services DROP COLUMN disabled_reason;\n"


@pytest.fixture
def next_release(tmp_path, monkeypatch):
    """sql/ as the next release ships it: this one's files plus an expand (9001) and a
    contract (9002) migration of its own."""
    sql = tmp_path / "sql"
    sql.mkdir()
    for path in migrator.SQL_DIR.iterdir():
        (sql / path.name).symlink_to(path)
    (sql / "9001_expand_note.sql").write_text(EXPAND)
    (sql / "9002_contract_reason.sql").write_text(CONTRACT)
    monkeypatch.setattr(migrator, "SQL_DIR", sql)
    return sql


async def _service(conn: asyncpg.Connection, host: str, level: int | None, *, up: bool = True) -> None:
    await conn.execute(
        "INSERT INTO services (id, host, binary_name, topic, last_seen_up, release, schema_level) "
        "VALUES ($1, $2, 'nova-compute', 'compute', now() - make_interval(secs => $3), $4, $5)",
        uuid.uuid4(), host, 0 if up else 3600, None if level is None else f"level-{level}", level)


async def _columns(conn: asyncpg.Connection) -> set[str]:
    return {r[0] for r in await conn.fetch(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'services'")}


async def test_a_contract_waits_for_every_live_service_of_an_older_release(database, next_release):
    conn = await asyncpg.connect(database)
    try:
        await _service(conn, "edge-1", 70)          # the release before: ships up to 0070
        await _service(conn, "edge-2", None)         # a record from before 0070: unknown, so behind
        await _service(conn, "gone", 12, up=False)   # down: holds nothing back

        # Plain migrate (and a service's start): the expand at once, the contract held back.
        assert await migrate(conn) == ["9001_expand_note.sql"]
        assert {"k9_note", "disabled_reason"} <= await _columns(conn)

        # Asked for explicitly: refused, naming who is behind and what to run once they are not.
        with pytest.raises(ContractBlocked, match=r"nova-compute on edge-1 \(release level-70\), "
                                                  r"nova-compute on edge-2 \(release unknown\)\. Upgrade them, "
                                                  r"then run `nova-async db migrate --contract`"):
            await migrate(conn, mode=Mode.CONTRACT)

        # edge-1 upgraded (its record now says the next release); edge-2 is the host migrating.
        await conn.execute("UPDATE services SET schema_level = 9002 WHERE host = 'edge-1'")
        assert await migrate(conn, mode=Mode.CONTRACT, gate=Gate(replacing=("edge-2",))) == \
            ["9002_contract_reason.sql"]
        assert "disabled_reason" not in await _columns(conn)
        assert await migrate(conn) == []
    finally:
        await conn.close()


async def test_expand_only_leaves_the_contracts_for_later(database, next_release):
    conn = await asyncpg.connect(database)
    try:
        with pytest.raises(ContractBlocked, match=r"9001_expand_note\.sql are not applied yet: run "
                                                  r"`nova-async db migrate --expand` first"):
            await migrate(conn, mode=Mode.CONTRACT)
        assert await migrate(conn, mode=Mode.EXPAND) == ["9001_expand_note.sql"]
        assert "disabled_reason" in await _columns(conn)
        # No service at all (a box being installed): nothing holds a contract back.
        assert await migrate(conn) == ["9002_contract_reason.sql"]
        phases = dict(await conn.fetch("SELECT version, phase FROM schema_migrations WHERE version > 9000"))
        assert phases == {9001: "expand", 9002: "contract"}
    finally:
        await conn.close()


async def test_an_older_release_works_on_a_newer_expand_and_refuses_a_newer_contract(
        database, next_release, monkeypatch):
    conn = await asyncpg.connect(database)
    try:
        assert await migrate(conn, mode=Mode.EXPAND) == ["9001_expand_note.sql"]
        # This release (without 9001/9002) starts on it: nothing to do, nothing refused, and
        # the newer release's functions are not put back to this one's.
        monkeypatch.setattr(migrator, "SQL_DIR", SHIPPED)
        assert await migrate(conn) == []
        monkeypatch.setattr(migrator, "SQL_DIR", next_release)
        assert await migrate(conn) == ["9002_contract_reason.sql"]
        monkeypatch.undo()
        with pytest.raises(SchemaAhead, match=r"a newer release applied contract migration\(s\) "
                                              r"9002_contract_reason\.sql"):
            await migrate(conn)
    finally:
        await conn.close()


def test_a_phase_that_is_neither_is_a_mistake_of_the_release(tmp_path):
    assert migrator.phase_of("0001_x.sql", "-- 0001: no phase line\nSELECT 1;") is migrator.Phase.EXPAND
    with pytest.raises(migrator.MigrationError, match="phase 'later'"):
        migrator.phase_of("0002_y.sql", "-- phase: later\nSELECT 1;")
