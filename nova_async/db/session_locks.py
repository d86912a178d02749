"""Locks that end with the process holding them: PostgreSQL session advisory locks, all held
on one connection of this process's own.

Several copies of a role, on several machines, share one database. Work that must be done by
one copy at a time (scheduling a given instance, a periodic job) is taken by locking its key
here. PostgreSQL releases a session's locks the moment its connection ends, so when the
holder dies the work is free for a survivor without a lease that has to run out first:
- a process killed: its socket closes and the server lets go at once;
- a machine that vanished (power, network): the server's TCP keepalives on this connection
  (KEEPALIVE_* below, about 25 s) notice, which is well inside `service_down_time`.

The holder's side of a lost connection: the connection's end when the server closes it (its
backend terminated), else the heartbeat (`watch()`, a network gone silent) finds it, and from
then on nothing taken earlier counts. `generation` is bumped, `lost` wakes whoever leads a periodic
job so it stops, and the connection is opened again (new takes wait for it).

Within this process the same key is taken once: a session lock is re-entrant in PostgreSQL
(a second pg_try_advisory_lock on the same connection succeeds), so the keys held are also
kept here, and a second taker in this process is refused as another process would be.

Every process also holds, for its lifetime, `key("process", <its incarnation>)`: a uuid new
at each start (`incarnation`), which rows of work in flight record as their worker (an upload,
a volume being made). Whether that work's process still lives is whether this lock is held:
`dead()` tries it (and gives it back at once), so recovery touches only what a dead process
left behind, not the work of a live copy that happens to share the database.

Keys are 64-bit integers made from a namespace and a name (`key("schedule", uuid)`); other
advisory locks in this database are made with hashtextextended() on prefixed text, in other
transactions, and a collision only makes two unrelated takers wait for each other."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections.abc import Iterable

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.db.health import DatabaseHealth, describe

log = structlog.get_logger("db.locks")

HEARTBEAT = 5.0          # seconds between the holder's checks that its connection still lives
HEARTBEAT_ANSWER = 5.0   # seconds a check waits for its answer before the connection counts as lost
CONNECT_TIMEOUT = 10.0
# The server's keepalives on this connection: a holder gone without closing its socket is
# noticed after idle + interval * count seconds.
KEEPALIVE = {"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "3"}

_TAKE = "SELECT k FROM unnest($1::bigint[]) AS k WHERE pg_try_advisory_lock(k)"
_TRY_AND_GIVE_BACK = ("SELECT k FROM unnest($1::bigint[]) AS k "
                      "WHERE CASE WHEN pg_try_advisory_lock(k) THEN pg_advisory_unlock(k) ELSE false END")
_GIVE_BACK = "SELECT pg_advisory_unlock(k) FROM unnest($1::bigint[]) AS k"


def key(namespace: str, name: str) -> int:
    """The lock key for `name` in `namespace`: a signed 64-bit integer, the same in every process."""
    digest = hashlib.blake2b(f"nova-async:{namespace}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


# What asyncpg raises on this connection once it is gone: the socket's errors, class 08, a
# closed connection, and "another operation is in progress" (InternalClientError) when the
# server's last words (its backend terminated) were read before its close (db/pool.py
# `_server_gone` says the same). Each means the connection, and every lock on it, is lost.
_LOST = (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError, asyncpg.InternalClientError)


class SessionLocks:
    def __init__(self, dsn: str, *, health: DatabaseHealth | None = None, name: str = "nova-async") -> None:
        self._dsn = dsn
        self._health = health
        self._application_name = name[:63]
        self._conn: asyncpg.Connection | None = None
        self._io = asyncio.Lock()       # one statement at a time on the connection
        self._held: set[int] = set()
        self._to_take: list[tuple[list[int], asyncio.Future[set[int]], int]] = []
        self._to_give: list[tuple[list[int], asyncio.Future[None] | None]] = []
        self._sender: asyncio.Task[None] | None = None
        self.generation = 0             # bumped each time the connection (and every lock) is lost
        self.lost = asyncio.Event()     # set when it is lost, cleared once it is open again
        self._closed = False
        self.incarnation = uuid.uuid4()  # this run of this process; its lock is held while it runs
        self._own = key("process", str(self.incarnation))

    # --- taking and giving back ----------------------------------------------------------------

    async def take(self, keys: Iterable[int]) -> set[int]:
        """Those of `keys` this process now holds (it did not before); never waits for a holder.
        Raises errors.DatabaseUnavailable when the database cannot be reached."""
        wanted = [k for k in dict.fromkeys(keys) if k not in self._held]
        if not wanted:
            return set()
        self._held.update(wanted)         # no other taker in this process meanwhile
        answer: asyncio.Future[set[int]] = asyncio.get_running_loop().create_future()
        self._to_take.append((wanted, answer, self.generation))
        self._send_soon()
        return await answer

    async def take_one(self, lock_key: int) -> bool:
        return lock_key in await self.take([lock_key])

    async def give_back(self, keys: Iterable[int]) -> None:
        """Let go of `keys` (those this process holds; others are ignored). A lost connection
        has let go of them already."""
        mine = [k for k in dict.fromkeys(keys) if k in self._held]
        if not mine:
            return
        self._held.difference_update(mine)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._to_give.append((mine, done))
        self._send_soon()
        await done

    # Takes and gives back that queue while a statement runs go together in the next two
    # (gives back first): a burst of boots costs two statements per turn of this connection,
    # not two per instance. A taker that is cancelled meanwhile gives back what it was given.

    def _send_soon(self) -> None:
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_queued(), name="session-locks")

    async def _send_queued(self) -> None:
        gives: list = []
        takes: list = []
        try:
            async with self._io:
                while self._to_give or self._to_take:
                    gives, self._to_give = self._to_give, []
                    takes, self._to_take = self._to_take, []
                    await self._send_gives(gives)
                    await self._send_takes(takes)
        except BaseException as exc:      # nobody may be left waiting on a sender that is gone
            stopped = errors.Unavailable(f"the locks' connection stopped: {describe(exc)}")
            for *_, answer in gives + takes + self._to_give + self._to_take:
                if answer is not None and not answer.done():
                    answer.set_exception(stopped)
            self._to_give, self._to_take = [], []
            raise

    async def _send_gives(self, gives: list[tuple[list[int], asyncio.Future[None] | None]]) -> None:
        keys = [k for mine, _ in gives for k in mine]
        if keys and self._conn is not None and not self._conn.is_closed():
            try:
                await self._conn.execute(_GIVE_BACK, keys)
            except _LOST as exc:
                self._drop(describe(exc))
            except Exception as exc:        # not the connection: nothing can be given back on it
                self._drop(f"giving locks back failed: {describe(exc)}")
        for _, done in gives:
            if done is not None and not done.done():
                done.set_result(None)

    async def _send_takes(self, takes: list[tuple[list[int], asyncio.Future[set[int]], int]]) -> None:
        lost = errors.DatabaseUnavailable("cannot take locks: the connection holding them was lost meanwhile")
        for wanted, answer, generation in takes:
            if answer.done() or generation != self.generation:    # cancelled, or asked of a lost connection
                self._held.difference_update(wanted)
                if not answer.done():
                    answer.set_exception(lost)
        takes = [(wanted, answer) for wanted, answer, generation in takes
                 if not answer.done() and generation == self.generation]
        if not takes:
            return
        try:
            conn = await self._connection()
            taken = {r["k"] for r in await conn.fetch(_TAKE, [k for wanted, _ in takes for k in wanted])}
        except Exception as exc:
            if isinstance(exc, _LOST):
                self._drop(describe(exc))
                exc = errors.DatabaseUnavailable(f"cannot take locks: {describe(exc)}")
            for wanted, answer in takes:
                self._held.difference_update(wanted)
                if not answer.done():
                    answer.set_exception(exc)
            return
        for wanted, answer in takes:
            self._held.difference_update(k for k in wanted if k not in taken)
            got = {k for k in wanted if k in taken}
            self._held.update(got)
            if not answer.done():
                answer.set_result(got)
            elif got:                       # its taker is gone: nobody will give them back
                self._held.difference_update(got)
                self._to_give.append((list(got), None))

    async def open(self) -> None:
        """Open the connection now and take this process's own lock (at start, before any work
        records `incarnation`). Raises errors.DatabaseUnavailable when the database cannot be
        reached."""
        try:
            async with self._io:
                await self._connection()
        except _LOST as exc:
            self._drop(describe(exc))
            raise errors.DatabaseUnavailable(f"cannot take locks: {describe(exc)}") from None

    async def dead(self, incarnations: Iterable[uuid.UUID]) -> set[uuid.UUID]:
        """Those of `incarnations` (other processes' runs) whose process no longer holds its
        lock: dead, or cut off from the database. This process's own is never among them."""
        others = {i: key("process", str(i)) for i in incarnations if i != self.incarnation}
        if not others:
            return set()
        # Taken and given back in one statement: no other process can mistake this one for
        # the dead one's holder meanwhile.
        try:
            async with self._io:
                conn = await self._connection()
                found = await conn.fetch(_TRY_AND_GIVE_BACK, list(others.values()))
        except _LOST as exc:
            self._drop(describe(exc))
            raise errors.DatabaseUnavailable(f"cannot look for dead processes: {describe(exc)}") from None
        free = {r["k"] for r in found}
        return {i for i, k in others.items() if k in free}

    def holds(self, lock_key: int) -> bool:
        return lock_key in self._held

    @property
    def server_pid(self) -> int | None:
        """The database backend holding this process's locks now (None: no connection): with
        a key, what another process checks to know the lock is still this one's
        (placement.messages.Holder)."""
        conn = self._conn
        return conn.get_server_pid() if conn is not None and not conn.is_closed() else None

    @contextlib.asynccontextmanager
    async def holding(self, keys: Iterable[int]):
        """Take what can be taken of `keys`, yield that set, give it back at the end."""
        taken = await self.take(keys)
        try:
            yield taken
        finally:
            await asyncio.shield(self.give_back(taken))

    # --- the connection --------------------------------------------------------------------------

    async def _connection(self) -> asyncpg.Connection:
        """Called with `_io` held."""
        if self._closed:
            raise errors.Unavailable("the process is stopping")
        if self._conn is None or self._conn.is_closed():
            self._conn = await asyncpg.connect(
                self._dsn, timeout=CONNECT_TIMEOUT, command_timeout=CONNECT_TIMEOUT,
                server_settings={"application_name": self._application_name, **KEEPALIVE})
            # At once when the server ends it (its backend terminated, the server stopping):
            # another copy can take the locks from then on, not only after the next heartbeat.
            self._conn.add_termination_listener(self._terminated)
            # This process's own lock first: a uuid nobody else knows, so it is always free.
            await self._conn.fetchval("SELECT pg_try_advisory_lock($1)", self._own)
            self.lost.clear()
        return self._conn

    def _drop(self, reason: str) -> None:
        """The connection is gone, and every lock with it."""
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            conn.terminate()
        if self._held or conn is not None:
            log.warning("lost the connection that holds this process's locks; every one is let go",
                        reason=reason, held=len(self._held))
        self._held.clear()
        self.generation += 1
        self.lost.set()
        if self._health is not None:
            self._health.suspect()

    def _terminated(self, conn: asyncpg.Connection) -> None:
        if conn is self._conn and not self._closed:   # not one this process closed itself
            self._drop("the server closed the connection")

    async def watch(self) -> None:
        """Until cancelled: check the connection every HEARTBEAT seconds (run it beside the
        roles). A lock holder learns of a loss from `generation` and `lost`."""
        while True:
            await asyncio.sleep(HEARTBEAT)
            async with self._io:
                if self._conn is None or self._closed:
                    continue
                try:
                    await self._conn.fetchval("SELECT 1", timeout=HEARTBEAT_ANSWER)
                except (*_LOST, asyncio.TimeoutError) as exc:
                    self._drop(describe(exc))

    async def close(self) -> None:
        self._closed = True
        async with self._io:
            conn, self._conn = self._conn, None
            self._held.clear()
            if conn is not None and not conn.is_closed():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(conn.close(), CONNECT_TIMEOUT)
                if not conn.is_closed():
                    conn.terminate()
