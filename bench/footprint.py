"""Memory as servers accumulate: the service's resident set with 0, 1,000 and 10,000 servers.

Starts `nova-async serve --simulate-hosts H --auth noauth` (libvirt's test driver, a private
database in a temporary state dir), boots servers in waves of B concurrent POSTs until each
mark is reached and every server is ACTIVE, then lets the service settle (a few periodic
rounds) and prints its RSS there, beside its peak so far and its PostgreSQL's. Memory that
grows with the servers that exist, not with the ones in flight, shows as the slope between
the marks. Nothing is asserted.

The test driver keeps each host's domains inside the service's own process (libvirt's test
driver is a library, not a daemon), so the slope includes what libvirt holds per domain, which
a real host keeps in libvirtd instead.

    .venv/bin/python bench/footprint.py [--hosts 1000] [--marks 0,1000,10000] [--batch 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time

import aiohttp

from boot_rate import boot_one, peak_rss_mb, prepare, watch
from schedule_rate import serving

SETTLE_S = 25.0   # long enough for the periodic jobs (heartbeats, power sync) to run a round


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def postgres_rss_mb(state: str) -> float:
    """The private PostgreSQL's resident set, over its server and backends (shared buffers once)."""
    try:
        with open(os.path.join(state, "postgres", "data", "postmaster.pid")) as fh:
            postmaster = int(fh.readline())
    except (OSError, ValueError):
        return float("nan")
    pids = [postmaster]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                        pids.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    total = 0.0
    for pid in pids:   # private memory of each (Pss shares what they share)
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) / 1024
        except OSError:
            continue
    return total


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--marks", default="0,1000,10000", help="server counts to measure at, ascending")
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()
    marks = [int(m) for m in args.marks.split(",")]
    state = tempfile.mkdtemp(prefix="nova-async-bench-")
    os.chmod(state, 0o755)
    rows: list[tuple[int, float, float, float, float]] = []
    try:
        async with serving(state, args.hosts, []) as (proc, url):
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
                base = await prepare(s, url)
                booted = 0
                for mark in marks:
                    t0 = time.perf_counter()
                    done: dict[str, tuple[float, str]] = {}
                    async with asyncio.timeout(3600), asyncio.TaskGroup() as tg:
                        tg.create_task(watch(s, url, mark - booted, done), name="watch")
                        for first in range(booted, mark, args.batch):
                            await asyncio.gather(*(boot_one(s, url, base, i)
                                                   for i in range(first, min(first + args.batch, mark))))
                    errors = sum(1 for _, status in done.values() if status != "ACTIVE")
                    took = time.perf_counter() - t0
                    booted = mark
                    await asyncio.sleep(SETTLE_S)
                    rows.append((mark, rss_mb(proc.pid), peak_rss_mb(proc.pid), postgres_rss_mb(state), took))
                    print(f"  {mark:6d} servers ({errors} not ACTIVE, booted in {took:.0f} s): "
                          f"RSS {rows[-1][1]:.1f} MiB", flush=True)
        print(f"hosts={args.hosts} batch={args.batch}")
        print(f"{'servers':>8} {'RSS MiB':>9} {'peak MiB':>9} {'PostgreSQL PSS MiB':>19}")
        for mark, rss, peak, pg, _ in rows:
            print(f"{mark:8d} {rss:9.1f} {peak:9.1f} {pg:19.1f}")
        if len(rows) > 1 and rows[-1][0] > rows[0][0]:
            slope = (rows[-1][1] - rows[0][1]) / (rows[-1][0] - rows[0][0]) * 1024
            print(f"growth per existing server: {slope:.2f} KiB   (target: peak <= 150 MiB at 10,000 servers)")
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
