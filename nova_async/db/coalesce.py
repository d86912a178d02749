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
`most`: at most this many calls in one statement; the rest wait for the next one.

A `Coalesced` is a frozen description, fit for module level; the line that gathers its
calls, and its sender, belong to the pool the calls are made on (lines.py)."""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.db.lines import Batch, Sending
from nova_async.db.pool import Pool


@dataclass(frozen=True, eq=False)   # eq=False: each description has lines of its own
class Coalesced:
    query: str
    shared: int = 0
    many: bool = False
    most: int | None = None

    async def __call__(self, db: Pool | asyncpg.Connection, *args: Any) -> Any:
        if not isinstance(db, Pool):
            rows = await db.fetch(self.query, *_statement_args([args], self.shared))
            return rows if self.many else rows[0] if rows else None
        return await db.lines.submit(self, functools.partial(self._sending, db), args)

    async def each(self, db: Pool | asyncpg.Connection, calls: list[tuple[Any, ...]]) -> list[Any]:
        """Several calls at once, their answers in order: on a pool they queue together, so
        they share a statement (each key once) rather than wait for each other."""
        if not isinstance(db, Pool):
            return [await self(db, *args) for args in calls]
        how = functools.partial(self._sending, db)
        return await asyncio.gather(*(db.lines.submit(self, how, args) for args in calls))

    def _sending(self, pool: Pool) -> Sending:
        return Sending(send=functools.partial(self._send, pool), take=self._take, name="coalesced")

    def _take(self, waiting: Batch) -> tuple[Batch, Batch]:
        """The calls of the next statement: in call order, a key at most once, those that
        agree on the shared arguments with the first, at most `most`."""
        calls: Batch = []
        later: Batch = []
        keys: set[Any] = set()
        shared = None
        for call in waiting:
            args = call.args
            if shared is None:
                shared = args[len(args) - self.shared:]
            alike = args[len(args) - self.shared:] == shared
            full = self.most is not None and len(calls) >= self.most
            (later if args[0] in keys or not alike or full else calls).append(call)
            if alike:
                keys.add(args[0])
        return calls, later

    async def _send(self, pool: Pool, calls: Batch) -> None:
        rows = await pool.fetch(self.query, *_statement_args([c.args for c in calls], self.shared))
        by_ord: dict[int, Any] = {}
        for row in rows:
            if self.many:
                by_ord.setdefault(row["ord"], []).append(row)
            else:
                by_ord[row["ord"]] = row
        for i, call in enumerate(calls, 1):
            if not call.answer.done():
                call.answer.set_result(by_ord.get(i, [] if self.many else None))


def _statement_args(calls: list[tuple[Any, ...]], shared: int) -> list[Any]:
    """One array per argument of the calls, then the shared arguments (the calls agree on them)."""
    split = len(calls[0]) - shared
    return [list(column) for column in zip(*(args[:split] for args in calls))] + list(calls[0][split:])
