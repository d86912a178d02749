"""The bus: RPC round trip (p50/p99) and casts per second, in-memory vs RabbitMQ, same run.

Starts its own RabbitMQ (Debian's rabbitmq-server, all state in a temporary directory, on
free ports), then measures each transport the same way: `--calls` calls one after another
to an echo handler, and `--casts` casts sent with up to `--in-flight` awaiting the broker's
confirm at once, timed until the consumer has handled the last one. On RabbitMQ the sender
and the consumer are two connections, as two processes would be.

    .venv/bin/python bench/bus.py [--calls 2000] [--casts 5000] [--in-flight 64]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.rabbitmq, when run as a script

from nova_async.bus import Bus  # noqa: E402
from nova_async.bus.amqp import AmqpBus  # noqa: E402
from nova_async.bus.memory import MemoryBus  # noqa: E402
from nova_async.bus.messages import Message  # noqa: E402
from tests.rabbitmq import Broker  # noqa: E402


class BenchEcho(Message, frozen=True, kw_only=True):
    n: int


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


@contextlib.asynccontextmanager
async def consuming(bus: Bus, topic: str, handler) -> AsyncIterator[None]:
    until = asyncio.Event()
    task = asyncio.create_task(bus.consume(topic, handler, until=until), name=f"bench:{topic}")
    try:
        yield
    finally:
        until.set()
        await task


async def measure(sender: Bus, receiver: Bus, calls: int, casts: int, in_flight: int) -> dict[str, float]:
    async def echo(msg, ctx):
        return msg

    async with consuming(receiver, "bench.rpc", echo):
        for i in range(50):  # warm-up: connections, queues, code paths
            await sender.call("bench.rpc", BenchEcho(n=i))
        rtt = []
        for i in range(calls):
            t0 = time.perf_counter()
            await sender.call("bench.rpc", BenchEcho(n=i))
            rtt.append(time.perf_counter() - t0)

    handled = 0
    all_handled = asyncio.Event()

    async def count(msg, ctx):
        nonlocal handled
        handled += 1
        if handled == casts:
            all_handled.set()

    slots = asyncio.Semaphore(in_flight)

    async def cast(i: int) -> None:
        async with slots:
            await sender.cast("bench.cast", BenchEcho(n=i))

    async with consuming(receiver, "bench.cast", count):
        t0 = time.perf_counter()
        await asyncio.gather(*(cast(i) for i in range(casts)))
        await asyncio.wait_for(all_handled.wait(), 600)
        elapsed = time.perf_counter() - t0
    return {"p50": statistics.median(rtt) * 1000, "p99": pct(rtt, 0.99) * 1000, "casts_s": casts / elapsed}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--casts", type=int, default=5000)
    parser.add_argument("--in-flight", type=int, default=64)
    args = parser.parse_args()

    memory = MemoryBus()
    results = {"memory": await measure(memory, memory, args.calls, args.casts, args.in_flight)}
    memory.stop_intake()

    base = Path(tempfile.mkdtemp(prefix="nova-async-bench-rabbitmq-"))
    broker = Broker(base)
    try:
        print("starting RabbitMQ …", file=sys.stderr)
        await broker.start()
        async with AmqpBus(broker.url) as sender, AmqpBus(broker.url) as receiver:
            results["rabbitmq"] = await measure(sender, receiver, args.calls, args.casts, args.in_flight)
    finally:
        await broker.close()
        shutil.rmtree(base, ignore_errors=True)

    mem, amqp = results["memory"], results["rabbitmq"]
    print(f"calls={args.calls} casts={args.casts} in_flight={args.in_flight}")
    print(f"{'':18}{'memory':>12}{'rabbitmq':>12}{'ratio':>10}")
    print(f"{'RPC p50 (ms)':18}{mem['p50']:12.3f}{amqp['p50']:12.3f}{amqp['p50'] / mem['p50']:9.1f}x")
    print(f"{'RPC p99 (ms)':18}{mem['p99']:12.3f}{amqp['p99']:12.3f}{amqp['p99'] / mem['p99']:9.1f}x")
    print(f"{'casts/s':18}{mem['casts_s']:12.0f}{amqp['casts_s']:12.0f}{mem['casts_s'] / amqp['casts_s']:9.1f}x fewer")


if __name__ == "__main__":
    asyncio.run(main())
