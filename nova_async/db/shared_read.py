"""One statement for identical reads: lookups that ask the same thing at once get one answer.

A burst of boots asks the same few questions many times over: this flavor, this image, this
network. A `SharedRead` sends one statement for all the calls with the same arguments that
queued while the previous statement for them was on its way, and gives each of them its
rows. An idle line sends a lone call at once.

Every call is answered by a statement sent after the call was made, never by one already on
its way: a read shared this way sees everything committed before it was asked, as a read
of its own would (a client that changed a flavor and then boots with it sees its change).
Rows are shared, not copied; asyncpg's records cannot be changed. An error reaches every
call of its statement. A call made on a connection (inside the caller's transaction) is a
statement of its own.

A `SharedRead` is a frozen description, fit for module level; the lines that gather its
calls (one per arguments asked), and their senders, belong to the pool the calls are made
on (lines.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.db.lines import Batch, Sending
from nova_async.db.pool import Pool


@dataclass(frozen=True, eq=False)   # eq=False: each description has lines of its own
class SharedRead:
    query: str
    many: bool = False     # every row (fetch), or the first one or None (fetchrow)

    async def __call__(self, db: Pool | asyncpg.Connection, *args: Any) -> Any:
        if not isinstance(db, Pool):
            return await (db.fetch if self.many else db.fetchrow)(self.query, *args)
        # A line per question: only calls that ask the same thing share a statement.
        return await db.lines.submit((self, args), functools.partial(self._sending, db, args), args)

    def _sending(self, pool: Pool, args: tuple[Any, ...]) -> Sending:
        return Sending(send=functools.partial(self._send, pool, args), name="shared-read")

    async def _send(self, pool: Pool, args: tuple[Any, ...], asking: Batch) -> None:
        # Every call of the batch queued before this statement was sent: a call made while it
        # is on its way waits for the next one.
        found = await (pool.fetch if self.many else pool.fetchrow)(self.query, *args)
        for call in asking:
            if not call.answer.done():
                call.answer.set_result(found)
