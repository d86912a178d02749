"""Which copy of the conductor is scheduling an instance now.

Several conductors (one per `nova-async serve`) consume one queue, and the same request can
reach two of them: RabbitMQ redelivers a cast whose handler died, and every copy recasts,
when it starts and when the database comes back, the boot requests, resizes and unshelves
it finds accepted but unscheduled, which another copy may be scheduling at that moment.
Scheduling an instance twice would claim, and place, it twice.

So an instance is scheduled under its lock, `key("schedule", uuid)` in the process's
SessionLocks (db/session_locks.py), and its row is read again once the lock is held: the
row, not the message, says whether there is anything left to do (still no host, still
building; deleted meanwhile; placed already). A lock another copy holds means that copy is
on it: it finishes, or it dies and its lock goes with its connection at once, and the
request it was handling is redelivered (or recast by the next pick-up) to one that lives.

A boot request whose instance another copy holds leaves it: that copy read the row after
taking the lock, and nothing but compute handing a failed build back (which sends its own
reschedule) makes an instance need scheduling again. A per-instance message (reschedule,
resize, unshelve) waits for the lock instead, for as long as the row says the work is still
to do: the holder may be a stale duplicate that read the row just before the change this
message is about, and would leave the work undone.

The lock is held on one connection; if that connection is lost, so is every lock (its
`generation` moves on), and another copy may take the instance. Whoever writes the host
checks first that the lock is still this process's (`Held.still_ours`): one whose lock went
leaves the instance as it is (no host, its claim standing, which the next scheduling
replaces) for the pick-up that follows a database return.

A decision can outlive the copy that asked for it: a scheduler in another process goes on
claiming for a conductor that has died (a claim whose answer was lost is sent again a minute
later), after the copy that took the instance over has claimed, or after the server was
deleted. So, where copies live in several processes (`fenced`), the question names its
holders (`Held.holders`: this process's lock connection and the instance's key), and
placement writes those claims, and their release, only while that lock is still held
(placement.messages.Holder)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass

import structlog

from nova_async.db.session_locks import SessionLocks, key
from nova_async.placement.messages import Holder

log = structlog.get_logger("conductor")

NAMESPACE = "schedule"
# Waiting for another copy's lock on an instance: a lock held in another process has no
# event to wait on here, so the row and the lock are looked at again after a pause that
# grows to WAIT_MAX (a holder keeps it for one scheduling decision, a second or so).
WAIT_FIRST, WAIT_MAX = 0.05, 1.0


@dataclass(frozen=True)
class Held:
    """The instances this process holds for scheduling, as of lock generation `generation`,
    on the database backend `pid` (None: its claims are not fenced)."""

    uuids: frozenset[str]
    generation: int
    _locks: SessionLocks
    pid: int | None = None

    def __contains__(self, uuid: object) -> bool:
        return uuid in self.uuids

    def __bool__(self) -> bool:
        return bool(self.uuids)

    def still_ours(self) -> bool:
        """False once the locks' connection was lost since they were taken: another copy may
        hold them now."""
        return self._locks.generation == self.generation

    def holders(self, uuids: Iterable[str]) -> dict[str, Holder]:
        """Who holds each of `uuids` (those held), for the scheduler's claims: they are made
        only while this process still holds the instance (placement.messages.Holder)."""
        if self.pid is None:
            return {}
        return {u: Holder(pid=self.pid, key=key(NAMESPACE, u)) for u in uuids if u in self.uuids}


class SchedulingClaims:
    def __init__(self, locks: SessionLocks | None, *, fenced: bool = False) -> None:
        if locks is None:
            raise ValueError("the conductor needs the process's session locks (Deps.locks)")
        self._locks = locks
        self._fenced = fenced

    async def take(self, uuids: Iterable[str]) -> Held:
        """Those of `uuids` nobody else is scheduling, now held by this process; never waits.
        Raises errors.DatabaseUnavailable when the database cannot be reached."""
        generation = self._locks.generation
        by_key = {key(NAMESPACE, u): u for u in uuids}
        taken = await self._locks.take(by_key)
        pid = self._locks.server_pid if self._fenced else None
        return Held(frozenset(by_key[k] for k in taken), generation, self._locks, pid)

    async def give_back(self, held: Held) -> None:
        # A lost connection let go of them already, and this process may hold them again
        # since (another message's, under the new generation): those are not ours to give.
        if held.uuids and held.still_ours():
            await self._locks.give_back(key(NAMESPACE, u) for u in held.uuids)

    @contextlib.asynccontextmanager
    async def holding(self, uuids: Iterable[str]) -> AsyncIterator[Held]:
        """Take what can be taken of `uuids` (see `take`), and give it back at the end."""
        held = await self.take(uuids)
        try:
            yield held
        finally:
            await self.give_back(held)

    @contextlib.asynccontextmanager
    async def waiting_for(self, uuid: str, to_do: Callable[[], Awaitable[bool]]) -> AsyncIterator[Held]:
        """Hold `uuid`, waiting while another copy holds it and `to_do()` still says there is
        work for this message; an empty Held when it says there is none any more."""
        delay = WAIT_FIRST
        while True:
            held = await self.take([uuid])
            if held or not await to_do():
                break
            log.debug("another copy is scheduling the instance; waiting for it", instance_uuid=uuid)
            await asyncio.sleep(delay)
            delay = min(delay * 2, WAIT_MAX)
        try:
            yield held
        finally:
            await self.give_back(held)
