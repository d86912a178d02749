"""The connection pool every role shares, with JSON columns decoded to Python values.

A small pool of our own over asyncpg's connections, not asyncpg's Pool. asyncpg hands out a
proxy object and gives each connection back through a task of its own (asyncio.shield), so
that a cancelled caller still returns it; a release that resets session state needs that.
Nothing here leaves session state on a connection it gives back (a LISTEN stops, a session
advisory lock is unlocked, in `finally`, before the block ends; settings are SET LOCAL), so
a connection goes back as it is, at once, to whoever waits longest or to the top of the idle
stack. Measured after 20 ms of idle, as most requests to a lab box arrive: `SELECT 1` through
asyncpg's pool took 0.68 ms, 0.45 ms on a connection held outright.

What makes a connection unfit to go back: it is closed, it is inside a transaction, or its
holder was cancelled or timed out while holding it (a query may have been cut off midway,
and asyncpg is still cancelling it on the server; an unlock in `finally` may not have run).
Such a connection is closed instead, which also drops whatever it held on the server, and
the next caller opens a new one in its place.

The server going away (a restart, a crash, a failover) is the pool's business too, and this is
the one place it is recognised: an asyncpg error that says the connection or the server is
gone, met on the way out of `acquire()` or while connecting, leaves as
errors.DatabaseUnavailable (503 over HTTP, with Retry-After), and is reported to the
DatabaseHealth the pool shares with the rest of the process. Connections opened before
such a loss are not lent again: those idle are closed at once, those lent out when they
come back (asyncpg may not have read the server's goodbye on them yet). Connecting has a
deadline, so a server that does not answer fails a request instead of holding it."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import msgspec

from nova_async.common import errors
from nova_async.db import pool_order
from nova_async.db.health import DatabaseHealth, describe
from nova_async.db.lines import Lines

COMMAND_TIMEOUT = 60.0
CONNECT_TIMEOUT = 10.0  # seconds; beyond it the server counts as not answering


async def _init(conn: asyncpg.Connection) -> None:
    for kind in ("json", "jsonb"):
        await conn.set_type_codec(kind, schema="pg_catalog", encoder=lambda v: msgspec.json.encode(v).decode(),
                                  decoder=msgspec.json.decode, format="text")
    # asyncpg looks up each array type the first time a connection meets it: a round trip
    # whose statement costs PostgreSQL milliseconds to plan, in the middle of a request. One
    # statement naming every array type the queries use does it once, here.
    await conn.prepare(_ARRAY_TYPES)


_ARRAY_TYPES = ("SELECT $1::uuid[], $2::bigint[], $3::int[], $4::bool[], $5::text[], $6::float8[], "
                "$7::jsonb[], $8::timestamptz[]")


class PoolClosing(errors.Unavailable):
    """The pool is closing: the service is stopping."""


# What asyncpg raises when the server is gone or will not take connections now: class 08
# (connection exceptions, ConnectionDoesNotExistError among them), the shutdowns and the
# start-up/recovery refusal of class 57, too many connections, and the socket's own errors.
# Not QueryCanceledError (57014: a statement timeout), and not a timeout while a query runs:
# that is the caller's deadline, and the connection is merely unfit.
_GONE = (asyncpg.PostgresConnectionError, asyncpg.AdminShutdownError, asyncpg.CrashShutdownError,
         asyncpg.CannotConnectNowError, asyncpg.TooManyConnectionsError, ConnectionError)


def _server_gone(exc: BaseException, conn: asyncpg.Connection | None) -> bool:
    """Whether `exc` (met on `conn`, or while connecting when None) means the server went away."""
    if isinstance(exc, _GONE):
        return True
    if conn is None:  # connecting: refused, no such socket, no answer in time
        return isinstance(exc, OSError)
    # asyncpg's "another operation is in progress": an idle connection the server wrote its
    # last words to ("terminating connection due to unexpected postmaster exit") waits for
    # a ReadyForQuery that never comes, and asyncpg may not have read the close yet.
    if isinstance(exc, asyncpg.InternalClientError):
        return True
    # asyncpg's "connection is closed": used after the server closed it
    return isinstance(exc, asyncpg.InterfaceError) and conn.is_closed()


def _database_name(dsn: str) -> str:
    parts = urlsplit(dsn)
    return parts.path.lstrip("/") or parse_qs(parts.query).get("dbname", ["the database"])[0]


class Pool:
    """At most `max_size` connections, `min_size` of them opened at start. `rank`: where its
    connections come in the order one task may hold several (pool_order)."""

    def __init__(self, dsn: str, *, min_size: int, max_size: int, health: DatabaseHealth | None = None,
                 rank: int = pool_order.API) -> None:
        self._dsn = dsn
        self.rank = rank
        self.name = _database_name(dsn)
        self.health = health if health is not None else DatabaseHealth()
        self.health.register(dsn)
        self._min_size = min_size
        self._max_size = max_size
        self._idle: list[asyncpg.Connection] = []         # a stack: the warmest on top
        self._size = 0                                    # open, or being opened
        self._waiters: collections.deque[asyncio.Future[asyncpg.Connection | None]] = collections.deque()
        self._closing = False
        self._all_back = asyncio.Event()
        self._all_back.set()
        self._out = 0                                     # handed out and not back yet
        # Bumped when the server is found gone: a connection from an earlier epoch is not
        # lent again.
        self._epoch = 0
        self._epoch_of: dict[asyncpg.Connection, int] = {}
        # The lines of the statements sent for many callers at once (coalesce.py,
        # shared_read.py) and their senders: open_pool opens them with the pool and closes
        # them, every sender done, before the pool closes.
        self.lines = Lines("db", lambda: PoolClosing("the database pool is closing"))

    async def start(self) -> None:
        for _ in range(self._min_size):
            self._size += 1
            try:
                self._idle.append(await self._open())
            except BaseException:
                self._size -= 1
                await self.close()
                raise

    async def _open(self) -> asyncpg.Connection:
        conn = None
        try:
            conn = await asyncpg.connect(self._dsn, command_timeout=COMMAND_TIMEOUT, timeout=CONNECT_TIMEOUT)
            await _init(conn)
        except BaseException as exc:
            if conn is not None:
                conn.terminate()
            if _server_gone(exc, conn):
                raise self._lost(exc) from exc
            raise
        self.health.reached(self._dsn)
        self._epoch_of[conn] = self._epoch
        return conn

    def _lost(self, exc: BaseException) -> errors.DatabaseUnavailable:
        """The server went away: nothing opened before now is lent again. The error to raise."""
        reason = "the server closed the connection" if isinstance(exc, asyncpg.InternalClientError) else describe(exc)
        self.health.lost(self._dsn, reason)
        self._epoch += 1
        idle, self._idle = self._idle, []
        for conn in idle:
            self._forget(conn)
        return errors.DatabaseUnavailable(f"The database is unavailable ({reason}); try again shortly.")

    def _forget(self, conn: asyncpg.Connection) -> None:
        """Close a connection of this pool and free its place."""
        conn.terminate()
        self._epoch_of.pop(conn, None)
        self._size -= 1

    @property
    def max_size(self) -> int:
        return self._max_size

    def is_closing(self) -> bool:
        return self._closing

    def acquire(self) -> _Held:
        """`async with pool.acquire() as conn:` a connection for the block."""
        return _Held(self)

    async def _take(self) -> asyncpg.Connection:
        while True:
            if self._closing:
                raise PoolClosing("the database pool is closing")
            if self._idle:
                conn = self._idle.pop()
                if conn.is_closed():  # the server went away while it sat here
                    self._forget(conn)
                    continue
                return self._lend(conn)
            if self._size < self._max_size:
                self._size += 1
                try:
                    conn = await self._open()
                except BaseException:
                    self._size -= 1
                    self._wake_one()  # its place is free again: somebody waiting may try
                    raise
                return self._lend(conn)
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                handed = await waiter
            except BaseException:
                # cancelled just as its turn came: what it was given goes to the next in line
                if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                    if waiter.result() is None:
                        self._wake_one()
                    else:
                        self._give_back(waiter.result(), fit=True)
                raise
            if handed is not None:
                return handed  # still counted as lent: it went from one holder to the next
            # None: a place was freed, not a connection; go round and open one

    def _lend(self, conn: asyncpg.Connection) -> asyncpg.Connection:
        self._out += 1
        self._all_back.clear()
        return conn

    def _give_back(self, conn: asyncpg.Connection, *, fit: bool) -> None:
        if (not fit or self._closing or conn.is_closed() or conn.is_in_transaction()
                or self._epoch_of.get(conn) != self._epoch):
            self._forget(conn)
            self._out -= 1
            self._wake_one()
        else:
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_result(conn)  # lent on, without a stop in the idle stack
                    return
            self._idle.append(conn)
            self._out -= 1
        if self._out == 0:
            self._all_back.set()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def close(self) -> None:
        """Refuse new callers, wait for every connection lent out, close them all."""
        self._closing = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(PoolClosing("the database pool is closing"))
        await self._all_back.wait()
        idle, self._idle = self._idle, []
        self._size -= len(idle)
        self._epoch_of.clear()
        for conn in idle:
            try:
                await conn.close(timeout=5)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncio.TimeoutError):
                conn.terminate()

    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        async with self.acquire() as conn:
            return await conn.fetch(query, *args)

    async def fetchrow(self, query: str, *args: Any) -> asyncpg.Record | None:
        async with self.acquire() as conn:
            return await conn.fetchrow(query, *args)

    async def fetchval(self, query: str, *args: Any, column: int = 0) -> Any:
        async with self.acquire() as conn:
            return await conn.fetchval(query, *args, column=column)

    async def execute(self, query: str, *args: Any) -> str:
        async with self.acquire() as conn:
            return await conn.execute(query, *args)


class _Held:
    """One `acquire()`: the connection is taken on entry and given back (or closed) on exit."""

    __slots__ = ("_pool", "_conn", "_held_before")

    def __init__(self, pool: Pool) -> None:
        self._pool = pool
        self._conn: asyncpg.Connection | None = None
        self._held_before: tuple = ()

    async def __aenter__(self) -> asyncpg.Connection:
        before = pool_order.taking(self._pool)
        try:
            self._conn = await self._pool._take()
        except BaseException:
            pool_order.given_back(before)
            raise
        self._held_before = before
        return self._conn

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, _tb: object) -> None:
        conn, self._conn = self._conn, None
        assert conn is not None
        pool_order.given_back(self._held_before)
        if exc is not None and _server_gone(exc, conn):
            self._pool._give_back(conn, fit=False)
            raise self._pool._lost(exc) from exc
        # cut off while holding it: a query may still be running or being cancelled
        fit = kind is None or not issubclass(kind, (asyncio.CancelledError, asyncio.TimeoutError))
        self._pool._give_back(conn, fit=fit)


# Connections a process keeps to one database at most. Its statements are coalesced
# (lines.py), so a burst of hundreds of boots keeps only a few busy at once, and the database
# on a small box does its work no faster over more. Each one more is a backend of ~7 MiB
# (its catalog cache, compiled functions, plans), and opened in a burst it costs its
# start-up work then. A listener (token revocations, the data plane, a cell's event feed)
# holds one of them for good. Measured (200 boots over 20 hosts; 2,000 over 1,000 hosts): 5
# to the API database and 4 to a cell's against 10 and 8, the same rates and CPU per boot,
# and the private PostgreSQL's PSS ~40 MiB lower.
MAX_CONNECTIONS = 5


@contextlib.asynccontextmanager
async def open_pool(dsn: str, *, min_size: int = 2, max_size: int = MAX_CONNECTIONS,
                    health: DatabaseHealth | None = None, rank: int = pool_order.API) -> AsyncIterator[Pool]:
    pool = Pool(dsn, min_size=min_size, max_size=max_size, health=health, rank=rank)
    try:
        await pool.start()
    except errors.DatabaseUnavailable as exc:
        raise errors.DatabaseUnavailable(f"cannot connect to the database: {describe(exc.__cause__ or exc)}") from exc
    except (OSError, asyncpg.PostgresError) as exc:
        raise errors.Unavailable(f"cannot connect to the database: {exc}") from exc
    try:
        async with pool.lines:
            yield pool
    finally:
        await pool.close()
