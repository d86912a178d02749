"""Coalesced statements (db/coalesce.py) on a real PostgreSQL: calls that arrive together share
one statement, each gets its own row back, and nothing of one call leaks into another."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from nova_async.db.coalesce import Coalesced
from nova_async.db.pool import PoolClosing, open_pool

RENAME = """
WITH w AS (SELECT * FROM unnest($1::int[], $2::text[]) WITH ORDINALITY AS w(id, name, ord))
UPDATE coalesce_things t SET name = w.name, renamed = renamed + 1 FROM w
 WHERE t.id = ANY ($1::int[]) AND t.id = w.id
RETURNING t.*, w.ord, pg_backend_pid() AS pid, txid_current() AS txid
"""


@pytest.fixture
async def things(pool):
    await pool.execute("CREATE TABLE coalesce_things (id int PRIMARY KEY, name text NOT NULL "
                       "CHECK (name <> ''), renamed int NOT NULL DEFAULT 0)")
    await pool.execute("INSERT INTO coalesce_things (id, name) SELECT g, 'n' || g FROM generate_series(1, 20) g")
    yield pool
    await pool.execute("DROP TABLE coalesce_things")


async def test_calls_made_together_share_one_statement_and_get_their_own_rows(things):
    rename = Coalesced(RENAME)
    rows = await asyncio.gather(*(rename(things, i, f"new-{i}") for i in range(1, 11)))
    assert [r["id"] for r in rows] == list(range(1, 11))
    assert [r["name"] for r in rows] == [f"new-{i}" for i in range(1, 11)]
    assert len({r["txid"] for r in rows}) == 1  # one statement, one transaction
    assert await things.fetchval("SELECT sum(renamed) FROM coalesce_things") == 10


async def test_a_call_the_statement_left_alone_gets_none(things):
    rename = Coalesced(RENAME)
    found, missing = await asyncio.gather(rename(things, 1, "x"), rename(things, 999, "y"))
    assert found["name"] == "x" and missing is None


async def test_the_same_key_twice_goes_in_two_statements_in_call_order(things):
    rename = Coalesced(RENAME)
    first, second = await asyncio.gather(rename(things, 3, "first"), rename(things, 3, "second"))
    assert first["txid"] != second["txid"]
    assert await things.fetchval("SELECT name FROM coalesce_things WHERE id = 3") == "second"
    assert await things.fetchval("SELECT renamed FROM coalesce_things WHERE id = 3") == 2


async def test_an_error_fails_every_call_of_its_statement_and_the_line_goes_on(things):
    rename = Coalesced(RENAME)
    assert (await rename(things, 1, "a"))["name"] == "a"
    results = await asyncio.gather(*(rename(things, i, name) for i, name in ((2, "b"), (3, ""), (4, "d"))),
                                   return_exceptions=True)
    assert all(isinstance(r, asyncpg.CheckViolationError) for r in results)
    names = dict(await things.fetch("SELECT id, name FROM coalesce_things WHERE id <= 4"))
    assert names == {1: "a", 2: "n2", 3: "n3", 4: "n4"}  # the failed statement changed nothing
    assert (await rename(things, 2, "b2"))["name"] == "b2"


async def test_a_caller_gone_before_its_statement_was_sent_is_left_out(things):
    rename = Coalesced(RENAME)
    gone = asyncio.ensure_future(rename(things, 5, "never"))
    await asyncio.sleep(0)   # queued; its statement is not sent yet
    gone.cancel()
    kept = await rename(things, 6, "kept")
    assert kept["name"] == "kept"
    assert await things.fetchval("SELECT name FROM coalesce_things WHERE id = 5") == "n5"


SUFFIXED = """
WITH w AS (SELECT * FROM unnest($1::int[], $2::text[]) WITH ORDINALITY AS w(id, name, ord))
UPDATE coalesce_things t SET name = w.name || $3::text, renamed = renamed + 1 FROM w
 WHERE t.id = ANY ($1::int[]) AND t.id = w.id
RETURNING t.*, w.ord, txid_current() AS txid
"""


async def test_shared_arguments_are_passed_once_and_only_calls_that_agree_share_a_statement(things):
    rename = Coalesced(SUFFIXED, shared=1)
    rows = await asyncio.gather(rename(things, 1, "a", "-x"), rename(things, 2, "b", "-y"),
                                rename(things, 3, "c", "-x"))
    assert [r["name"] for r in rows] == ["a-x", "b-y", "c-x"]
    assert rows[0]["txid"] == rows[2]["txid"] != rows[1]["txid"]


async def test_a_call_on_a_connection_is_a_statement_of_its_own_in_that_transaction(things):
    rename = Coalesced(RENAME)
    async with things.acquire() as conn:
        tx = conn.transaction()
        await tx.start()
        row = await rename(conn, 7, "undone")
        assert row["name"] == "undone" and row["ord"] == 1
        assert row["txid"] == await conn.fetchval("SELECT txid_current()")
        assert await rename(conn, 999, "nobody") is None
        await tx.rollback()
    assert await things.fetchval("SELECT name FROM coalesce_things WHERE id = 7") == "n7"


# every thing whose id is at most the call's bound, one row each
AT_MOST = """
SELECT t.id, w.ord, txid_current() AS txid
  FROM unnest($1::int[]) WITH ORDINALITY AS w(bound, ord) JOIN coalesce_things t ON t.id <= w.bound
 ORDER BY w.ord, t.id
"""


async def test_many_gives_each_call_all_its_rows_in_order_or_none(things):
    at_most = Coalesced(AT_MOST, many=True)
    three, none, one = await asyncio.gather(at_most(things, 3), at_most(things, 0), at_most(things, 1))
    assert [r["id"] for r in three] == [1, 2, 3] and none == [] and [r["id"] for r in one] == [1]
    assert three[0]["txid"] == one[0]["txid"]
    async with things.acquire() as conn:
        assert [r["id"] for r in await at_most(conn, 2)] == [1, 2] and await at_most(conn, 0) == []


async def test_most_bounds_the_calls_of_a_statement_and_the_rest_follow_in_order(things):
    rename = Coalesced(RENAME, most=3)
    rows = await asyncio.gather(*(rename(things, i, f"m{i}") for i in range(1, 8)))
    assert [r["name"] for r in rows] == [f"m{i}" for i in range(1, 8)]
    assert [len({r["txid"] for r in rows[k:k + 3]}) for k in (0, 3, 6)] == [1, 1, 1]
    assert len({r["txid"] for r in rows}) == 3


async def test_a_pool_closing_sends_the_calls_queued_and_refuses_those_after(database):
    rename = Coalesced(RENAME)
    async with open_pool(database, min_size=1, max_size=2) as pool:
        await pool.execute("CREATE TABLE coalesce_things (id int PRIMARY KEY, name text NOT NULL, "
                           "renamed int NOT NULL DEFAULT 0)")
        await pool.execute("INSERT INTO coalesce_things (id, name) VALUES (1, 'n1'), (2, 'n2')")
        queued = asyncio.ensure_future(rename(pool, 1, "sent"))
        await asyncio.sleep(0)   # queued; its statement is not sent yet
    assert (await queued)["name"] == "sent"
    with pytest.raises(PoolClosing):
        await rename(pool, 2, "refused")
    assert not pool.lines   # no sender is left


async def test_each_sends_its_calls_as_one_statement_and_answers_in_order(things):
    rename = Coalesced(RENAME)
    rows = await rename.each(things, [(9, "x9"), (999, "nobody"), (8, "x8")])
    assert [r and r["name"] for r in rows] == ["x9", None, "x8"]
    assert rows[0]["txid"] == rows[2]["txid"]
    async with things.acquire() as conn:
        assert [r["name"] for r in await rename.each(conn, [(10, "c10"), (11, "c11")])] == ["c10", "c11"]
