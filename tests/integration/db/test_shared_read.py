"""Shared reads (db/shared_read.py) on a real PostgreSQL: identical lookups made together are
one statement, and no call is answered by a statement that was already on its way when it
was made, so a read still sees what was committed before it."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from nova_async.db.shared_read import SharedRead
from tests.waiting import statement_running

# `n` tells statements apart: one nextval per statement (a row per statement here)
LOOKUP = "SELECT t.id, t.name, nextval('shared_read_statements') AS n FROM shared_read_things t WHERE t.id = $1"
SLOW_LOOKUP = ("SELECT t.id, t.name, nextval('shared_read_statements') AS n, pg_sleep(0.3) AS slept "
               "FROM shared_read_things t WHERE t.id = $1")


@pytest.fixture
async def things(pool):
    await pool.execute("CREATE SEQUENCE shared_read_statements")
    await pool.execute("CREATE TABLE shared_read_things (id int PRIMARY KEY, name text NOT NULL)")
    await pool.execute("INSERT INTO shared_read_things SELECT g, 'n' || g FROM generate_series(1, 5) g")
    yield pool
    await pool.execute("DROP TABLE shared_read_things")
    await pool.execute("DROP SEQUENCE shared_read_statements")


async def test_identical_reads_made_together_are_one_statement_and_others_their_own(things):
    lookup = SharedRead(LOOKUP)
    rows = await asyncio.gather(*(lookup(things, 1) for _ in range(10)), lookup(things, 2), lookup(things, 99))
    assert {r["n"] for r in rows[:10]} == {rows[0]["n"]} and all(r["name"] == "n1" for r in rows[:10])
    assert rows[10]["name"] == "n2" and rows[10]["n"] != rows[0]["n"]
    assert rows[11] is None


async def test_many_rows_are_every_row(things):
    lookup = SharedRead("SELECT id FROM shared_read_things WHERE id <= $1 ORDER BY id", many=True)
    first, second = await asyncio.gather(lookup(things, 3), lookup(things, 3))
    assert [r["id"] for r in first] == [1, 2, 3] and first == second


async def test_a_read_made_while_one_is_on_its_way_waits_for_a_statement_of_its_own(things):
    lookup = SharedRead(SLOW_LOOKUP)
    early = asyncio.create_task(lookup(things, 1))
    await statement_running(things, "pg_sleep(0.3)", waiting_on="PgSleep")  # its snapshot taken
    await things.execute("UPDATE shared_read_things SET name = 'changed' WHERE id = 1")
    late = await lookup(things, 1)
    assert late["name"] == "changed"  # what was committed before it asked
    assert (await early)["name"] == "n1" and late["n"] != (await early)["n"]


async def test_an_error_reaches_every_call_of_its_statement_and_the_next_read_goes_on(things):
    lookup = SharedRead("SELECT 1 / $1::int AS x")
    results = await asyncio.gather(lookup(things, 0), lookup(things, 0), return_exceptions=True)
    assert all(isinstance(r, asyncpg.DivisionByZeroError) for r in results)
    assert (await lookup(things, 1))["x"] == 1


async def test_a_caller_that_gives_up_leaves_the_others_their_answer(things):
    lookup = SharedRead(SLOW_LOOKUP)
    leaving = asyncio.create_task(lookup(things, 2))
    staying = asyncio.create_task(lookup(things, 2))
    await statement_running(things, "pg_sleep(0.3)")   # the two calls' one statement
    leaving.cancel()
    assert (await staying)["name"] == "n2"
    with pytest.raises(asyncio.CancelledError):
        await leaving


async def test_on_a_connection_a_read_is_its_own_inside_the_callers_transaction(things):
    lookup = SharedRead(LOOKUP)
    async with things.acquire() as conn, conn.transaction():
        await conn.execute("UPDATE shared_read_things SET name = 'mine' WHERE id = 3")
        assert (await lookup(conn, 3))["name"] == "mine"
    assert (await lookup(things, 3))["name"] == "mine"
