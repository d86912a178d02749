"""One statement for many callers: per-instance writes that arrive together go together.

Much of what a boot costs, in this process and in PostgreSQL, is per round trip rather than
per row: a statement sent, parsed, planned, executed, committed and answered, and the
tasks woken around it. When many instances reach the same step at once (a burst of boots),
a `Coalesced` statement sends the calls that queued while its previous statement ran as one
statement over arrays. An idle line sends a lone call at once: nothing waits for company.

The query takes one array per argument of a call, in the call's order, and returns the rows
of the calls it affected with an `ord` column: the call's place in the arrays, from 1. A
call gets its row back, or None when the statement left it alone (a row deleted meanwhile).
Two calls for the same key (the first argument: an instance uuid) never share a statement,
so an UPDATE … FROM unnest(…) meets each row once. An error fails every call of the
statement it was in; a statement runs in its own implicit transaction, as each call's
statement did before. A call made on a connection (inside the caller's transaction) is a
statement of its own, over arrays of one.

`shared` arguments (the last ones of a call) are not arrays: they are passed as they are,
after the arrays, and only calls that agree on them share a statement.

`many`: a call gets every row of its `ord` (a list, perhaps empty), not one row or None.
`most`: at most this many calls in one statement; the rest wait for the next one."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from nova_async.db.pool import Pool


class Coalesced:
    def __init__(self, query: str, *, shared: int = 0, many: bool = False, most: int | None = None) -> None:
        self.query = query
        self.shared = shared
        self.many = many
        self.most = most
        self._lines: dict[Pool, _Line] = {}   # per pool (each cell has its own)

    async def __call__(self, db: Pool | asyncpg.Connection, *args: Any) -> Any:
        if not isinstance(db, Pool):
            rows = await db.fetch(self.query, *_statement_args([args], self.shared))
            return rows if self.many else rows[0] if rows else None
        line = self._lines.get(db)
        if line is None:  # a new pool: forget those closed since
            self._lines = {p: other for p, other in self._lines.items() if not p.is_closing()}
            line = self._lines[db] = _Line(db, self)
        return await line.submit(args)


def _statement_args(calls: list[tuple[Any, ...]], shared: int) -> list[Any]:
    """One array per argument of the calls, then the shared arguments (the calls agree on them)."""
    split = len(calls[0]) - shared
    return [list(column) for column in zip(*(args[:split] for args in calls))] + list(calls[0][split:])


class _Line:
    def __init__(self, pool: Pool, statement: Coalesced) -> None:
        self.pool = pool
        self.statement = statement   # its query and how calls share it
        self._waiting: list[tuple[tuple[Any, ...], asyncio.Future[Any]]] = []
        self._sending: asyncio.Task | None = None

    async def submit(self, args: tuple[Any, ...]) -> Any:
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.append((args, answer))
        if self._sending is None:
            self._sending = asyncio.create_task(self._send(), name="db:coalesced")
        return await answer

    async def _send(self) -> None:
        statement = self.statement
        calls: list[tuple[tuple[Any, ...], asyncio.Future[Any]]] = []
        try:
            await asyncio.sleep(0)  # calls made in the same turn of the loop go in the first statement
            while self._waiting:
                calls, keys, later = [], set(), []
                shared = None
                for args, answer in self._waiting:
                    if answer.done():  # its caller is gone
                        continue
                    if shared is None:
                        shared = args[len(args) - statement.shared:]
                    alike = args[len(args) - statement.shared:] == shared
                    full = statement.most is not None and len(calls) >= statement.most
                    (later if args[0] in keys or not alike or full else calls).append((args, answer))
                    if alike:
                        keys.add(args[0])
                self._waiting = later
                if not calls:
                    continue
                try:
                    rows = await self.pool.fetch(statement.query, *_statement_args([args for args, _ in calls],
                                                                                   statement.shared))
                except Exception as exc:
                    for _, answer in calls:
                        if not answer.done():
                            answer.set_exception(exc)
                    continue
                by_ord: dict[int, Any] = {}
                for row in rows:
                    if statement.many:
                        by_ord.setdefault(row["ord"], []).append(row)
                    else:
                        by_ord[row["ord"]] = row
                for i, (_, answer) in enumerate(calls, 1):
                    if not answer.done():
                        answer.set_result(by_ord.get(i, [] if statement.many else None))
        except BaseException:  # the service is stopping: nobody is left waiting
            for _, answer in calls + self._waiting:
                answer.cancel()
            self._waiting = []
            raise
        finally:
            self._sending = None
