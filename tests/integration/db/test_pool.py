"""The connection pool (db/pool.py) on a real PostgreSQL: connections are lent and given back
at once, never more than max_size, and one that may be unfit (closed, mid-transaction, its
holder cut off) is closed instead of lent again. A server that goes away is a 503
(errors.DatabaseUnavailable) at once, never a connection of its time lent again, and the
pool (with the probe) carries on once the server is back."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import asyncpg
import pytest

from nova_async.common import errors
from nova_async.db import embedded
from nova_async.db.embedded import EmbeddedPostgres
from nova_async.db.health import DatabaseHealth
from nova_async.db.pool import PoolClosing, open_pool
from tests.waiting import until


async def backend(conn: asyncpg.Connection) -> int:
    return await conn.fetchval("SELECT pg_backend_pid()")


async def running_sleeps(dsn: str) -> int:
    """How many pg_sleep() calls the server is running on this database, asked from aside."""
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                   "AND state = 'active' AND query LIKE '%pg_sleep(%' AND pid <> pg_backend_pid()")
    finally:
        await conn.close()


async def test_the_last_connection_given_back_is_the_next_one_lent(database):
    async with open_pool(database, min_size=2, max_size=4) as pool:
        async with pool.acquire() as conn:
            first = await backend(conn)
        assert await pool.fetchval("SELECT pg_backend_pid()") == first
        assert await pool.fetchrow("SELECT 1 AS one") == (1,)
        assert await pool.fetch("SELECT g FROM generate_series(1, 2) g") == [(1,), (2,)]
        assert await pool.execute("SELECT 1") == "SELECT 1"


async def test_never_more_than_max_size_and_waiters_are_served_in_turn(database):
    async with open_pool(database, min_size=1, max_size=2) as pool:
        order: list[str] = []
        release = asyncio.Event()

        async def hold(name: str) -> None:
            async with pool.acquire() as conn:
                order.append(name)
                await release.wait()
                await conn.fetchval("SELECT 1")

        holders = [asyncio.create_task(hold(n)) for n in ("a", "b")]
        await until(lambda: order, lambda o: len(o) == 2, what="a and b holding connections")
        assert sorted(order) == ["a", "b"]

        async def later(name: str) -> None:
            async with pool.acquire():
                order.append(name)

        waiting = [asyncio.create_task(later(n)) for n in ("c", "d")]
        await until(lambda: len(pool._waiters), lambda n: n == 2, what="c and d in the pool's line")
        assert len(order) == 2  # both wait: two connections are lent out
        release.set()
        await asyncio.gather(*holders, *waiting)
        assert order[2:] == ["c", "d"]


async def test_a_connection_given_back_mid_transaction_or_cut_off_is_closed_not_lent(database):
    async with open_pool(database, min_size=1, max_size=2) as pool:
        async with pool.acquire() as conn:
            await conn.execute("BEGIN")
            mid_transaction = conn
        assert mid_transaction.is_closed()

        started = asyncio.Event()

        async def slow() -> None:
            async with pool.acquire() as conn:
                started.set()
                await conn.execute("SELECT pg_sleep(10)")

        task = asyncio.create_task(slow())
        await started.wait()
        await until(lambda: running_sleeps(database), bool, what="pg_sleep(10) running on the server")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the pool still serves, from a connection no query is running on
        assert await pool.fetchval("SELECT 41 + 1") == 42


async def test_a_connection_the_server_closed_is_replaced(database):
    async with open_pool(database, min_size=1, max_size=1) as pool:
        first = await pool.fetchval("SELECT pg_backend_pid()")
        admin = await asyncpg.connect(database)
        try:
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", first)
        finally:
            await admin.close()
        await until(lambda: [c.is_closed() for c in pool._idle], all, what="the idle connection seen closed")
        assert await pool.fetchval("SELECT pg_backend_pid()") != first


async def test_a_waiter_cancelled_as_a_connection_reaches_it_passes_it_on(database):
    async with open_pool(database, min_size=1, max_size=1) as pool:
        holding = pool.acquire()
        await holding.__aenter__()
        gave_up = asyncio.create_task(pool.fetchval("SELECT 1"))
        patient = asyncio.create_task(pool.fetchval("SELECT 2"))
        await until(lambda: len(pool._waiters), lambda n: n == 2, what="both callers in the pool's line")
        await holding.__aexit__(None, None, None)  # handed to `gave_up`, cancelled before it runs
        gave_up.cancel()
        assert await patient == 2
        with pytest.raises(asyncio.CancelledError):
            await gave_up


async def test_a_waiter_cancelled_as_a_place_frees_passes_the_place_on(database):
    async with open_pool(database, min_size=1, max_size=1) as pool:
        holding = pool.acquire()
        conn = await holding.__aenter__()
        await conn.execute("BEGIN")  # unfit to go back: closed, and its place freed
        gave_up = asyncio.create_task(pool.fetchval("SELECT 1"))
        patient = asyncio.create_task(pool.fetchval("SELECT 2"))
        await until(lambda: len(pool._waiters), lambda n: n == 2, what="both callers in the pool's line")
        await holding.__aexit__(None, None, None)  # `gave_up` is told, and cancelled before it runs
        gave_up.cancel()
        assert await asyncio.wait_for(patient, 10) == 2
        with pytest.raises(asyncio.CancelledError):
            await gave_up


async def test_closing_waits_for_connections_lent_out_and_refuses_new_callers(database):
    async with open_pool(database, min_size=1, max_size=2) as pool:
        holding, done = asyncio.Event(), asyncio.Event()

        async def finishing() -> None:
            async with pool.acquire() as conn:
                holding.set()
                await asyncio.sleep(0.2)   # work in flight while the pool is closed
                await conn.fetchval("SELECT 1")
                done.set()

        task = asyncio.create_task(finishing())
        await holding.wait()
        await pool.close()
        assert done.is_set()
        await task
        with pytest.raises(PoolClosing):
            await pool.fetchval("SELECT 1")


async def test_connections_of_a_server_that_dropped_them_are_never_lent_again(database):
    async with open_pool(database, min_size=3, max_size=4) as pool:
        back = pool.health.next_return()
        started = asyncio.Event()
        before: set[int] = set()

        async def busy() -> None:
            async with pool.acquire() as conn:
                before.add(await backend(conn))
                started.set()
                await conn.execute("SELECT pg_sleep(30)")

        holding = asyncio.create_task(busy())
        await started.wait()
        before.update(await asyncio.gather(*(pool.fetchval("SELECT pg_backend_pid()") for _ in range(2))))
        admin = await asyncpg.connect(database)
        try:  # what a restart does to every connection, as the server sees it
            await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        finally:
            await admin.close()
        with pytest.raises(errors.DatabaseUnavailable) as lost:
            await holding
        assert lost.value.status == 503
        assert pool.health.outage() is not None
        for _ in range(3):  # not one of the connections from before, idle as they looked
            assert await pool.fetchval("SELECT pg_backend_pid()") not in before
        assert pool.health.outage() is None and back.is_set()


@contextlib.asynccontextmanager
async def own_server(work_dir):
    """A PostgreSQL of the test's own, to stop and start (the shared one serves other tests)."""
    pg = EmbeddedPostgres(work_dir / f"pool-{uuid.uuid4().hex[:8]}", durable=False)
    await pg.start()
    try:
        yield pg
    finally:
        await pg.stop()  # when it still runs


async def test_a_server_that_is_away_fails_calls_at_once_and_is_used_again_when_back(work_dir):
    async with own_server(work_dir) as pg:
        health = DatabaseHealth(probe_interval=0.05, retry_interval=0.05)
        async with open_pool(pg.dsn, min_size=2, max_size=4, health=health) as pool:
            probe = asyncio.create_task(health.watch(), name="test:probe")
            try:
                before = await pool.fetchval("SELECT pg_backend_pid()")
                await embedded._run(*pg.prefix, embedded.find_bin("pg_ctl"), "-D", str(pg.data),
                                    "-m", "immediate", "-w", "stop")
                # The probe notices, with no call made.
                await until(health.outage, lambda outage: outage is not None, what="the outage noticed")
                back = health.next_return()
                for _ in range(3):  # refused, every time: no call waits for the server
                    with pytest.raises(errors.DatabaseUnavailable):
                        await asyncio.wait_for(pool.fetchval("SELECT 1"), 30)
                await pg.start()
                await asyncio.wait_for(back.wait(), 30)  # the probe saw it come back
                assert health.outage() is None
                assert await pool.fetchval("SELECT pg_backend_pid()") != before
            finally:
                probe.cancel()
                await asyncio.gather(probe, return_exceptions=True)
