"""Migrations: applied once, in order, even when two processes start at the same moment; a
database built by them equals the current truth (tables from the migrations, functions and
triggers from sql/functions/), whichever release it was built by before; and a migration
edited after a database applied it stops the upgrade."""

import asyncio
import uuid

import asyncpg
import pytest

from nova_async.db.migrate import (SQL_DIR, MigrationEdited, checksum, load_functions, migrate,
                                   migration_files)
from tests.conftest import dsn_for

# The migrator's own tables, left out of the comparisons: their shape is the migrator's business
# (schema_migrations got its checksum column after the fact).
BOOKKEEPING = ("schema_migrations", "schema_functions")


@pytest.fixture
async def new_database(pg_cluster):
    """Makes empty databases on demand (connected), dropped after the test."""
    admin = await asyncpg.connect(dsn_for(pg_cluster, "postgres"))
    made: list[tuple[str, asyncpg.Connection]] = []

    async def make() -> asyncpg.Connection:
        name = f"migrate_{uuid.uuid4().hex[:8]}"
        await admin.execute(f'CREATE DATABASE "{name}"')
        conn = await asyncpg.connect(dsn_for(pg_cluster, name))
        made.append((name, conn))
        return conn

    try:
        yield make
    finally:
        for name, conn in made:
            await conn.close()
            await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        await admin.close()


async def replay(conn: asyncpg.Connection, upto: int | None = None) -> None:
    """What the releases before this one left in a database: the migrations numbered up to
    `upto` (default: all) applied as they ran them, each file in a transaction of its own,
    recorded without a checksum, functions and triggers only as the migrations made them."""
    await conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                       " version integer PRIMARY KEY, name text NOT NULL,"
                       " applied_at timestamptz NOT NULL DEFAULT now())")
    for number, name in migration_files():
        if upto is not None and number > upto:
            break
        async with conn.transaction():
            await conn.execute((SQL_DIR / name).read_text())
            await conn.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", number, name)


async def catalog(conn: asyncpg.Connection) -> dict[str, str]:
    """Everything the schema `public` defines, as PostgreSQL itself prints it, keyed by kind and
    name; the migrator's bookkeeping tables left out."""
    queries = {
        "function": """
            SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid)
              FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace""",
        "trigger": """
            SELECT t.tgrelid::regclass || '.' || t.tgname, pg_get_triggerdef(t.oid) || ' ' || t.tgenabled::text
              FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
             WHERE NOT t.tgisinternal AND c.relnamespace = 'public'::regnamespace""",
        "relation": """
            SELECT c.relname, concat_ws(' ', c.relkind::text, c.relpersistence::text, c.reloptions::text)
              FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace""",
        "column": """
            SELECT c.relname || '.' || a.attname,
                   concat_ws(' ', a.attnum, format_type(a.atttypid, a.atttypmod),
                             CASE WHEN a.attnotnull THEN 'NOT NULL' END, 'default', pg_get_expr(d.adbin, d.adrelid),
                             'identity', a.attidentity, 'generated', a.attgenerated, 'collation', a.attcollation)
              FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
              LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
             WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped""",
        "constraint": """
            SELECT c.conrelid::regclass || '.' || c.conname, pg_get_constraintdef(c.oid)
              FROM pg_constraint c WHERE c.connamespace = 'public'::regnamespace""",
        "index": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
        "view": "SELECT viewname, definition FROM pg_views WHERE schemaname = 'public'",
        "sequence": """
            SELECT sequencename, concat_ws(' ', data_type, start_value, min_value, max_value, increment_by, cycle)
              FROM pg_sequences WHERE schemaname = 'public'""",
        "type": """
            SELECT t.typname, t.typtype::text || ' ' || format_type(t.oid, NULL)
                   || coalesce(' ' || (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                                         FROM pg_enum e WHERE e.enumtypid = t.oid), '')
              FROM pg_type t LEFT JOIN pg_class c ON c.oid = t.typrelid
             WHERE t.typnamespace = 'public'::regnamespace AND t.typtype IN ('e', 'd', 'c', 'r')
               AND (c.relkind IS NULL OR c.relkind = 'c')""",
        "extension": "SELECT extname, extversion FROM pg_extension",
    }
    found = {}
    for kind, query in queries.items():
        for key, definition in await conn.fetch(query):
            if not any(key == b or key.startswith(f"{b}.") or key.startswith(f"{b}_") for b in BOOKKEEPING):
                found[f"{kind} {key}"] = definition
    return found


def assert_same(expected: dict[str, str], got: dict[str, str]) -> None:
    found = differences(expected, got)
    assert not found, "\n".join(found)


def differences(expected: dict[str, str], got: dict[str, str]) -> list[str]:
    out = []
    for key in sorted(expected.keys() | got.keys()):
        if key not in got:
            out.append(f"missing: {key}")
        elif key not in expected:
            out.append(f"extra: {key}")
        elif expected[key] != got[key]:
            out.append(f"differs: {key}\n  expected: {expected[key]}\n  got:      {got[key]}")
    return out


async def fresh(new_database) -> dict[str, str]:
    conn = await new_database()
    await migrate(conn)
    return await catalog(conn)


async def test_two_migrators_at_once_apply_each_migration_once(new_database, pg_cluster):
    a = await new_database()
    b = await asyncpg.connect(dsn_for(pg_cluster, await a.fetchval("SELECT current_database()")))
    try:
        first, second = await asyncio.gather(migrate(a), migrate(b))
        assert sorted(first + second) == sorted(n for _, n in migration_files())
        assert await a.fetchval("SELECT count(*) FROM schema_migrations") == len(migration_files())
        assert await migrate(a) == []
    finally:
        await b.close()


async def test_a_database_built_by_the_migrations_equals_the_truth(new_database):
    """The truth: tables as the migrations leave them, and every function and trigger as
    sql/functions/ says, nothing more (a function only a migration made would show up here)."""
    truth = await new_database()
    await replay(truth)
    for (signature,) in await truth.fetch(
            "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace"):
        await truth.execute(f"DROP FUNCTION {signature} CASCADE")  # and the triggers that run it
    assert not await truth.fetchval("SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal")
    await load_functions(truth)

    built = await fresh(new_database)
    assert any(k.startswith("function placement_write_allocations(") for k in built)
    assert_same(await catalog(truth), built)


@pytest.mark.parametrize("release", [21, 36, 40, 41])
async def test_a_database_upgraded_from_an_earlier_release_equals_a_fresh_one(new_database, release):
    """An edge site upgrades in place: its database, made by a release whose last migration was
    `release` (21: before any function; 41: the last release that kept no checksums), ends
    identical to a fresh one, and remembers every migration's checksum."""
    site = await new_database()
    await replay(site, upto=release)
    applied = await migrate(site)
    assert applied == [name for number, name in migration_files() if number > release]

    expected = await fresh(new_database)
    assert_same(expected, await catalog(site))
    recorded = {r["name"]: r["checksum"] for r in await site.fetch("SELECT name, checksum FROM schema_migrations")}
    assert recorded == {name: checksum((SQL_DIR / name).read_text()) for _, name in migration_files()}


async def test_functions_and_triggers_that_drifted_from_their_files_are_put_right(new_database):
    """Sites that applied 0036 or 0038 before those files were edited have other trigger
    bodies, and no inventories_class_number trigger; the upgrade leaves them as fresh."""
    site = await new_database()
    await replay(site)
    await site.execute("""
        DROP TRIGGER inventories_class_number ON inventories;
        CREATE OR REPLACE FUNCTION placement_track_usage() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RETURN NULL; END $$;""")
    assert await migrate(site) == []
    expected = await fresh(new_database)
    assert_same(expected, await catalog(site))


async def test_a_restart_with_nothing_new_leaves_functions_alone(new_database):
    """Replacing a function throws away every session's cached plans, and a trigger locks its
    table: a process that starts next to running ones changes nothing when nothing changed."""
    conn = await new_database()
    await migrate(conn)
    versions = ("SELECT p.oid, p.xmin::text FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace"
                " UNION ALL SELECT t.oid, t.xmin::text FROM pg_trigger t WHERE NOT t.tgisinternal ORDER BY 1")
    before = await conn.fetch(versions)
    assert await migrate(conn) == []
    assert await conn.fetch(versions) == before


async def test_an_edited_migration_stops_the_upgrade_and_says_which(new_database):
    conn = await new_database()
    await migrate(conn)
    # what the database recorded when it applied 0036, which the file no longer matches
    await conn.execute("UPDATE schema_migrations SET checksum = $1 WHERE version = 36", checksum("-- before"))
    await conn.execute("UPDATE schema_migrations SET checksum = NULL WHERE version = 37")
    with pytest.raises(MigrationEdited, match=r"sql/0036_placement_claim_guards\.sql was edited after"):
        await migrate(conn)
    # nothing was written, not even the checksum 0037 lacked
    assert await conn.fetchval("SELECT checksum FROM schema_migrations WHERE version = 37") is None


async def test_a_failed_upgrade_leaves_the_database_as_it_was(new_database, monkeypatch, tmp_path):
    """Pending migrations and the functions commit together: a function file that fails
    undoes the migrations applied before it in the same upgrade."""
    site = await new_database()
    await replay(site, upto=40)
    broken = tmp_path / "functions"
    broken.mkdir()
    (broken / "zz_broken.sql").write_text("CREATE OR REPLACE FUNCTION zz_broken() RETURNS int LANGUAGE sql "
                                          "AS $$ SELECT no_such_column FROM inventories $$;")
    from nova_async.db import migrate as migrator

    monkeypatch.setattr(migrator, "FUNCTIONS_DIR", broken)
    with pytest.raises(asyncpg.UndefinedColumnError):
        await migrate(site)
    assert await site.fetchval("SELECT max(version) FROM schema_migrations") == 40
    columns = "SELECT column_name FROM information_schema.columns WHERE table_name = $1"
    assert "audit_id" not in [r[0] for r in await site.fetch(columns, "token_revocations")]  # 0041's
    assert "checksum" not in [r[0] for r in await site.fetch(columns, "schema_migrations")]
