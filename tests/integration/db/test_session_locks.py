"""Locks that end with their holder (db/session_locks.py), on the real PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg

from nova_async.db import session_locks
from nova_async.db.session_locks import SessionLocks, key
from tests.integration.db import end_backends
from tests.waiting import until


async def test_a_key_is_held_by_one_process_and_freed_when_its_connection_ends(database):
    a, b = SessionLocks(database), SessionLocks(database)
    try:
        k1, k2 = key("schedule", "one"), key("schedule", "two")
        assert await a.take([k1]) == {k1}
        assert await b.take([k1, k2]) == {k2}          # k1 is a's
        assert await a.take([k1]) == set()             # and not taken twice within a process
        assert a.holds(k1) and not b.holds(k1)
        await a.give_back([k1])
        assert await b.take_one(k1)
        # The holder dies (its connection is cut on the server): a third taker gets the keys.
        c = SessionLocks(database, name="nova-async third")   # not among those cut below
        assert await c.take([k1, k2]) == set()
        await end_backends(database, "application_name = 'nova-async' "
                                     "AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory')")
        assert await c.take([k1, k2]) == {k1, k2}
        await c.close()
    finally:
        await a.close()
        await b.close()


@contextlib.asynccontextmanager
async def watched(database, name):
    """Locks of their own (`name`, their connection's application_name) with their heartbeat
    running, and the heartbeat's task; both ended after the block."""
    locks = SessionLocks(database, name=name)
    watching = asyncio.create_task(locks.watch())
    try:
        yield locks, watching
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
        await locks.close()


async def test_a_holder_learns_at_once_that_the_server_ended_its_connection(database, monkeypatch):
    """Not at the next heartbeat (here never): its locks may be another copy's from that
    moment, so whoever leads a job under one must stop then."""
    monkeypatch.setattr(session_locks, "HEARTBEAT", 3600.0)
    async with watched(database, "nova-async ended") as (a, _):
        k = key("schedule", "ended")
        assert await a.take([k]) == {k}
        generation = a.generation
        await end_backends(database, "application_name = 'nova-async ended'")
        await until(lambda: a.lost.is_set(), what="the loss noticed", timeout=10)
        assert a.generation > generation and not a.holds(k)
        assert await a.take([k]) == {k}   # a new connection, the key taken again


async def test_a_wedged_connection_is_a_lost_one_and_the_heartbeat_goes_on(database, monkeypatch):
    """asyncpg's "another operation is in progress" (InternalClientError): what a statement
    meets when the server's last words (its backend terminated) were read before its close.
    The heartbeat counts the connection lost, as a closed one, instead of ending with it."""
    monkeypatch.setattr(session_locks, "HEARTBEAT", 0.05)
    async with watched(database, "nova-async wedged") as (a, watching):
        k = key("schedule", "wedged")
        assert await a.take([k]) == {k}
        generation, wedged = a.generation, a._conn
        real = asyncpg.Connection.fetchval

        async def fetchval(conn, *args, **kwargs):
            if conn is wedged:
                raise asyncpg.InternalClientError("cannot switch to state 12; another operation (2) is in progress")
            return await real(conn, *args, **kwargs)
        monkeypatch.setattr(asyncpg.Connection, "fetchval", fetchval)
        await until(lambda: a.lost.is_set(), what="the loss noticed", timeout=10)
        assert a.generation > generation and not a.holds(k) and wedged.is_closed()
        assert not watching.done()
        assert await a.take([k]) == {k}   # a new connection, the key taken again


async def test_a_process_is_dead_once_its_own_lock_is_free(database):
    a, b = SessionLocks(database), SessionLocks(database)
    try:
        await a.open()
        await b.open()
        assert a.incarnation != b.incarnation
        assert await b.dead([a.incarnation, b.incarnation]) == set()   # a lives; b is b
        await a.close()
        assert await b.dead([a.incarnation, b.incarnation]) == {a.incarnation}
        # Looking gave the dead one's lock back at once: a third looker finds it dead too.
        c = SessionLocks(database)
        assert await c.dead([a.incarnation]) == {a.incarnation}
        await c.close()
    finally:
        await a.close()
        await b.close()


async def test_takes_and_gives_back_that_arrive_together_share_a_statement(database):
    a, b = SessionLocks(database), SessionLocks(database)
    try:
        await a.open()
        sent: list[str] = []
        a._conn.add_query_logger(lambda record: "advisory" in record.query and sent.append(record.query))
        keys = [key("schedule", f"burst-{i}") for i in range(50)]
        assert await b.take([keys[7]]) == {keys[7]}
        answers = await asyncio.gather(*(a.take([k]) for k in keys))
        assert answers == [set() if k == keys[7] else {k} for k in keys]
        assert len(sent) <= 2           # the first alone, the other 49 together
        sent.clear()
        await asyncio.gather(*(a.give_back([k]) for k in keys))
        assert len(sent) <= 2
        assert not any(a.holds(k) for k in keys)
        assert await b.take(keys) == set(keys) - {keys[7]}
    finally:
        await a.close()
        await b.close()


class _HeldAnswers:
    """The locks' connection, its answers held until the test lets them go."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self._conn = conn
        self.answered = asyncio.Event()
        self.release = asyncio.Event()

    async def fetch(self, *args):
        rows = await self._conn.fetch(*args)    # done on the server: the lock is taken
        self.answered.set()
        await self.release.wait()
        return rows


async def test_a_taker_cancelled_while_its_take_is_sent_gives_back_what_it_got(database, monkeypatch):
    a, b = SessionLocks(database), SessionLocks(database)
    try:
        await a.open()
        held = _HeldAnswers(a._conn)

        async def connection():
            return held
        monkeypatch.setattr(a, "_connection", connection)
        k = key("schedule", "cancelled")
        taker = asyncio.create_task(a.take([k]))
        await held.answered.wait()      # the server gave the lock…
        taker.cancel()                  # …and its taker went before hearing so
        await asyncio.gather(taker, return_exceptions=True)
        monkeypatch.undo()
        held.release.set()
        await until(lambda: b.take_one(k), what="the lock given back")
        assert not a.holds(k)
    finally:
        await a.close()
        await b.close()


async def test_a_taker_cancelled_before_its_take_is_sent_leaves_the_key_free(database):
    a, b = SessionLocks(database), SessionLocks(database)
    try:
        await a.open()
        k = key("schedule", "cancelled-early")
        async with a._io:               # its statement waits for the connection…
            taker = asyncio.create_task(a.take([k]))
            await asyncio.sleep(0)
            taker.cancel()              # …and its taker goes meanwhile
        await asyncio.gather(taker, return_exceptions=True)
        assert await a.take([key("schedule", "after")])    # the sender has run since
        assert not a.holds(k)
        assert await b.take_one(k)
    finally:
        await a.close()
        await b.close()


async def test_keys_are_stable_and_namespaced():
    assert key("lease", "x") == key("lease", "x")
    assert key("lease", "x") != key("schedule", "x")
    assert -2**63 <= key("lease", "x") < 2**63
