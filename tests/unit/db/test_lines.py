"""Lines (db/lines.py), the one batching mechanism: calls that queue while a sender is busy go
out as one batch, every sender is a task of its owner, and closing the owner ends them all,
sending what was queued or failing it."""

from __future__ import annotations

import asyncio

import pytest

from nova_async.db.lines import Batch, Lines, Sending


class Stopping(Exception):
    pass


class Recorder:
    """A send that answers each call with its batch's number, and can be held open."""

    def __init__(self) -> None:
        self.batches: list[list[object]] = []
        self.hold: asyncio.Event | None = None
        self.sending = asyncio.Event()   # a batch went out (and may be held open)

    async def send(self, batch: Batch) -> None:
        self.batches.append([c.args for c in batch])
        self.sending.set()
        if self.hold is not None:
            await self.hold.wait()
        if any(c.args == "bad" for c in batch):
            raise ValueError("a bad call")
        for call in batch:
            call.answer.set_result(len(self.batches))

    def how(self) -> Sending:
        return Sending(send=self.send, name="test")


def owner() -> Lines:
    return Lines("test", lambda: Stopping("stopping"))


async def test_calls_of_one_turn_are_one_batch_and_those_made_meanwhile_the_next():
    recorder = Recorder()
    recorder.hold = asyncio.Event()
    async with owner() as lines:
        first = [lines.submit("k", recorder.how, i) for i in range(3)]
        await recorder.sending.wait()   # the first batch is being sent
        later = [lines.submit("k", recorder.how, i) for i in range(3, 5)]
        recorder.hold.set()
        assert await asyncio.gather(*first, *later) == [1, 1, 1, 2, 2]
    assert recorder.batches == [[0, 1, 2], [3, 4]]
    assert len(lines) == 0   # an idle line is gone with its sender


async def test_an_error_fails_every_call_of_its_batch_and_the_line_goes_on():
    recorder = Recorder()
    async with owner() as lines:
        failed = await asyncio.gather(lines.submit("k", recorder.how, "bad"),
                                      lines.submit("k", recorder.how, "ok"), return_exceptions=True)
        assert all(isinstance(f, ValueError) for f in failed)
        assert await lines.submit("k", recorder.how, "again") == 2


async def test_a_caller_gone_before_its_batch_was_taken_is_left_out():
    recorder = Recorder()
    async with owner() as lines:
        gone = lines.submit("k", recorder.how, "gone")
        gone.cancel()
        assert await lines.submit("k", recorder.how, "kept") == 1
    assert recorder.batches == [["kept"]]


async def test_closing_sends_what_is_queued_and_refuses_what_comes_after():
    recorder = Recorder()
    recorder.hold = asyncio.Event()
    lines = owner()
    async with lines:
        sending = lines.submit("k", recorder.how, 1)
        await recorder.sending.wait()
        queued = lines.submit("k", recorder.how, 2)
        asyncio.get_running_loop().call_later(0.01, recorder.hold.set)
    assert (sending.result(), queued.result()) == (1, 2)
    with pytest.raises(Stopping):
        lines.submit("k", recorder.how, 3)


async def test_a_cancelled_owner_fails_its_callers_with_its_stopping_error():
    recorder = Recorder()
    recorder.hold = asyncio.Event()   # never set: the sender is cut off
    answers = []
    queued = asyncio.Event()

    async def serve() -> None:
        async with owner() as lines:
            answers.append(lines.submit("k", recorder.how, 1))
            await recorder.sending.wait()
            answers.append(lines.submit("k", recorder.how, 2))
            queued.set()
            await asyncio.Event().wait()

    serving = asyncio.create_task(serve())
    await queued.wait()   # one call held in its batch, one queued behind it
    serving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await serving
    for answer in answers:
        with pytest.raises(Stopping):
            answer.result()


async def test_with_two_senders_one_batch_s_second_stage_overlaps_the_next_batch():
    events: list[str] = []
    first_then = asyncio.Event()
    second_sent = asyncio.Event()

    async def send(batch: Batch) -> list[object]:
        events.append(f"send {[c.args for c in batch]}")
        if batch[0].args == 2:
            second_sent.set()
        return [c.args for c in batch]

    async def then(batch: Batch, sent: list[object]) -> None:
        if sent == [1]:
            first_then.set()
            await second_sent.wait()   # only returns once the next batch was sent meanwhile
        events.append(f"then {sent}")
        for call in batch:
            call.answer.set_result(sent)

    how = Sending(send=send, then=then, senders=2, name="test")
    async with owner() as lines:
        one = lines.submit("k", lambda: how, 1)
        await first_then.wait()
        two = lines.submit("k", lambda: how, 2)
        assert await asyncio.gather(one, two) == [[1], [2]]
    assert events == ["send [1]", "send [2]", "then [2]", "then [1]"]


async def test_an_error_of_the_owner_s_body_goes_on_as_it_was_raised():
    recorder = Recorder()
    with pytest.raises(KeyError):
        async with owner() as lines:
            answer = lines.submit("k", recorder.how, 1)
            raise KeyError("the body's own")
    assert answer.result() == 1   # what was queued was still sent
