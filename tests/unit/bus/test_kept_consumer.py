"""The consumer keeper's own loop (bus/amqp_consumer.py), without a broker: it must stop when
told to, even when the library under it hands the cancellation back as a connection error."""

from __future__ import annotations

import asyncio

import aiormq

from nova_async.bus.amqp_consumer import KeptConsumer


def keeper() -> KeptConsumer:
    async def nothing(_arg):
        raise AssertionError("not reached")

    return KeptConsumer(None, "q", declare=nothing, deliver=nothing, reconnect_interval=0.0)


async def attach_as_aiormq_would(self) -> None:
    # What awaiting one of aiormq's tasks does once the connection under it has failed that
    # task: the awaiting task's own cancellation comes back as the connection's error.
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError as exc:
        raise aiormq.exceptions.ConnectionClosed(320, "CONNECTION_FORCED") from exc


async def lost(self) -> str:
    return "channel closed"


async def test_a_keeper_told_to_stop_while_attaching_stops_even_if_told_as_a_lost_connection(monkeypatch):
    monkeypatch.setattr(KeptConsumer, "_trouble", lost)
    monkeypatch.setattr(KeptConsumer, "attach", attach_as_aiormq_would)
    task = asyncio.create_task(keeper().keep())
    await asyncio.sleep(0.05)   # into attach()
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=5)
    assert done and task.cancelled()


async def test_a_lost_connection_while_attaching_is_not_taken_for_the_end(monkeypatch):
    monkeypatch.setattr(KeptConsumer, "_trouble", lost)
    attempts = []

    async def refused(self):
        attempts.append(1)
        raise asyncio.CancelledError()   # aiormq's word for a connection closed under it

    monkeypatch.setattr(KeptConsumer, "attach", refused)
    task = asyncio.create_task(keeper().keep())
    while len(attempts) < 3:
        await asyncio.sleep(0.01)
    assert not task.done()
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=5)
    assert done and task.cancelled()


async def test_a_keeper_whose_cancellation_was_swallowed_stops_at_its_next_turn(monkeypatch):
    from nova_async.bus import amqp_consumer

    monkeypatch.setattr(amqp_consumer, "DEPTH_INTERVAL", 0.01)
    sampling = asyncio.Event()

    async def sampled_as_wait_for_would(self) -> int:
        # Python 3.11's asyncio.wait_for, when what it waited for completes as the cancellation
        # comes: the result is returned, the cancellation lost (the task stays "cancelling").
        sampling.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            return 0
        return 0

    monkeypatch.setattr(KeptConsumer, "_ready", sampled_as_wait_for_would)
    consumer = keeper()
    consumer._no_ack = True
    task = asyncio.create_task(consumer.keep())
    await sampling.wait()
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=5)
    assert done and task.cancelled()
