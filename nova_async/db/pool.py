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
the next caller opens a new one in its place."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import msgspec

from nova_async.common import errors

COMMAND_TIMEOUT = 60.0


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


class Pool:
    """At most `max_size` connections, `min_size` of them opened at start."""

    def __init__(self, dsn: str, *, min_size: int, max_size: int) -> None:
        self._dsn = dsn
        self._min_size = min_size
        self._max_size = max_size
        self._idle: list[asyncpg.Connection] = []         # a stack: the warmest on top
        self._size = 0                                    # open, or being opened
        self._waiters: collections.deque[asyncio.Future[asyncpg.Connection | None]] = collections.deque()
        self._closing = False
        self._all_back = asyncio.Event()
        self._all_back.set()
        self._out = 0                                     # handed out and not back yet

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
        conn = await asyncpg.connect(self._dsn, command_timeout=COMMAND_TIMEOUT)
        try:
            await _init(conn)
        except BaseException:
            conn.terminate()
            raise
        return conn

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
                    self._size -= 1
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
        if not fit or self._closing or conn.is_closed() or conn.is_in_transaction():
            conn.terminate()
            self._size -= 1
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

    __slots__ = ("_pool", "_conn")

    def __init__(self, pool: Pool) -> None:
        self._pool = pool
        self._conn: asyncpg.Connection | None = None

    async def __aenter__(self) -> asyncpg.Connection:
        self._conn = await self._pool._take()
        return self._conn

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        conn, self._conn = self._conn, None
        assert conn is not None
        # cut off while holding it: a query may still be running or being cancelled
        fit = kind is None or not issubclass(kind, (asyncio.CancelledError, asyncio.TimeoutError))
        self._pool._give_back(conn, fit=fit)


@contextlib.asynccontextmanager
async def open_pool(dsn: str, *, min_size: int = 2, max_size: int = 20) -> AsyncIterator[Pool]:
    pool = Pool(dsn, min_size=min_size, max_size=max_size)
    try:
        await pool.start()
    except (OSError, asyncpg.PostgresError) as exc:
        raise errors.Unavailable(f"cannot connect to the database: {exc}") from exc
    try:
        yield pool
    finally:
        await pool.close()
