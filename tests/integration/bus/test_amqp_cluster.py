"""The RabbitMQ bus on a cluster of three real RabbitMQ nodes on this machine, with quorum
queues: the queues are replicated on every node, and the node a process is connected to can
die in the middle of a burst of casts without one of them being lost. The cluster takes tens of
seconds to form, so one serves the whole module."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from nova_async.bus.amqp import AmqpBus, queue_name
from nova_async.bus.messages import Notification
from tests import waiting
from tests.integration.bus.test_amqp_bus import WAIT, Answer, Knock, consuming, fresh_topic, wait_for_count
from tests.rabbitmq import available, cluster_started

pytestmark = pytest.mark.xdist_group("rabbitmq-cluster")
BURST = 300
LISTENER = Path(__file__).resolve().parents[3] / "examples" / "notification_listener.py"


@pytest.fixture(scope="module")
async def cluster(work_dir):
    why = available()
    if why:
        pytest.fail(why)
    async with cluster_started(work_dir / "rabbitmq-cluster", size=3) as started:
        yield started


@pytest.fixture
async def nodes_up(cluster):
    """The cluster with every node running (a test may have killed one)."""
    for node in cluster.nodes:
        if not node.running:
            await node.start()
    await cluster.nodes[0].rabbitmqctl("await_online_nodes", str(len(cluster.nodes)))
    return cluster


async def queues(node) -> dict[str, list[str]]:
    """Queue name → [type, members] as the broker lists them."""
    listed = await node.rabbitmqctl("list_queues", "--no-table-headers", "name", "type", "members")
    return {name: rest for name, *rest in (line.split("\t") for line in listed.splitlines() if "\t" in line)}


def port_of(bus: AmqpBus) -> int:
    return int(bus.url.rsplit(":", 1)[1].strip("/"))


async def test_quorum_queues_are_replicated_on_every_node(nodes_up):
    cluster = nodes_up
    topic, got = fresh_topic("replicated"), []

    async def handler(msg, ctx):
        got.append(msg.n)
        return Answer(n=msg.n)

    async with AmqpBus(cluster.transport, quorum=True) as bus, AmqpBus(cluster.transport, quorum=True) as other:
        async with consuming(other, topic, handler):
            await bus.cast(topic, Knock(n=1))
            assert await bus.call(topic, Knock(n=2)) == Answer(n=2)
            await wait_for_count(got, 2)
        with bus.listen() as heard:
            note = Notification(event_type="instance.create.end", payload={"instance_uuid": "x"})
            await other.publish(note)
            assert await asyncio.wait_for(heard.get(), WAIT) == note
        listed = await queues(cluster.nodes[1])
    everyone = {node.nodename for node in cluster.nodes}
    for name in (queue_name(topic), "versioned_notifications.info"):   # as oslo's rabbit_quorum_queue declares it
        kind, members = listed[name]
        assert kind == "quorum"
        assert set(members.strip("[]").replace("'", "").replace('"', "").replace(" ", "").split(",")) == everyone
    assert {kind for name, (kind, _) in listed.items() if ".reply." in name} == {"classic"}


async def test_an_oslo_messaging_listener_with_quorum_queues_receives_the_notifications(nodes_up):
    """oslo.messaging's rabbit_quorum_queue declares the `nova` exchange and the
    versioned_notifications queues as the bus does with the option: neither side is refused
    (PRECONDITION_FAILED), whichever declares first, and the notifications get through."""
    cluster = nodes_up
    async with AmqpBus(cluster.transport, quorum=True) as bus:
        await bus.publish(Notification(event_type="instance.delete.end", payload={}))   # the bus declares first
        listener = await asyncio.create_subprocess_exec(
            sys.executable, str(LISTENER), cluster.transport, "--rabbit-quorum-queue", "--until",
            "instance.shutdown.end", "--timeout", str(WAIT), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            assert listener.stderr is not None
            async with asyncio.timeout(WAIT):
                while b"listening" not in (line := await listener.stderr.readline()):
                    assert line, "the listener ended before it listened"
            await bus.publish(Notification(event_type="instance.shutdown.end", payload={"instance_uuid": "oslo"}))
            async with asyncio.timeout(WAIT):
                out, err = await listener.communicate()
        finally:
            if listener.returncode is None:
                listener.kill()
                await listener.wait()
    assert listener.returncode == 0, err.decode()[-2000:]
    # (the queue also holds what the module's other tests published while nobody listened)
    printed = [(n["event_type"], n["payload"]) for n in map(json.loads, out.decode().splitlines())]
    assert ("instance.delete.end", {}) in printed   # sent before the listener started: it waited in its queue
    assert ("instance.shutdown.end", {"instance_uuid": "oslo"}) in printed


async def test_the_node_in_use_killed_mid_burst_loses_no_cast(nodes_up):
    """Sender and receiver both on the first node, which dies (SIGKILL) a third of the way
    through: both move to another node, the sends that were not confirmed are sent again and
    the casts that were not acknowledged are delivered again. Every cast is handled (some
    twice: handlers are idempotent), none is lost."""
    cluster = nodes_up
    first = cluster.nodes[0]
    topic, got = fresh_topic("node-killed"), []

    async def handler(msg, ctx):
        await asyncio.sleep(0.01)   # so that some casts are being handled, unacknowledged, at the kill
        got.append(msg.n)

    async with AmqpBus(cluster.transport, quorum=True) as sender, \
            AmqpBus(cluster.transport, quorum=True) as receiver:
        assert port_of(sender) == port_of(receiver) == first.port
        async with consuming(receiver, topic, handler, concurrency=8), asyncio.TaskGroup() as tg:

            async def send_all():
                for i in range(BURST):
                    if i == BURST // 3:   # the kill, while the casts go on being sent
                        tg.create_task(first.stop(kill=True), name="test:kill")
                    await sender.cast(topic, Knock(n=i))

            await asyncio.wait_for(send_all(), 3 * WAIT)
            await waiting.until(lambda: got, lambda seen: set(seen) >= set(range(BURST)),
                                what=f"all {BURST} casts handled", timeout=3 * WAIT)
        assert port_of(sender) != first.port and port_of(receiver) != first.port
    assert set(got) == set(range(BURST))
