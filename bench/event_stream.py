"""Event stream under load: N servers changing at once, watched by S streams.

Starts `nova-async serve --simulate-hosts 1 --auth noauth` (libvirt's test driver, a private
database in a temporary state dir), writes N instance rows straight into its cell1 database,
opens S streams (`GET /compute/v2.1/events?all_tenants=1`, read with aiohttp as `curl -N`
reads it), then W writers, each in its own transaction per round, set the task_state of
their share of the N servers, R rounds each (N×R changes, commits interleaved as a busy cloud
interleaves them). Every stream must get each change once, in each server's order (counted,
and a line says how many were missed or repeated), and the script prints, per stream,
the latency from the writer's commit to the event's arrival (p50, p95, max) and the
events per second delivered from the first commit to the last event. Then the same for
changes made one at a time (a server's life as a dashboard follows it): Q single-row
commits, each once the previous one's event arrived. Nothing is asserted.

The peer: none. Nova has no event stream (its clients poll GET /servers/detail with
changes-since); bench/boot_rate.py measures that polling. The writes go straight to the
database so that the numbers are the stream's alone, not the compute role's.

    .venv/bin/python bench/event_stream.py [--servers 1000] [--rounds 5] [--writers 4] [--streams 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid

import aiohttp
import asyncpg

from boot_rate import HEADERS, serving


async def read_stream(resp: aiohttp.ClientResponse, wanted: int, got: dict[str, list[tuple[str, float]]]) -> None:
    """Changes (task_state, arrival) per server until `wanted` have arrived."""
    count = 0
    data = None
    while count < wanted:
        line = await resp.content.readline()
        if not line:
            raise SystemExit("the stream ended early")
        if line.startswith(b"data: "):
            data = line[6:]
        elif line == b"\n" and data is not None:
            event = json.loads(data)
            data = None
            state = event.get("OS-EXT-STS:task_state") or ""
            if state.startswith("round-"):
                got.setdefault(event["id"], []).append((state, time.monotonic()))
                count += 1


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * q))]


async def one_at_a_time(cell: asyncpg.Connection, uuids: list[str], resp: aiohttp.ClientResponse) -> list[float]:
    """Commit→event latency of single changes, each made once the last one's event came."""
    latency = []
    for n, u in enumerate(uuids):
        await cell.execute("UPDATE instances SET task_state = $2 WHERE uuid = $1", u, f"single-{n}")
        at = time.monotonic()
        while True:
            line = await resp.content.readline()
            if line.startswith(b"data: ") and f'"single-{n}"'.encode() in line:
                latency.append(time.monotonic() - at)
                break
    return latency


async def run(servers: int, rounds: int, writers: int, streams: int, quiet: int) -> None:
    with tempfile.TemporaryDirectory(prefix="nova-async-bench-") as state:
        os.chmod(state, 0o755)   # the private PostgreSQL's user must reach it
        async with serving(state, hosts=1) as (_proc, url):
            cell = await asyncpg.connect(f"postgresql://nova@/nova_cell1?host={state}/postgres/run")
            uuids = [str(uuid.uuid4()) for _ in range(servers)]
            await cell.execute(
                "INSERT INTO instances (uuid, display_name, project_id, user_id, reservation_id, flavor,"
                " request_spec, vm_state) SELECT u, 'bench', 'admin', 'admin', 'r-bench',"
                " '{\"name\": \"bench\"}', '{}', 'active' FROM unnest($1::uuid[]) AS u", uuids)
            committed: dict[tuple[str, str], float] = {}
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as s:
                responses = [await s.get(f"{url}/compute/v2.1/events?all_tenants=1", headers=HEADERS)
                             for _ in range(streams)]
                for r in responses:
                    assert r.status == 200, await r.text()
                got: list[dict[str, list[tuple[str, float]]]] = [{} for _ in responses]
                readers = [asyncio.create_task(read_stream(r, servers * rounds, g), name=f"stream-{i}")
                           for i, (r, g) in enumerate(zip(responses, got))]
                pools = [await asyncpg.connect(f"postgresql://nova@/nova_cell1?host={state}/postgres/run")
                         for _ in range(writers)]

                async def write(conn: asyncpg.Connection, part: list[str]) -> None:
                    for n in range(rounds):
                        async with conn.transaction():
                            await conn.execute("UPDATE instances SET task_state = $2 WHERE uuid = ANY($1::uuid[])",
                                               part, f"round-{n}")
                        at = time.monotonic()
                        for u in part:
                            committed[(u, f"round-{n}")] = at

                step = -(-servers // writers)
                started = time.monotonic()
                await asyncio.gather(*(write(c, uuids[i * step:(i + 1) * step]) for i, c in enumerate(pools)))
                wrote = time.monotonic() - started
                try:
                    async with asyncio.timeout(120):
                        await asyncio.gather(*readers)
                except TimeoutError:
                    print("some changes did not arrive within 120 s")
                    for t in readers:
                        t.cancel()
                single = await one_at_a_time(cell, uuids[:quiet], responses[0])
                for r in responses:
                    r.close()
            for c in (cell, *pools):
                await c.close()
    print(f"{servers} servers × {rounds} rounds by {writers} writers = {servers * rounds} changes, "
          f"{streams} streams; the writes took {wrote * 1000:.0f} ms")
    for i, g in enumerate(got):
        expected = [f"round-{n}" for n in range(rounds)]
        wrong = sum(1 for u in uuids if [st for st, _ in g.get(u, [])] != expected)
        latency = [at - committed[(u, st)] for u, seen in g.items() for st, at in seen]
        if not latency:
            print(f"stream {i}: nothing arrived")
            continue
        last = max(at for seen in g.values() for _, at in seen)
        print(f"stream {i}: {len(latency)} events, servers out of order/missing/repeated: {wrong}; "
              f"commit→event p50 {statistics.median(latency) * 1000:.1f} ms, "
              f"p95 {pct(latency, 0.95) * 1000:.1f} ms, max {max(latency) * 1000:.1f} ms; "
              f"{len(latency) / (last - started):.0f} events/s")


    print(f"{len(single)} single changes one at a time: commit→event p50 {statistics.median(single) * 1000:.1f} ms, "
          f"p95 {pct(single, 0.95) * 1000:.1f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--servers", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--streams", type=int, default=2)
    p.add_argument("--quiet", type=int, default=200, help="single changes made one at a time")
    a = p.parse_args()
    asyncio.run(run(a.servers, a.rounds, a.writers, a.streams, a.quiet))


if __name__ == "__main__":
    main()
