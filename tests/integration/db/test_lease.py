"""Leases (common/lease.py) on the real PostgreSQL: two processes' locks, one job; the job
runs in one of them at a time, and moves to the other when its holder's connection dies."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from nova_async.common import lease
from nova_async.db import session_locks
from nova_async.db.session_locks import SessionLocks
from tests.integration.db import end_backends
from tests.waiting import until


@pytest.fixture
def quick_heartbeat(monkeypatch):
    # Checked often; each check still waits as long as usual for its answer: on a loaded
    # machine a live connection can take longer than the interval to answer.
    monkeypatch.setattr(session_locks, "HEARTBEAT", 0.2)


class Copy:
    """One process's copy of the job: its locks, their heartbeat, and how often it ran."""

    def __init__(self, database: str, name: str, retry: float = 0.2) -> None:
        self.retry = retry
        self.locks = SessionLocks(database, name=name)
        self.runs = 0
        self.running = False
        self.stopping = asyncio.Event()

    async def job(self) -> None:
        self.runs += 1

    async def run(self) -> None:
        job_lease = lease.Lease(self.locks, "test-job", retry=self.retry)
        work = lease.every(0.05, self.job, self.stopping, what="the test job")

        async def tracked() -> None:
            self.running = True
            try:
                await work()
            finally:
                self.running = False

        async with asyncio.TaskGroup() as tg:
            watching = tg.create_task(self.locks.watch(), name="test:locks")
            await job_lease.run(tracked, self.stopping)
            watching.cancel()


async def test_the_job_runs_in_one_copy_and_moves_when_its_holder_dies(database, quick_heartbeat):
    # a, once it lost its connection, waits longer than b between tries: b gets there first.
    a, b = Copy(database, "lease-a", retry=3.0), Copy(database, "lease-b")
    async with asyncio.TaskGroup() as tg:
        tg.create_task(a.run(), name="test:copy-a")
        await until(lambda: a.runs, lambda n: n >= 3, what="a leads the job")
        tg.create_task(b.run(), name="test:copy-b")
        await asyncio.sleep(0.5)   # b keeps trying meanwhile
        assert b.runs == 0 and not b.running

        # a's connection dies on the server's side (a process killed, a machine gone): a stops
        # the job at once, b takes it over.
        await end_backends(database, "application_name = 'lease-a'")
        await until(lambda: b.runs, lambda n: n >= 3, what="b took the job over")
        assert not a.running
        # a comes back (its locks reconnect) but b holds the lease: a only waits.
        runs = a.runs
        await asyncio.sleep(0.5)
        assert a.runs == runs and not a.running

        # b stops for good (its connection closed): a leads again.
        b.stopping.set()
        await until(lambda: not b.running, what="b's job stopped")
        await b.locks.close()
        await until(lambda: a.runs, lambda n: n >= runs + 3, what="a leads again")
        a.stopping.set()
    await a.locks.close()


async def test_without_locks_the_job_simply_runs():
    stopping = asyncio.Event()
    ran = asyncio.Event()

    async def job() -> None:
        ran.set()
        stopping.set()

    await lease.Lease(None, "alone").run(lease.every(10, job, stopping, what="job"), stopping)
    assert ran.is_set()


async def test_a_stopping_role_stops_waiting_for_a_lease(database):
    holder, waiter = SessionLocks(database), SessionLocks(database)
    try:
        assert await holder.take_one(lease.Lease(holder, "held").key)
        stopping = asyncio.Event()
        running = asyncio.create_task(
            lease.Lease(waiter, "held", retry=0.1).run(lease.every(1, asyncio.sleep, stopping, what="x"), stopping))
        await asyncio.sleep(0.3)
        assert not running.done()
        stopping.set()
        async with asyncio.timeout(10):
            await running
    finally:
        with contextlib.suppress(Exception):
            await holder.close()
        await waiter.close()
