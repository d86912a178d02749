"""Lines: the calls that queue while a sender is busy go out together, as one batch.

The one mechanism behind coalesced writes (coalesce.py), shared reads (shared_read.py) and
the scheduler's batched decisions (scheduler/batch.py). A call joins its line's queue and
waits for its answer; the line's sender takes what queued as a batch and hands it to the
line's `send`, which answers every call of it. The first call on an idle line starts a
sender, which waits one turn of the loop (calls made in the same turn go in its first batch)
and ends once the queue is empty, with no await between its last look at the queue and its
end: a call that finds no sender starts one, and no call is left behind.

Every sender is a task of one `Lines`, which owns them in a TaskGroup: a pool's (open_pool
opens it with the pool and closes it before the pool closes) or a role's. Closing refuses
new calls and lets each sender send the calls already queued; a cancel (a shutdown that
cannot wait, a sibling that failed) fails every call left with the owner's stopping error.
No line is module state: a statement (coalesce.py, shared_read.py) is a frozen description,
and the lines a pool runs for it live in the pool's Lines, keyed by the description.

A line sends in up to two stages. `send` runs while the line's turn is held (the next batch
gathers meanwhile); `then`, if any, after the turn is given up, so that with `senders=2` one
batch's `then` overlaps the next batch's `send` (the scheduler looks at hosts for one batch
while the claim of the batch before is on its way). An error raised by either stage fails
every call of its batch not answered yet, and the line goes on with the next batch."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(slots=True)
class Call(Generic[T]):
    """One call waiting on a line: what it brings, and where its answer goes."""
    args: T
    answer: asyncio.Future[Any]


Batch = list[Call[Any]]


def everything(waiting: Batch) -> tuple[Batch, Batch]:
    """The default take: every call that queued goes in the next batch."""
    return waiting, []


@dataclass(frozen=True, slots=True)
class Sending:
    """How a line sends: the stages, which queued calls make a batch, and how many senders."""
    send: Callable[[Batch], Awaitable[Any]]
    # after the turn is given up, with what `send` returned
    then: Callable[[Batch, Any], Awaitable[None]] | None = None
    # (this batch, the calls left for later) from the calls queued, in call order
    take: Callable[[Batch], tuple[Batch, Batch]] = everything
    senders: int = 1
    name: str = "line"


class Lines:
    """The owner of lines and of their senders' tasks (a TaskGroup): `async with` it for the
    life of what it serves. `stopping` makes the error a call meets once it is closed."""

    def __init__(self, name: str, stopping: Callable[[], Exception]) -> None:
        self.name = name
        self._stopping = stopping
        self._lines: dict[Hashable, Line] = {}
        self._tg = asyncio.TaskGroup()
        self._open = False

    async def __aenter__(self) -> Lines:
        await self._tg.__aenter__()
        self._open = True
        return self

    async def __aexit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        self._open = False  # new calls are refused; the senders send what is queued, and end
        if et is not None and issubclass(et, Exception):
            # The body's error is not the senders' business: they end as on a clean close, and
            # the error goes on as it was raised (a TaskGroup given it would wrap it in an
            # ExceptionGroup). A cancel is passed on: the senders are cancelled too.
            await self._tg.__aexit__(None, None, None)
            return None
        return await self._tg.__aexit__(et, exc, tb)

    def submit(self, key: Hashable, how: Callable[[], Sending], args: Any) -> asyncio.Future[Any]:
        """Queue a call on the line `key` (made with `how()` if it has none running); its answer."""
        if not self._open:
            raise self._stopping()
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = Line(self, key, how())
        return line.submit(args)

    def __len__(self) -> int:
        return len(self._lines)


class Line:
    """The calls queued for one statement (or one decision), and the senders draining them.
    A line lives while it has a sender; the next call after that makes a new one."""

    __slots__ = ("_owner", "_key", "_how", "_waiting", "_senders", "_turn")

    def __init__(self, owner: Lines, key: Hashable, how: Sending) -> None:
        self._owner = owner
        self._key = key
        self._how = how
        self._waiting: Batch = []
        self._senders: set[asyncio.Task[None]] = set()
        self._turn = asyncio.Lock()   # one batch is taken and sent (its first stage) at a time

    def submit(self, args: Any) -> asyncio.Future[Any]:
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.append(Call(args, answer))
        if len(self._senders) < self._how.senders:
            self._senders.add(self._owner._tg.create_task(self._drain(),
                                                          name=f"{self._owner.name}:{self._how.name}"))
        return answer

    async def _drain(self) -> None:
        how = self._how
        batch: Batch = []
        try:
            await asyncio.sleep(0)  # calls made in the same turn of the loop go in the first batch
            while self._waiting:
                async with self._turn:  # the batch is what queued until it is this sender's turn
                    batch, self._waiting = how.take([c for c in self._waiting if not c.answer.done()])
                    if not batch:  # every caller is gone (cancelled), or none is left
                        continue
                    try:
                        sent = await how.send(batch)
                    except Exception as exc:
                        _fail(batch, exc)
                        batch = []
                        continue
                if how.then is not None:
                    try:
                        await how.then(batch, sent)
                    except Exception as exc:
                        _fail(batch, exc)
                batch = []
        except BaseException:
            # Cancelled: the owner is stopping and cannot wait. Nothing will send these calls.
            _fail(batch + self._waiting, self._owner._stopping())
            self._waiting = []
            raise
        finally:
            self._senders.discard(asyncio.current_task())  # type: ignore[arg-type]
            if not self._senders and self._owner._lines.get(self._key) is self:
                del self._owner._lines[self._key]


def _fail(batch: Batch, exc: BaseException) -> None:
    """Every call of the batch not answered yet hears `exc`."""
    for call in batch:
        if not call.answer.done():
            call.answer.set_exception(exc)
