"""Statistics for tables that grow fast: a table is analyzed when it holds twice the rows it
held at its last statistics (db/statistics.py), and left alone otherwise."""

from __future__ import annotations

from nova_async.db import statistics
from tests.harness import running
from tests.waiting import until


async def grow(pool, rows):
    async with pool.acquire() as conn:
        await conn.execute("INSERT INTO growing SELECT g FROM generate_series(1, $1) g", rows)
        # counted changes reach the shared statistics at a transaction's end, at most once a second
        await conn.execute("SELECT pg_stat_force_next_flush()")
        await conn.execute("SELECT 1")


async def analyzed(pool):
    return await pool.fetchval("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'growing'")


async def test_a_table_is_analyzed_each_time_it_doubles(pool):
    await pool.execute("CREATE TABLE growing (id int)")
    await grow(pool, statistics.LEAST_ROWS - 1)
    assert "growing" not in await statistics.refresh([pool])   # too few rows to matter yet
    await grow(pool, 2)
    assert "growing" in await statistics.refresh([pool])
    assert await analyzed(pool) == 1
    assert "growing" not in await statistics.refresh([pool])
    await grow(pool, statistics.LEAST_ROWS - 10)   # not yet doubled
    assert "growing" not in await statistics.refresh([pool])
    await grow(pool, 20)
    assert "growing" in await statistics.refresh([pool])
    assert await analyzed(pool) == 2


async def test_churn_without_growth_is_left_to_autovacuum(pool):
    # The event stream's shape: as many rows added as pruned, and rows updated in place.
    await pool.execute("CREATE TABLE growing (id int)")
    kept = 2 * statistics.LEAST_ROWS
    await grow(pool, kept)
    assert "growing" in await statistics.refresh([pool])
    for turn in range(1, 4):
        async with pool.acquire() as conn:
            await conn.execute("INSERT INTO growing SELECT g FROM generate_series($1 + 1, $1 + $2) g",
                               turn * kept, kept)
            await conn.execute("DELETE FROM growing WHERE id <= $1", turn * kept)
            await conn.execute("UPDATE growing SET id = id")
            await conn.execute("SELECT pg_stat_force_next_flush()")
            await conn.execute("SELECT 1")
        assert "growing" not in await statistics.refresh([pool])
    assert await analyzed(pool) == 1


async def test_the_conductor_keeps_every_database_analyzed(pool, cell1, tmp_path):
    """One conductor (a lease) looks at the API database and each cell's, every few seconds."""
    for db in (pool, cell1):
        await db.execute("CREATE TABLE growing (id int)")
    async with running(pool, ["conductor"], tmp_path):
        for db in (pool, cell1):
            await grow(db, 2 * statistics.LEAST_ROWS)
        for db in (pool, cell1):
            await until(lambda: analyzed(db), lambda n: n and n >= 1, what="statistics of the grown table",
                        timeout=4 * statistics.INTERVAL + 10)


class CountingLooks:
    """The pool, counting the looks for tables that doubled (the statistics function's calls)."""

    def __init__(self, pool):
        self.pool = pool
        self.looks = 0

    async def fetchval(self, query, *args):
        return await self.pool.fetchval(query, *args)

    async def fetch(self, query, *args):
        self.looks += query == statistics.Q.refresh
        return await self.pool.fetch(query, *args)


async def test_a_database_with_nothing_inserted_since_the_last_look_is_not_looked_at(pool):
    await pool.execute("CREATE TABLE growing (id int)")
    counted, seen = CountingLooks(pool), {}
    await grow(pool, statistics.LEAST_ROWS - 1)
    assert await statistics.refresh([counted], seen) == []   # looked at: too few rows yet
    assert counted.looks == 1
    # Updates and deletes do not make a table grow: no look. (An ANALYZE's statistics are rows
    # inserted too, in pg_statistic: a look that analyzed something is followed by one more.)
    async with pool.acquire() as conn:
        await conn.execute("UPDATE growing SET id = id + 1")
        await conn.execute("DELETE FROM growing WHERE id < 10")
        await conn.execute("SELECT pg_stat_force_next_flush()")
        await conn.execute("SELECT 1")
    assert await statistics.refresh([counted], seen) == []
    assert counted.looks == 1
    # Rows inserted: looked at again, and the table that doubled is analyzed.
    await grow(pool, 20)
    assert "growing" in await statistics.refresh([counted], seen)
    assert counted.looks == 2 and await analyzed(pool) == 1
    # Without `seen`, every call looks.
    await statistics.refresh([counted])
    assert counted.looks == 3
