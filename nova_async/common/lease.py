"""Leases: background jobs that one copy of a role runs at a time, wherever it runs.

Several processes may run the same roles on one database (an active-active site). A job
whose work is global, not tied to this process (tidying the cells, cleaning up volume
reservations, failing builds a dead compute host left behind), should run in one of them:
twice is wasteful at best, and at worst two copies fight over the same rows. A lease is the
session lock `key("lease", name)` (db/session_locks.py): the job runs only while this process
holds it; the other copies try to take it every `retry` seconds, so when the holder dies
(PostgreSQL lets go of its locks when its connection ends: at once for a killed process,
within the keepalives' ~25 s for a vanished machine) a survivor takes the job over well
within `service_down_time`. When this process loses the connection that holds its locks
(`SessionLocks.lost`), the job is cancelled at once: another copy may already hold it.

Without locks (a harness without a database of its own) the job simply runs: one process
alone is what a lease would give anyway."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog

from nova_async.common import errors, metrics
from nova_async.common.flags import set_within
from nova_async.db.session_locks import SessionLocks, key

log = structlog.get_logger("lease")

RETRY = 5.0   # seconds between tries to take a lease another copy holds


async def stopped_within(stopping: asyncio.Event, seconds: float) -> bool:
    """Wait up to `seconds`; True when `stopping` was set meanwhile."""
    return await set_within(stopping, seconds)


def every(seconds: float, job: Callable[[], Awaitable[object]], stopping: asyncio.Event, *,
          what: str, at_once: bool = True) -> Callable[[], Awaitable[None]]:
    """A periodic loop of `job` (at once when `at_once`, then every `seconds`) until
    `stopping`: what Lease.run runs. A failure is logged and tried again next time."""

    async def loop() -> None:
        if not at_once and await stopped_within(stopping, seconds):
            return
        while True:
            try:
                await job()
            except Exception:
                log.exception(f"{what} failed; trying again next time")
            if await stopped_within(stopping, seconds):
                return

    return loop


class Lease:
    """The right to run job `name` in this process, held while its session lock is."""

    def __init__(self, locks: SessionLocks | None, name: str, *, retry: float = RETRY) -> None:
        self.locks = locks
        self.name = name
        self.key = key("lease", name)
        self.retry = retry

    async def run(self, work: Callable[[], Awaitable[None]], stopping: asyncio.Event) -> None:
        """Until `stopping` (or until `work` returns): run `work` whenever this process holds
        the lease; stop it at once when the lease is lost, and try to take it again."""
        if self.locks is None:
            await work()
            return
        metrics.lease_held(self.name, False)
        while not stopping.is_set():
            if not await self._take():
                if await stopped_within(stopping, self.retry):
                    return
                continue
            log.info("leading a job", job=self.name)
            metrics.lease_held(self.name, True)
            try:
                if await self._lead(work, stopping):
                    return
            finally:
                metrics.lease_held(self.name, False)
                await self.locks.give_back([self.key])
            log.warning("lost the lease of a job; another copy may run it now", job=self.name)
            # A copy that just lost its connection lets the others try first.
            if await stopped_within(stopping, self.retry):
                return

    async def _take(self) -> bool:
        assert self.locks is not None
        try:
            return await self.locks.take_one(self.key)
        except (errors.DatabaseUnavailable, errors.Unavailable):
            return False
        except Exception as exc:   # the server refusing a connection (too many, say): try again later
            log.warning("cannot try to take a job's lease", job=self.name, error=str(exc))
            return False

    async def _lead(self, work: Callable[[], Awaitable[None]], stopping: asyncio.Event) -> bool:
        """Run `work` while the lease holds: True when it returned (the role is stopping),
        False when the lease was lost and the work cancelled."""
        assert self.locks is not None
        generation = self.locks.generation
        if not self.locks.holds(self.key):   # lost between the take and now
            return False
        working = asyncio.create_task(work(), name=f"lease:{self.name}")
        losing = asyncio.create_task(self.locks.lost.wait(), name=f"lease:{self.name}:lost")
        try:
            # `lost` wakes this at once; the generation is checked besides, in case the lock
            # was lost and the connection opened again before this task looked.
            while not (working.done() or losing.done()) and self.locks.generation == generation:
                await asyncio.wait([working, losing], timeout=self.retry, return_when=asyncio.FIRST_COMPLETED)
        finally:
            losing.cancel()
            if not working.done():
                working.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await losing
            with contextlib.suppress(asyncio.CancelledError):
                await working
        if working.done() and not working.cancelled() and self.locks.generation == generation:
            working.result()   # the work's own failure, if any, is the caller's
            return True
        return stopping.is_set()


async def periodic(locks: SessionLocks | None, name: str, job: Callable[[], Awaitable[object]], *,
                   seconds: float, stopping: asyncio.Event, at_once: bool = True,
                   retry: float = RETRY) -> None:
    """Run `job` every `seconds` (at once too when `at_once`) in whichever copy holds the
    lease `name`, until `stopping`: a role's global periodic job, one line to start."""
    await Lease(locks, name, retry=retry).run(every(seconds, job, stopping, what=name, at_once=at_once), stopping)
