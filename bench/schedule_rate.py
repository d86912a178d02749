"""Scheduling rate: many servers onto many simulated hosts, in waves of concurrent requests.

Starts `nova-async serve --simulate-hosts H --auth noauth` (libvirt's test driver, a private
database in a temporary state dir), lifts the project's quotas, and requests N servers in
batches of B concurrent POSTs: each batch is sent as soon as the previous one was accepted.
Prints scheduling decisions per second (from the scheduler's own "scheduled" log lines:
instances placed, first to last), the scheduler's time per decision, POST→ACTIVE p50/p95,
the CPU the service (with its PostgreSQL) spent per server, and its peak RSS, beside Nova's published anchors. Nothing is asserted.

    .venv/bin/python bench/schedule_rate.py [--hosts 1000] [--servers 2000] [--batch 50]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import datetime

import aiohttp

from boot_rate import (NOVA_FAKE_DRIVER_MEDIAN_S, _cpu_s, boot_one, bus_calls, db_counters, pct, peak_rss_mb,
                       prepare, service_cpu_s, stop, watch)

NOVA_SCHEDULER_DECISIONS_PER_S = 4.0   # published: Nova's filter scheduler, ~4 decisions/s


@contextlib.asynccontextmanager
async def serving(state: str, hosts: int, log: list[dict],
                  more: tuple[str, ...] = ()) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """The service and its URL while the block runs; its log is read meanwhile (the
    scheduler's decisions go to `log`), and it is stopped at the end. `more`: further
    arguments of `serve`."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nova_async", "serve", "--listen", f"127.0.0.1:{port}", "--state-dir", state,
        "--auth", "noauth", "--simulate-hosts", str(hosts), "--libvirt-uri", "test:///default", *more,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, limit=1 << 20)
    assert proc.stdout is not None

    def read(raw: bytes) -> dict:
        try:
            line = json.loads(raw)
        except ValueError:
            return {}
        if line.get("event") == "scheduled":
            log.append(line)
        elif line.get("level") in ("error", "critical"):  # a bench that errs says why
            print("service:", raw.decode(errors="replace").strip()[:4000], file=sys.stderr)
        return line

    async def pump() -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            read(raw)

    try:
        async with asyncio.timeout(900):
            async for raw in proc.stdout:
                if read(raw).get("event", "").startswith("nova-async ready"):
                    break
            else:
                raise SystemExit("nova-async exited before it was ready")
    except BaseException:  # stopped, so that it does not stay behind with its PostgreSQL
        await stop(proc)
        raise
    async with asyncio.TaskGroup() as tg:
        tg.create_task(pump(), name="log-pump")   # ends when the service exits
        try:
            yield proc, f"http://127.0.0.1:{port}"
        finally:
            await stop(proc)


def _ts(line: dict) -> float:
    return datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")).timestamp()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--servers", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()
    state = tempfile.mkdtemp(prefix="nova-async-bench-")
    os.chmod(state, 0o755)
    decisions: list[dict] = []
    t_start = time.perf_counter()
    try:
        async with serving(state, args.hosts, decisions) as (proc, url):
            started_in = time.perf_counter() - t_start
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
                base = await prepare(s, url)
                done: dict[str, tuple[float, str]] = {}
                posted = []
                (xacts0, blocks0), calls0 = await db_counters(state), await bus_calls(s, url)
                cpu0, own0 = service_cpu_s(proc.pid, state), _cpu_s(proc.pid, children_too=False)
                mine0 = time.process_time()
                t0 = time.perf_counter()
                async with asyncio.timeout(1800), asyncio.TaskGroup() as tg:
                    tg.create_task(watch(s, url, args.servers, done), name="watch")
                    for first in range(0, args.servers, args.batch):
                        batch = range(first, min(first + args.batch, args.servers))
                        posted += await asyncio.gather(*(boot_one(s, url, base, i) for i in batch))
                wall = time.perf_counter() - t0
                cpu = service_cpu_s(proc.pid, state) - cpu0
                own = _cpu_s(proc.pid, children_too=False) - own0
                mine = time.process_time() - mine0
                # (settled: every server ACTIVE; the pollers' reads are the API's, counted too)
                xacts, blocks = await db_counters(state)
                xacts, blocks = xacts - xacts0 - 1, blocks - blocks0
                calls = await bus_calls(s, url) - calls0
            rss = peak_rss_mb(proc.pid)
        active = [done[sid][0] - t for sid, t, _ in posted if done[sid][1] == "ACTIVE"]
        placed = sum(line["instances"] for line in decisions)
        # One decision, or several logged in the same microsecond (a small run): no span to divide by.
        span = _ts(decisions[-1]) - _ts(decisions[0]) if len(decisions) > 1 else 0.0
        rate = placed / span if span > 0 else float("nan")
        per_decision = [line["ms"] / line["instances"] for line in decisions]
        print(f"hosts={args.hosts} servers={args.servers} batch={args.batch} errors={args.servers - len(active)} "
              f"(service ready in {started_in:.1f} s)")
        print(f"scheduling decisions/s   {rate:8.1f}   (Nova's scheduler: ~{NOVA_SCHEDULER_DECISIONS_PER_S:.0f}/s; "
              f"target >= 400)")
        print(f"scheduler ms/decision    p50 {statistics.median(per_decision):6.1f}   p95 {pct(per_decision, .95):6.1f}")
        if active:
            p50, p95 = statistics.median(active), pct(active, .95)
            print(f"POST->ACTIVE             p50 {p50 * 1000:6.0f} ms   p95 {p95 * 1000:6.0f} ms   (target p95 < 500 ms; "
                  f"Nova fake driver median {NOVA_FAKE_DRIVER_MEDIAN_S} s at 50 concurrent)")
            accepted = [p[2] for p in posted]
            print(f"POST answered (202)      p50 {statistics.median(accepted) * 1000:6.0f} ms   "
                  f"p95 {pct(accepted, .95) * 1000:6.0f} ms   (a batch goes once the one before was answered)")
            print(f"boots/s                  {len(active) / wall:8.1f}")
        print(f"service CPU per server   {cpu / args.servers * 1000:8.1f} ms   (nova-async and its PostgreSQL, "
              f"user + system; steadier than rates on a shared box; target <= 4 ms)")
        print(f"  of which the service     {own / args.servers * 1000:8.1f} ms   (its Python process alone)")
        print(f"database transactions/server {xacts / args.servers:5.1f}   (statements sent on their own "
              f"count one each: round trips, near enough; the poller's GETs included)")
        print(f"database blocks/server   {blocks / args.servers:8.0f}   (read by its statements, from shared buffers "
              f"or not: their work, which a busy box does not change)")
        print(f"bus calls/server         {calls / args.servers:8.1f}   (request and answer, between roles)")
        print(f"bench client CPU/server {mine / args.servers * 1000:8.1f} ms   (this script: the POSTs and the poller, "
              f"on the same cores)")
        print(f"peak RSS                 {rss:8.1f} MiB")
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
