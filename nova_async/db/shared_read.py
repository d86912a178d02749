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
statement of its own."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from nova_async.db.pool import Pool


class SharedRead:
    def __init__(self, query: str, *, many: bool = False) -> None:
        self.query = query
        self.many = many     # every row (fetch), or the first one or None (fetchrow)
        self._lines: dict[tuple[Pool, tuple[Any, ...]], _Line] = {}

    async def __call__(self, db: Pool | asyncpg.Connection, *args: Any) -> Any:
        if not isinstance(db, Pool):
            return await (db.fetch if self.many else db.fetchrow)(self.query, *args)
        key = (db, args)
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = _Line()
            line.sending = asyncio.create_task(self._send(key, line), name="db:shared-read")
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        line.waiting.append(answer)
        return await answer

    async def _send(self, key: tuple[Pool, tuple[Any, ...]], line: _Line) -> None:
        pool, args = key
        asking: list[asyncio.Future[Any]] = []
        try:
            await asyncio.sleep(0)  # calls made in the same turn of the loop share the first statement
            while line.waiting:
                asking = [a for a in line.waiting if not a.done()]  # not those whose caller is gone
                line.waiting = []
                if not asking:
                    continue
                try:
                    found = await (pool.fetch if self.many else pool.fetchrow)(self.query, *args)
                except Exception as exc:
                    for answer in asking:
                        if not answer.done():
                            answer.set_exception(exc)
                    continue
                for answer in asking:
                    if not answer.done():
                        answer.set_result(found)
        except BaseException:  # the service is stopping: nobody is left waiting
            for answer in asking + line.waiting:
                answer.cancel()
            line.waiting = []
            raise
        finally:
            del self._lines[key]


class _Line:
    __slots__ = ("waiting", "sending")

    def __init__(self) -> None:
        self.waiting: list[asyncio.Future[Any]] = []
        self.sending: asyncio.Task | None = None   # held, so that the task is not collected
