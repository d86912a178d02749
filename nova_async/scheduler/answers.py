"""A scheduling question decided once, whichever copies of the scheduler it reaches.

A SelectDestinations can reach two copies: its sender retries a publish whose confirm the
broker never sent (a RabbitMQ node dying with it), and the first publish may have been taken
as well. Both copies would choose and claim; the sender hears the answer that comes first,
while placement keeps the claim that lands last, which may be on another host. So the client
gives each ask an id (SelectDestinations.question_id), and the copy that takes a question
records its process against it (scheduler_answers, sql/0074). A copy that gets a question
already taken waits for that answer and gives it; if the process that took it died first (its
session lock is free: db/session_locks.py), it takes the question over and decides itself.

A NoValidHost is an answer too (the same one is given twice); any other failure forgets the
question, so that a copy of it decides for itself. A question without an id (a sender older
than this), or a process without session locks (tests of one role), is simply decided."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable

import msgspec
import structlog

from nova_async.bus import Bus
from nova_async.common import errors
from nova_async.db.queries import queries
from nova_async.db.session_locks import SessionLocks
from nova_async.scheduler import messages as m
from nova_async.scheduler.client import DECISION_WAIT

log = structlog.get_logger("scheduler.answers")
Q = queries("scheduler_answers")

POLL = 0.2            # seconds between looks at a question another copy is answering
KEEP = 3600.0         # seconds an answer is kept; older ones are removed every FORGET_EVERY questions
FORGET_EVERY = 500


class _Answer(msgspec.Struct, frozen=True, kw_only=True):
    selections: m.Selections | None = None
    no_valid_host: str | None = None


class Answers:
    def __init__(self, pool, locks: SessionLocks | None, bus: Bus) -> None:
        self.pool = pool
        self.locks = locks
        self.bus = bus
        self._asked = 0

    async def once(self, question_id: str, decide: Callable[[], Awaitable[m.Selections]]) -> m.Selections:
        if not question_id or self.locks is None:
            return await decide()
        qid = uuid.UUID(question_id)
        earlier = await self._take(qid, self.locks)
        if earlier is not None:
            if earlier.selections is None:
                raise errors.NoValidHost(earlier.no_valid_host or "")
            return earlier.selections
        try:
            selections = await decide()
        except errors.NoValidHost as exc:
            await self._record(qid, _Answer(no_valid_host=exc.message))
            raise
        except BaseException:
            # Forgotten, so that a copy of it decides for itself; if even that fails (the
            # database gone too), a copy takes it over once this process is dead or the
            # asker's wait is over. The failure raised is the decision's, not the forgetting's.
            with contextlib.suppress(Exception):
                await self.pool.execute(Q.forget_question, qid)
            raise
        await self._record(qid, _Answer(selections=selections))
        return selections

    async def _take(self, qid: uuid.UUID, locks: SessionLocks) -> _Answer | None:
        """None once the question is this process's to decide; else the answer another gave."""
        loop = asyncio.get_running_loop()
        # As long as the question's asker waits, and a little more: that copy is alive and
        # deciding it (a claim sent again, say), and a second decision would claim twice.
        give_up = loop.time() + DECISION_WAIT * self.bus.call_timeout + 30.0
        said = False
        while True:
            row = await self.pool.fetchrow(Q.take_question, qid, locks.incarnation)
            if row["taken"] or row["worker"] == locks.incarnation:
                return None
            if row["answer"] is not None:
                log.info("a question another copy answered; giving its answer", question_id=str(qid))
                return msgspec.json.decode(row["answer"], type=_Answer)
            if row["worker"] in await locks.dead([row["worker"]]) or loop.time() > give_up:
                if await self.pool.fetchval(Q.take_over_question, qid, row["worker"], locks.incarnation):
                    log.info("a question another copy took and did not answer; deciding it here",
                             question_id=str(qid))
                    return None
                continue
            if not said:
                log.info("a question another copy is deciding; waiting for its answer", question_id=str(qid))
                said = True
            await asyncio.sleep(POLL)

    async def _record(self, qid: uuid.UUID, answer: _Answer) -> None:
        await self.pool.execute(Q.record_answer, qid, msgspec.json.encode(answer))
        self._asked += 1
        if self._asked % FORGET_EVERY == 0:
            await self.pool.execute(Q.forget_old_answers, KEEP)

