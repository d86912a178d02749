"""The RabbitMQ bus against a real broker: what the in-memory bus promises (typed answers,
errors across the bus, timeouts, version refusal, draining), plus what only a broker adds:
several processes on one topic, notifications to every process, nothing lost when the broker
restarts, and a cast redelivered when the consumer holding it dies."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import uuid

import aio_pika
import aiormq
import pytest
import structlog

from nova_async.bus import amqp, messages
from nova_async.bus.amqp import AmqpBus, queue_name
from nova_async.bus.base import unwrap
from nova_async.bus.messages import Message, Notification
from nova_async.common import errors
from nova_async.common.context import RequestContext
from tests import waiting

# One worker runs them all, on the one broker its session starts (conftest.py beside).
pytestmark = pytest.mark.xdist_group("rabbitmq")
WAIT = 60  # bound on anything a test waits for; never an expectation of speed


# Message classes register by name: these must not share one with another test module's.
class Knock(Message, frozen=True, kw_only=True):
    n: int


class Answer(Message, frozen=True, kw_only=True):
    n: int


def fresh_topic(what: str) -> str:
    return f"test.{what}.{uuid.uuid4().hex[:8]}"


@contextlib.asynccontextmanager
async def consuming(bus: AmqpBus, topic: str, handler, **kw):
    """Consume `topic` for the block, then stop and drain like the service does."""
    until = asyncio.Event()
    task = asyncio.create_task(bus.consume(topic, handler, until=until, **kw), name=f"test:{topic}")
    try:
        await _consumer_attached(bus, topic)
        yield task
    finally:
        until.set()
        await asyncio.wait_for(task, WAIT)


async def _queue_counts(bus: AmqpBus, topic: str) -> tuple[int, int] | None:
    """(messages waiting, consumers) as the broker counts them on the topic's queue; None
    while `bus` is still reconnecting after a restart, or before the queue is declared."""
    try:
        channel = await bus._connection.channel()
    except RuntimeError:  # "Connection was not opened": still reconnecting after a restart
        return None
    try:
        queue = await channel.declare_queue(queue_name(topic), passive=True)
        return queue.declaration_result.message_count, queue.declaration_result.consumer_count
    except aio_pika.exceptions.ChannelNotFoundEntity:
        return None
    finally:
        await channel.close()


async def _consumers(bus: AmqpBus, topic: str) -> int | None:
    counts = await _queue_counts(bus, topic)
    return None if counts is None else counts[1]


async def _consumer_attached(bus: AmqpBus, topic: str) -> None:
    await waiting.until(lambda: _consumers(bus, topic), bool, what=f"a consumer on {topic}", timeout=WAIT)


async def wait_for_count(items, count: int) -> None:
    await waiting.until(lambda: items, lambda seen: len(seen) >= count, what=f"{count} items", timeout=WAIT)


@pytest.fixture
async def bus(broker):
    async with AmqpBus(broker.url) as b:
        yield b


@pytest.fixture
async def other_bus(broker):
    """A second connection: another process, as far as the broker can tell."""
    async with AmqpBus(broker.url) as b:
        yield b


async def test_call_returns_the_typed_answer_and_carries_context(bus, other_bus):
    topic, seen = fresh_topic("call"), []

    async def handler(msg, ctx):
        seen.append(ctx)
        return Answer(n=msg.n + 1)

    async with consuming(other_bus, topic, handler):
        ctx = RequestContext(user_id="u", project_id="p", request_id="req-1")
        assert await bus.call(topic, Knock(n=1), context=ctx) == Answer(n=2)
        answers = await asyncio.gather(*(bus.call(topic, Knock(n=i)) for i in range(20)))
    assert answers == [Answer(n=i + 1) for i in range(20)]
    assert seen[0] == ctx


async def test_errors_cross_the_bus_as_their_own_class(bus, other_bus):
    topic = fresh_topic("errors")

    async def handler(msg, ctx):
        if msg.n == 1:
            raise errors.NotFound("no such thing", code="thing.missing")
        raise RuntimeError("boom")

    async with consuming(other_bus, topic, handler):
        with pytest.raises(errors.NotFound) as info:
            await bus.call(topic, Knock(n=1))
        assert info.value.message == "no such thing" and info.value.code == "thing.missing"
        with pytest.raises(errors.NovaAsyncError) as info:
            await bus.call(topic, Knock(n=2))
        assert "boom" in info.value.message and info.value.status == 500


async def test_call_without_consumer_times_out_and_the_question_expires(bus, other_bus):
    topic, handled = fresh_topic("nobody"), []
    with pytest.raises(errors.BusTimeout, match=f"no answer from {topic} to Knock within 0.2 s"):
        await bus.call(topic, Knock(n=1), timeout=0.2)

    async def handler(msg, ctx):
        handled.append(msg.n)
        return Answer(n=0)

    # A consumer that starts later never acts on the question nobody waits for any more:
    # it expired in its queue when its caller stopped waiting.
    await waiting.until(lambda: _queue_counts(bus, topic), lambda counts: counts == (0, 0),
                        what=f"the question to {topic} expired", timeout=WAIT)
    async with consuming(other_bus, topic, handler):
        assert await bus.call(topic, Knock(n=2)) == Answer(n=0)
    assert handled == [2]


async def test_a_major_version_the_receiver_does_not_speak_is_answered_with_a_clear_error(broker, bus):
    topic = fresh_topic("version")

    async def handler(msg, ctx):
        return Answer(n=0)

    # What a newer process would send: the same message at version 2.0, on a connection of its own.
    newer = messages.encode(Knock(n=1), None).replace(b'"version":"1.0"', b'"version":"2.0"')
    async with consuming(bus, topic, handler):
        async with await aio_pika.connect(broker.url) as connection:
            channel = await connection.channel()
            replies = await channel.declare_queue(exclusive=True)
            await channel.default_exchange.publish(
                aio_pika.Message(newer, reply_to=replies.name, correlation_id="c1"), queue_name(topic))
            async with asyncio.timeout(WAIT):
                async with replies.iterator() as it:
                    async for answer in it:
                        await answer.ack()
                        break
    assert answer.correlation_id == "c1"
    with pytest.raises(errors.Conflict, match=r"Knock version 2.0 cannot be handled here \(this side speaks 1.0") as refused:
        unwrap(answer.body)
    assert refused.value.code == "version_mismatch"


async def test_casts_sent_before_any_consumer_wait_in_their_queue(bus, other_bus):
    topic, got = fresh_topic("cast"), []
    for i in range(10):
        await bus.cast(topic, Knock(n=i))

    async def handler(msg, ctx):
        got.append(msg.n)

    async with consuming(other_bus, topic, handler):
        await wait_for_count(got, 10)
    assert sorted(got) == list(range(10))


async def test_consumers_of_one_topic_share_its_messages(broker, bus, other_bus):
    topic, got = fresh_topic("shared"), []

    def handler_for(name):
        async def handler(msg, ctx):
            await asyncio.sleep(0.01)
            got.append((name, msg.n))
        return handler

    async with AmqpBus(broker.url) as sender:
        async with consuming(bus, topic, handler_for("a"), concurrency=2), \
                consuming(other_bus, topic, handler_for("b"), concurrency=2):
            for i in range(40):
                await sender.cast(topic, Knock(n=i))
            await wait_for_count(got, 40)
    assert sorted(n for _, n in got) == list(range(40))  # each exactly once
    assert {name for name, _ in got} == {"a", "b"}


async def test_notifications_reach_every_process_that_listens(broker, bus, other_bus):
    async with AmqpBus(broker.url) as publisher:
        with bus.listen() as here, other_bus.listen() as there:
            note = Notification(event_type="instance.create.end", payload={"instance_uuid": "x"})
            await publisher.publish(note)
            async with asyncio.timeout(WAIT):
                assert await here.get() == note
                assert await there.get() == note


async def test_stop_intake_waits_for_messages_in_flight_and_leaves_the_rest_queued(bus, other_bus):
    topic = fresh_topic("drain")
    started, release, finished = asyncio.Event(), asyncio.Event(), []

    async def slow(msg, ctx):
        started.set()
        await release.wait()
        finished.append(msg.n)

    until = asyncio.Event()
    task = asyncio.create_task(bus.consume(topic, slow, concurrency=1, until=until), name="test:drain")
    await _consumer_attached(bus, topic)
    for i in range(3):
        await other_bus.cast(topic, Knock(n=i))
    await asyncio.wait_for(started.wait(), WAIT)
    until.set()
    # The consumer has left the queue: where it would return, were it not for message 0.
    await waiting.until(lambda: _consumers(bus, topic), lambda n: n == 0, what=f"no consumer on {topic}",
                        timeout=WAIT)
    assert not task.done()  # still handling message 0
    release.set()
    await asyncio.wait_for(task, WAIT)
    assert finished == [0]

    rest = []

    async def quick(msg, ctx):
        rest.append(msg.n)

    async with consuming(other_bus, topic, quick):
        await wait_for_count(rest, 2)
    assert sorted(rest) == [1, 2]


@pytest.mark.parametrize("kill", [False, True], ids=["clean-stop", "crash"])
async def test_a_broker_restart_in_the_middle_of_casts_loses_none(broker, kill, tmp_path):
    topic, got = fresh_topic("restart"), []

    async def handler(msg, ctx):
        got.append(msg.n)

    with waiting.tasks_shown_after(6 * WAIT, tmp_path / "tasks.txt"):
        async with AmqpBus(broker.url) as sender, AmqpBus(broker.url) as receiver:
            await _restart_under_casts(broker, kill, sender, receiver, topic, handler, got)
    assert set(got) == set(range(300))


async def _restart_under_casts(broker, kill, sender, receiver, topic, handler, got):
    async with consuming(receiver, topic, handler, concurrency=8):
        sent = []

        async def send_all():
            for i in range(300):
                await sender.cast(topic, Knock(n=i))
                sent.append(i)

        sending = asyncio.create_task(send_all(), name="test:send")
        await wait_for_count(sent, 100)
        await broker.restart(kill=kill)  # casts go on being sent meanwhile, and fail, and retry
        await asyncio.wait_for(sending, WAIT)
        await _consumer_attached(receiver, topic)  # the consumer came back by itself
        back, before = time.monotonic(), len(set(got))
        # On a loaded machine (the whole suite on two workers) the rest has been seen to
        # arrive only 60-100 s after the consumer was back, not understood yet; here the
        # test asks that nothing is lost, and the wait is long enough for that.
        try:
            await waiting.until(lambda: set(got), lambda seen: len(seen) >= 300, what="300 items",
                                timeout=3 * WAIT)
        except AssertionError as exc:   # what the broker holds says where the rest are
            queues = await broker.rabbitmqctl("list_queues", "name", "messages_ready",
                                              "messages_unacknowledged", "consumers")
            channels = await broker.rabbitmqctl("list_channels", "pid", "consumer_count",
                                                "messages_unacknowledged")
            consumers = await broker.rabbitmqctl("list_consumers", "queue_name", "channel_pid",
                                                 "prefetch_count", "ack_required", "active")
            raise AssertionError(f"{exc}; missing {sorted(set(range(300)) - set(got))[:20]}…\n"
                                 f"queues:\n{queues}\nchannels:\n{channels}\nconsumers:\n{consumers}") from None
        print(f"{before} of 300 had arrived when the consumer was back; the rest "   # -rA shows it
              f"{time.monotonic() - back:.1f} s later")


async def test_a_consumer_the_broker_forgot_attaches_again(bus, other_bus, monkeypatch):
    """A consumer registered nowhere any more while its channel stays open (what aio-pika's own
    restoring was seen to leave behind) notices that messages wait for it and none come."""
    from nova_async.bus import amqp_consumer

    monkeypatch.setattr(amqp_consumer, "DEPTH_INTERVAL", 0.1)
    monkeypatch.setattr(amqp_consumer, "STALL_AFTER", 0.5)
    kept = []
    attach = amqp_consumer.KeptConsumer.attach

    async def recorded(self):
        await attach(self)
        kept.append(self)

    monkeypatch.setattr(amqp_consumer.KeptConsumer, "attach", recorded)
    topic, got = fresh_topic("forgotten"), []

    async def handler(msg, ctx):
        got.append(msg.n)

    async with consuming(other_bus, topic, handler):
        consumer = kept[0]
        underlay = await consumer._channel.get_underlay_channel()
        await underlay.basic_cancel(consumer._tag)   # the broker forgets it; nothing tells the bus
        await waiting.until(lambda: _consumers(other_bus, topic), lambda n: n == 0, what="no consumer",
                            timeout=WAIT)
        for i in range(3):
            await bus.cast(topic, Knock(n=i))
        await wait_for_count(got, 3)
    assert sorted(got) == [0, 1, 2] and consumer.attachments == 2


async def test_a_queue_deleted_under_its_consumer_is_declared_and_consumed_again(broker, bus, other_bus):
    topic, got = fresh_topic("deleted"), []

    async def handler(msg, ctx):
        got.append(msg.n)

    async with consuming(other_bus, topic, handler):
        await broker.rabbitmqctl("delete_queue", queue_name(topic))   # the broker cancels the consumer
        await _consumer_attached(other_bus, topic)
        await bus.cast(topic, Knock(n=7))
        await wait_for_count(got, 1)
    assert got == [7]


async def test_a_channel_the_broker_keeps_refusing_is_replaced(bus, other_bus):
    """Nacks on and on while the connection is up (seen on a channel that published to quorum
    queues whose leader's node was killed): the cast goes out on a new channel."""
    topic, got = fresh_topic("nacked"), []
    refused = bus._publisher

    async def nacked(*args, **kw):
        raise aio_pika.exceptions.DeliveryError(None, aiormq.spec.Basic.Nack(delivery_tag=1))

    refused.default_exchange.publish = nacked

    async def handler(msg, ctx):
        got.append(msg.n)

    async with consuming(other_bus, topic, handler):
        await bus.cast(topic, Knock(n=1))
        await wait_for_count(got, 1)
    assert got == [1] and bus._publisher is not refused and refused.is_closed


async def test_a_call_made_while_the_broker_is_down_is_answered_once_it_is_back(broker):
    topic = fresh_topic("call-restart")

    async def handler(msg, ctx):
        return Answer(n=msg.n)

    async with AmqpBus(broker.url) as caller, AmqpBus(broker.url) as server:
        async with consuming(server, topic, handler):
            await broker.stop()
            asking = asyncio.create_task(caller.call(topic, Knock(n=5), timeout=5 * WAIT), name="test:ask")
            await asyncio.sleep(0.2)
            assert not asking.done()
            await broker.start()
            assert await asyncio.wait_for(asking, WAIT) == Answer(n=5)


CONSUMER_THAT_DIES = """
import asyncio, sys
from nova_async.bus.amqp import AmqpBus
from nova_async.bus.messages import Message

class Knock(Message, frozen=True, kw_only=True):
    n: int

async def main(url, topic):
    async with AmqpBus(url) as bus:
        async def handler(msg, ctx):
            print("handling", msg.n, flush=True)
            await asyncio.Event().wait()
        await bus.consume(topic, handler)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@contextlib.asynccontextmanager
async def consumer_that_dies(broker, bus, topic: str, script: str = CONSUMER_THAT_DIES):
    """A consumer in a process of its own that takes one message, says "handling <n>" and
    never finishes it; the block's body sends that message, and the process is SIGKILLed
    once it has said so."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", script, broker.url, topic,
                                                stdout=asyncio.subprocess.PIPE)
    handling: list[str] = []
    try:
        await _consumer_attached(bus, topic)
        yield handling
        async with asyncio.timeout(WAIT):
            async for line in proc.stdout:  # its log lines come first
                if line.startswith(b"handling"):
                    handling.append(line.decode().strip())
                    break
    finally:
        proc.kill()
        await proc.wait()


async def test_a_cast_held_by_a_consumer_that_dies_is_redelivered_to_another(broker, bus, other_bus):
    topic, got = fresh_topic("redeliver"), []
    async with consumer_that_dies(broker, bus, topic) as handling:
        await bus.cast(topic, Knock(n=42))
    assert handling == ["handling 42"]

    async def handler(msg, ctx):
        got.append(msg.n)

    async with consuming(other_bus, topic, handler):
        await wait_for_count(got, 1)
    assert got == [42]


async def test_a_cast_sent_twice_under_one_message_id_is_handled_once(broker, bus):
    """What a publish retried after a lost confirm produces: the same message again."""
    topic, got = fresh_topic("duplicate"), []

    async def handler(msg, ctx):
        got.append(msg.n)

    body = messages.encode(Knock(n=1), None)
    async with consuming(bus, topic, handler):
        async with await aio_pika.connect(broker.url) as connection:
            channel = await connection.channel()
            for n in (1, 1, 2):  # the third is another message, to know when the first two are done
                await channel.default_exchange.publish(
                    aio_pika.Message(body if n == 1 else messages.encode(Knock(n=2), None),
                                     message_id=f"m-{n}", delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
                    queue_name(topic))
        await wait_for_count(got, 2)
    assert sorted(got) == [1, 2]



async def test_queue_depth_gauge_counts_what_waits_at_the_broker(bus, other_bus, monkeypatch):
    from nova_async.bus import amqp_consumer
    from nova_async.common import metrics

    monkeypatch.setattr(amqp_consumer, "DEPTH_INTERVAL", 0.05)
    topic, release = fresh_topic("depth"), asyncio.Event()
    for i in range(5):
        await bus.cast(topic, Knock(n=i))

    async def held(msg, ctx):
        await release.wait()

    gauge = f'nova_async_bus_queue_depth{{topic="{topic}"}} 4.0'.encode()
    async with consuming(other_bus, topic, held, concurrency=1):
        try:   # one message held by the handler, four waiting at the broker
            await waiting.until(metrics.render, lambda text: gauge in text, what=gauge.decode(), timeout=WAIT)
        finally:
            release.set()


# -- the nodes of a cluster, and quorum queues (a cluster of several nodes: test_amqp_cluster.py)

async def fresh_vhost(broker) -> str:
    """A virtual host of its own on the shared broker: its `nova` exchange is declared durable
    by a quorum bus, which the other tests' buses (not durable) would be refused."""
    vhost = f"test-{uuid.uuid4().hex[:8]}"
    await broker.rabbitmqctl("add_vhost", vhost)
    await broker.rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
    return broker.url + vhost


async def queue_types(broker, vhost_url: str) -> dict[str, str]:
    listed = await broker.rabbitmqctl("list_queues", "-p", vhost_url.rsplit("/", 1)[1], "--no-table-headers",
                                      "name", "type")
    return dict(line.split("\t") for line in listed.splitlines() if "\t" in line)


async def test_with_several_urls_the_first_node_that_answers_is_used(broker):
    from tests.rabbitmq import free_port

    nowhere = free_port()   # nothing listens there
    transport = f"rabbit://guest:guest@127.0.0.1:{nowhere},guest:guest@127.0.0.1:{broker.port}/"
    topic, got = fresh_topic("nodes"), []

    async def handler(msg, ctx):
        got.append(msg.n)
        return Answer(n=msg.n)

    with structlog.testing.capture_logs() as logs:
        async with AmqpBus(transport) as bus:
            assert bus.url == f"amqp://guest:guest@127.0.0.1:{broker.port}/"
            async with consuming(bus, topic, handler):
                await bus.cast(topic, Knock(n=1))
                assert await bus.call(topic, Knock(n=2)) == Answer(n=2)
                await wait_for_count(got, 2)
    connected = [entry for entry in logs if entry["event"] == "connected to RabbitMQ"]
    assert connected[0]["url"] == f"amqp://guest:***@127.0.0.1:{broker.port}/"
    assert "guest:guest" not in repr(logs)

    with pytest.raises(errors.Unavailable) as nobody:
        async with AmqpBus(f"rabbit://guest:secret@127.0.0.1:{nowhere},guest:secret@127.0.0.1:{free_port()}/"):
            pass
    assert f"cannot reach RabbitMQ at any of amqp://guest:***@127.0.0.1:{nowhere}/" in nobody.value.message
    assert "secret" not in nobody.value.message


async def test_quorum_queues_carry_casts_and_calls_and_the_reply_queue_stays_classic(broker):
    url = await fresh_vhost(broker)
    topic, got = fresh_topic("quorum"), []

    async def handler(msg, ctx):
        got.append(msg.n)
        return Answer(n=msg.n + 1)

    async with AmqpBus(url, quorum=True) as bus, AmqpBus(url, quorum=True) as other:
        for i in range(5):   # before anyone consumes: they wait in the quorum queue
            await bus.cast(topic, Knock(n=i))
        async with consuming(other, topic, handler):
            assert await bus.call(topic, Knock(n=10)) == Answer(n=11)
            await wait_for_count(got, 6)
        types = await queue_types(broker, url)
    assert sorted(got) == [0, 1, 2, 3, 4, 10]
    assert types[queue_name(topic)] == "quorum"
    assert {t for name, t in types.items() if ".reply." in name} == {"classic"}


async def test_switching_to_quorum_queues_as_the_readme_says(broker):
    """A site that ran without the option has a classic role queue and a `nova` exchange (and
    notification queues) that are not durable. Each refuses a process with the option with
    one line naming it and the way out; the README's steps (the queue deleted once empty, the
    broker restarted) make the switch."""
    url = await fresh_vhost(broker)
    topic, got = fresh_topic("switch"), []

    async def handler(msg, ctx):
        got.append(msg.n)

    async with AmqpBus(url) as old:
        await old.cast(topic, Knock(n=1))
        await old.publish(Notification(event_type="instance.create.end", payload={}))
        async with consuming(old, topic, handler):   # drained with the old setting
            await wait_for_count(got, 1)

    with pytest.raises(errors.Unavailable) as refused:
        async with AmqpBus(url, quorum=True):
            pass
    assert refused.value.message.startswith("RabbitMQ exchange nova exists, and not as rabbit_quorum_queue = true "
                                            "declares it (durable=True")

    await broker.restart()   # the exchange and the notification queues were not durable; the role queue is
    async with AmqpBus(url, quorum=True) as bus:
        with pytest.raises(errors.Unavailable) as refused:
            await bus.consume(topic, handler)
        with pytest.raises(errors.Unavailable) as also:   # at once, not after the publish deadline
            await asyncio.wait_for(bus.cast(topic, Knock(n=2)), WAIT)
        message = refused.value.message
        assert also.value.message == message and "\n" not in message
        assert message.startswith(f"RabbitMQ queue {queue_name(topic)} exists, and not as rabbit_quorum_queue = true "
                                  "declares it (a quorum queue)")
        assert f"rabbitmqctl delete_queue {queue_name(topic)}" in message

        await broker.rabbitmqctl("delete_queue", "-p", url.rsplit("/", 1)[1], queue_name(topic))
        await bus.cast(topic, Knock(n=3))
        async with consuming(bus, topic, handler):
            await wait_for_count(got, 2)
        await bus.publish(Notification(event_type="instance.create.end", payload={}))
        types = await queue_types(broker, url)
    assert got == [1, 3]
    assert types[queue_name(topic)] == types["versioned_notifications.info"] == "quorum"


class Forget(Message, frozen=True, kw_only=True):
    REDELIVERABLE = True
    n: int


CALL_CONSUMER_THAT_DIES = CONSUMER_THAT_DIES.replace("class Knock(", "class Forget(").replace(
    "    n: int\n", "    REDELIVERABLE = True\n    n: int\n", 1)


async def test_a_redeliverable_call_held_by_a_consumer_that_dies_is_answered_by_another(broker, bus, other_bus):
    topic = fresh_topic("redeliver-call")
    async with consumer_that_dies(broker, bus, topic, CALL_CONSUMER_THAT_DIES) as handling:
        asking = asyncio.create_task(bus.call(topic, Forget(n=7), timeout=WAIT))
    assert handling == ["handling 7"]

    async def handler(msg, ctx):
        return Answer(n=msg.n)

    async with consuming(other_bus, topic, handler):
        assert await asyncio.wait_for(asking, WAIT) == Answer(n=7)


async def test_a_redeliverable_call_whose_answer_went_with_the_reply_queue_is_asked_again(
        broker, bus, other_bus, monkeypatch):
    """The caller's reply queue is gone when the answer is sent (a broker restart takes it: it
    is not durable), and the answer with it: once the queue is declared again, the caller asks
    again rather than waiting out its timeout."""
    topic, asked = fresh_topic("ask-again"), []
    monkeypatch.setattr(amqp, "REPLY_WINDOW", 0)   # an answer finding no queue is lost at once

    async def handler(msg, ctx):
        asked.append(msg.n)
        if len(asked) == 1:
            await broker.rabbitmqctl("delete_queue", bus._reply_queue)
        return Answer(n=msg.n)

    async with consuming(other_bus, topic, handler):
        assert await bus.call(topic, Forget(n=3), timeout=WAIT) == Answer(n=3)
    assert asked == [3, 3]
