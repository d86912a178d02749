"""Shared calls: identical questions asked over the bus at once travel once.

A burst of boots asks the image and network services the same few things many times over:
this image, for this project; these networks; these security groups. A client that asks
through `SharedCalls` sends one call for all the identical ones that came while the previous
one was on its way, and gives each of them its answer (or its error). A question asked on an
idle line goes at once, alone.

As with the database's shared reads (db/shared_read.py), every call is answered by a request
sent after the call was made, never by one already on its way: a client that changed an
image and then boots from it sees its change.

No task of its own: the first caller of a burst sends, and the callers that queue meanwhile
wait on futures. When its answer comes, the first of them still waiting is told it is its
turn, and sends for the others. A sender that is cancelled (its client went away) hands its
turn on, so nobody waits for a request that will not be sent.

Only for questions: the handler must depend on the message and on who asks (the caller's
user, project and roles, which are part of what makes two calls identical), not on the
request id, which is the sender's."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import msgspec

from nova_async.bus.base import Bus
from nova_async.bus.messages import Message
from nova_async.common.context import RequestContext


@dataclass(slots=True)
class _Turn:
    """What a queued call is told when it is to send, for itself and for `others`."""
    others: list[asyncio.Future[Any]]


class SharedCalls:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        # For each question with a request on its way: the calls queued for the next one.
        self._queued: dict[Hashable, list[asyncio.Future[Any]]] = {}

    async def call(self, topic: str, msg: Message, *, context: RequestContext | None = None) -> Message | None:
        """Bus.call, shared with identical calls made while one is on its way."""
        asker = None if context is None else (context.user_id, context.project_id, context.roles)
        key = (topic, msgspec.json.encode(msg), asker)
        queued = self._queued.get(key)
        if queued is None:
            self._queued[key] = []
            others: list[asyncio.Future[Any]] = []
        else:
            mine = asyncio.get_running_loop().create_future()
            queued.append(mine)
            try:
                told = await mine
            except asyncio.CancelledError:
                # Told it was its turn just before being cancelled: the turn goes on.
                if mine.done() and not mine.cancelled() and isinstance(mine.result(), _Turn):
                    self._pass_turn(key, mine.result().others)
                raise
            if not isinstance(told, _Turn):
                return told
            others = told.others
        try:
            answer = await self.bus.call(topic, msg, context=context)
        except asyncio.CancelledError:
            self._pass_turn(key, others)
            raise
        except BaseException as exc:   # its error, or the process ending: to every call of it
            _answer(others, exc)
            self._next(key)
            raise
        _answer(others, answer)
        self._next(key)
        return answer

    def _pass_turn(self, key: Hashable, waiting: list[asyncio.Future[Any]]) -> None:
        """A sender is gone before its request was answered: the first of `waiting` still
        there sends for the rest; with none left, the calls queued behind are next."""
        waiting = [f for f in waiting if not f.done()]
        if waiting:
            waiting[0].set_result(_Turn(waiting[1:]))
        else:
            self._next(key)

    def _next(self, key: Hashable) -> None:
        """The request on its way for `key` is done: the calls queued behind it go next."""
        queued = [f for f in self._queued.pop(key, ()) if not f.done()]
        if queued:
            self._queued[key] = []
            queued[0].set_result(_Turn(queued[1:]))


def _answer(waiting: list[asyncio.Future[Any]], outcome: Any) -> None:
    for f in waiting:
        if not f.done():
            if isinstance(outcome, BaseException):
                f.set_exception(outcome)
            else:
                f.set_result(outcome)
