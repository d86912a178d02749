"""The one way a test waits for something it can only look at, not be told of: ask again
until the answer is the one wanted, within a bound that is a safety net, never a timing
claim. A test that can wait on an event (an asyncio.Event, a message, a log line) does that
instead.

    server = await until(lambda: show(h, sid), lambda s: s["status"] == "ACTIVE", what="server ACTIVE")

When the bound passes, the failure says what was awaited and shows the last answer seen,
which is what one needs to tell a slow system from a wrong one."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# Generous: under pytest-xdist four workers share two cores with the databases and libvirt.
TIMEOUT = 30.0
NOTHING = object()


async def until(probe: Callable[[], Awaitable[T] | T], done: Callable[[T], bool] = bool, *,
                what: str = "the condition", timeout: float = TIMEOUT, interval: float = 0.02,
                show: Callable[[T], str] = repr) -> T:
    """Call `probe` (a coroutine function or a plain one) until `done` holds for what it
    returns, and return that. Its errors are not caught: a probe that may fail on the way
    (a 503, a connection being re-made) catches what it expects itself. `show` renders the
    last value for the failure (a console's tail, say, rather than its repr)."""
    last: Any = NOTHING
    bound = asyncio.timeout(timeout)
    try:
        async with bound:
            while True:
                value = probe()
                if isinstance(value, Awaitable):
                    value = await value
                last = value
                if done(value):
                    return value
                await asyncio.sleep(interval)
    except TimeoutError:
        if not bound.expired():
            raise  # the probe's own
        seen = "nothing (the probe never answered)" if last is NOTHING else show(last)
        raise AssertionError(f"waited {timeout:g} s for {what}; last seen: {seen}") from None


LOCK_WAITERS = ("SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'")


def _aside(query: Awaitable[T]) -> Awaitable[T]:
    """A look at the database in a task of its own: the test may hold a connection of the
    same pool as another process would, and a task holding one takes no second one from it
    (db/pool_order.py)."""
    return asyncio.ensure_future(query)


async def waiting_for_locks(pool, count: int = 1, *, what: str = "a session waiting for a lock",
                            timeout: float = TIMEOUT) -> None:
    """Until `count` sessions on `pool`'s database wait for a lock (a row's, an advisory one):
    the point at which a test holding a lock has provably held a request up, and may say so."""
    await until(lambda: _aside(pool.fetchval(LOCK_WAITERS)), lambda waiting: waiting >= count,
                what=what, timeout=timeout)


RUNNING = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
           "AND state = 'active' AND pid <> pg_backend_pid() AND strpos(query, $1) > 0 "
           "AND ($2::text IS NULL OR wait_event = $2)")


async def statement_running(pool, fragment: str, *, waiting_on: str | None = None,
                            timeout: float = TIMEOUT) -> None:
    """Until PostgreSQL shows a statement containing `fragment` running on `pool`'s database:
    the point at which a call has provably gone out, and a test may act while it is out.

    "Active" starts at the statement's parse, before its snapshot is taken (asyncpg prepares
    first). A test that needs the snapshot taken waits for a wait event the statement can
    only reach while executing: `waiting_on="PgSleep"` for one that calls pg_sleep."""
    await until(lambda: _aside(pool.fetchval(RUNNING, fragment, waiting_on)), lambda running: running > 0,
                what=f"a statement with {fragment!r} running", timeout=timeout)


@contextlib.contextmanager
def tasks_shown_after(seconds: float, where: Path):
    """If the block is still running after `seconds`, write every task's stack to `where`
    (and stderr) and carry on: for a test that has been seen to hang where nothing bounds."""
    def show() -> None:
        with where.open("a") as out:
            for task in asyncio.all_tasks():
                print(f"--- {task!r}", file=out)
                task.print_stack(file=out)
        print(f"tasks still running after {seconds:g} s: {where}", file=sys.__stderr__)

    timer = asyncio.get_running_loop().call_later(seconds, show)
    try:
        yield
    finally:
        timer.cancel()
