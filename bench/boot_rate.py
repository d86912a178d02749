"""Boot rate: N servers requested at once across simulated hosts (libvirt's test driver).

Starts `nova-async serve --simulate-hosts H --auth noauth` with a private database in a
temporary state dir, boots N servers concurrently, and prints POST→202 and POST→ACTIVE
percentiles, boots per second and the service's peak RSS, beside Nova's published figure.
With `--transport both` (the default) it does so twice in the same run, once on the
in-memory bus and once with every message going through RabbitMQ (its own broker, all state
in a temporary dir), and prints the ratios.

    .venv/bin/python bench/boot_rate.py [--servers 200] [--hosts 20] [--transport both|memory|amqp]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.rabbitmq, when run as a script

NOVA_FAKE_DRIVER_MEDIAN_S = 6.2  # Rally, fake driver, 50 concurrent requests (published)
SERVE_ARGS: list[str] = []   # more flags for `serve`, from the command line
HEADERS = {"X-Auth-Token": "admin", "X-Auth-Project-Id": "admin",
           "OpenStack-API-Version": "compute 2.96"}
FLAVOR = {"ram": 64, "vcpus": 1, "disk": 1}   # every server's size (nova_vs_upstream.py gives Nova the same)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def status_mb(pid: int, field: str) -> float:
    """A memory figure of /proc/<pid>/status (VmRSS, VmHWM: its peak), in MiB."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb(pid: int) -> float:
    return status_mb(pid, "VmHWM")


def _cpu_s(pid: int, children_too: bool = True) -> float:
    """CPU seconds (user + system) of a process, with those of its children it has waited for."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children_too else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


async def db_counters(state: str) -> tuple[int, int]:
    """Over every database of the service's private PostgreSQL: the transactions ended so far
    (committed or rolled back; a statement sent on its own is one, so this counts round trips,
    near enough, without pg_stat_statements), and the blocks read (from shared buffers or not):
    the work its statements did, which unlike CPU time does not swing with what else runs."""
    import asyncpg
    conn = await asyncpg.connect(host=os.path.join(state, "postgres", "run"), user="nova", database="postgres")
    try:
        row = await conn.fetchrow("SELECT sum(xact_commit + xact_rollback)::bigint,"
                                  " sum(blks_hit + blks_read)::bigint FROM pg_stat_database")
        return row[0], row[1]
    finally:
        await conn.close()


async def bus_calls(s: aiohttp.ClientSession, url: str) -> int:
    """Bus calls (request and answer) the service has made so far, from its /metrics."""
    async with s.get(url + "/metrics") as r:
        text = await r.text()
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("nova_async_bus_rpc_duration_seconds_count{")))


def service_cpu_s(pid: int, state: str) -> float:
    """CPU seconds the service has used so far: its own process (and the qemu-img and other
    children it ran), plus its private PostgreSQL server and every backend of it. Rates in
    a shared box swing with whatever else runs; the CPU a boot costs does not, much."""
    total = _cpu_s(pid)
    try:
        with open(os.path.join(state, "postgres", "data", "postmaster.pid")) as fh:
            postmaster = int(fh.readline())
    except (OSError, ValueError):
        return total
    total += _cpu_s(postmaster)  # with the backends that have exited
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                        total += _cpu_s(int(entry), children_too=False)
            except (OSError, ValueError, IndexError):
                continue
    return total


async def stop(proc: asyncio.subprocess.Process, grace: float = 120) -> None:
    """SIGTERM, so that the service stops its PostgreSQL too; killed if it takes longer than `grace`."""
    if proc.returncode is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        proc.kill()
        await proc.wait()


@contextlib.asynccontextmanager
async def serving(state: str, hosts: int,
                  transport: str = "memory") -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """The service and its URL while the block runs; its log is read (and dropped) meanwhile,
    so that a full pipe never stalls it, and it is stopped at the end."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nova_async", "serve", "--listen", f"127.0.0.1:{port}", "--state-dir", state,
        "--auth", "noauth", "--simulate-hosts", str(hosts), "--transport", transport, *SERVE_ARGS,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    assert proc.stdout is not None
    try:
        async for line in proc.stdout:
            if b"nova-async ready" in line:
                break
        else:
            raise SystemExit("nova-async exited before it was ready")
    except BaseException:
        await stop(proc)
        raise
    async with asyncio.TaskGroup() as tg:
        tg.create_task(proc.stdout.read(), name="drain-log")   # ends when the service exits
        try:
            yield proc, f"http://127.0.0.1:{port}"
        finally:
            await stop(proc)


async def prepare(s: aiohttp.ClientSession, url: str) -> dict:
    async def post(path: str, body: dict) -> dict:
        async with s.post(url + path, json=body, headers=HEADERS) as r:
            assert r.status < 300, await r.text()
            return await r.json()

    # Every server is the admin project's: lift its quotas, so the run measures boots, not 403s.
    async with s.put(url + "/compute/v2.1/os-quota-sets/admin", headers=HEADERS, json={
            "quota_set": {"instances": -1, "cores": -1, "ram": -1}}) as r:
        assert r.status == 200, await r.text()
    flavor = (await post("/compute/v2.1/flavors", {"flavor": {"name": "bench", **FLAVOR}}))["flavor"]["id"]
    image = (await post("/image/v2/images", {"name": "bench", "disk_format": "raw",
                                             "container_format": "bare"}))["id"]
    async with s.put(f"{url}/image/v2/images/{image}/file", data=b"\0" * 65536,
                     headers={**HEADERS, "Content-Type": "application/octet-stream"}) as r:
        assert r.status == 204
    net = (await post("/network/v2.0/networks", {"network": {"name": "bench"}}))["network"]["id"]
    await post("/network/v2.0/subnets", {"subnet": {"network_id": net, "cidr": "10.10.0.0/16",
                                                    "ip_version": 4}})
    return {"flavorRef": flavor, "imageRef": image, "networks": [{"uuid": net}]}


async def boot_one(s: aiohttp.ClientSession, url: str, base: dict, i: int) -> tuple[str, float, float]:
    t0 = time.perf_counter()
    async with s.post(url + "/compute/v2.1/servers", json={"server": {**base, "name": f"b{i}"}},
                      headers=HEADERS) as r:
        assert r.status == 202, await r.text()
        server = (await r.json())["server"]["id"]
    return server, t0, time.perf_counter() - t0


STALLED_S = 2.0   # seconds with no server newly seen before a round looks back to the start


async def watch(s: aiohttp.ClientSession, url: str, count: int, done: dict[str, tuple[float, str]]) -> None:
    """Poll as Nova's clients are told to (`changes-since`): each round lists only the servers
    that changed since shortly before the previous round, so watching thousands of servers
    costs the service little next to what is measured.

    A server's `updated_at` is stamped by whoever changed it, which on a loaded service can be
    seconds before that change commits (upstream Nova: a compute host's save, sent through
    the conductor): such a server never shows in a round that asks for changes since after
    its stamp. So when STALLED_S pass with no server newly seen, one round asks for every
    change since the watch began (one page of each list: the API's, 1,000 servers in Nova)."""
    began = since = datetime.now(timezone.utc) - timedelta(minutes=1)
    last_seen = time.perf_counter()
    while len(done) < count:
        polled = datetime.now(timezone.utc)
        stalled = time.perf_counter() - last_seen > STALLED_S
        try:
            for status in ("ACTIVE", "ERROR"):   # short summary lists: ids of servers now in each
                query = urllib.parse.urlencode({"status": status,
                                                "changes-since": (began if stalled else since).isoformat()})
                async with s.get(f"{url}/compute/v2.1/servers?{query}", headers=HEADERS) as r:
                    now = time.perf_counter()
                    for server in (await r.json())["servers"]:
                        if server["id"] not in done:
                            done[server["id"]] = (now, status)
                            last_seen = now
            if stalled:
                last_seen = time.perf_counter()   # once per stall
        except aiohttp.ClientConnectionError:
            # A kept-alive connection the server closed as it was taken (gunicorn's, under
            # upstream Nova, closes idle ones after 2 s): the round is polled again, from the
            # same `since`, as any client retries a GET.
            await asyncio.sleep(0.05)
            continue
        since = polled - timedelta(seconds=1)   # the service's clock is this machine's: a small overlap
        await asyncio.sleep(0.05)


async def run_once(servers: int, hosts: int, transport: str) -> dict[str, float]:
    state = tempfile.mkdtemp(prefix="nova-async-bench-")
    os.chmod(state, 0o755)
    try:
        async with serving(state, hosts, transport) as (proc, url), \
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            base = await prepare(s, url)
            t0 = time.perf_counter()
            cpu0 = service_cpu_s(proc.pid, state)
            done: dict[str, tuple[float, str]] = {}
            async with asyncio.timeout(600), asyncio.TaskGroup() as tg:
                tg.create_task(watch(s, url, servers, done), name="watch")
                posted = await asyncio.gather(*(boot_one(s, url, base, i) for i in range(servers)))
            wall = time.perf_counter() - t0
            cpu = service_cpu_s(proc.pid, state) - cpu0
            rss = peak_rss_mb(proc.pid)
        accepted = [p[2] for p in posted]
        active = [done[sid][0] - start for sid, start, _ in posted if done[sid][1] == "ACTIVE"]
        nan = float("nan")
        return {"errors": servers - len(active),
                "accept_p50": statistics.median(accepted), "accept_p95": pct(accepted, .95),
                "active_p50": statistics.median(active) if active else nan,
                "active_p95": pct(active, .95) if active else nan,
                "boots_s": len(active) / wall, "cpu_ms": cpu / servers * 1000, "rss_mb": rss}
    finally:
        shutil.rmtree(state, ignore_errors=True)


async def with_broker(servers: int, hosts: int) -> dict[str, float]:
    from tests.rabbitmq import Broker

    base = Path(tempfile.mkdtemp(prefix="nova-async-bench-rabbitmq-"))
    broker = Broker(base)
    try:
        print("starting RabbitMQ …", file=sys.stderr)
        await broker.start()
        return await run_once(servers, hosts, broker.url)
    finally:
        await broker.close()
        shutil.rmtree(base, ignore_errors=True)


ROWS = [("POST->202 p50 (ms)", "accept_p50", 1000), ("POST->202 p95 (ms)", "accept_p95", 1000),
        ("POST->ACTIVE p50 (ms)", "active_p50", 1000), ("POST->ACTIVE p95 (ms)", "active_p95", 1000),
        ("boots/s", "boots_s", 1),
        # the service and its PostgreSQL, user + system: steadier than rates on a shared box
        ("service CPU/boot (ms)", "cpu_ms", 1), ("peak RSS (MiB)", "rss_mb", 1), ("errors", "errors", 1)]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=200)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--transport", choices=("both", "memory", "amqp"), default="both")
    parser.add_argument("--notifications-file", metavar="PATH",
                        help="the service writes its versioned notifications there (what they cost when heard)")
    args = parser.parse_args()
    if args.notifications_file:
        SERVE_ARGS.extend(["--notifications-file", args.notifications_file])
    results = {}
    if args.transport in ("both", "memory"):
        results["memory"] = await run_once(args.servers, args.hosts, "memory")
    if args.transport in ("both", "amqp"):
        results["rabbitmq"] = await with_broker(args.servers, args.hosts)
    print(f"servers={args.servers} hosts={args.hosts}")
    print(f"{'':24}" + "".join(f"{name:>12}" for name in results) + ("       ratio" if len(results) == 2 else ""))
    for label, key, scale in ROWS:
        values = [r[key] * scale for r in results.values()]
        ratio = f"{values[1] / values[0]:11.2f}x" if len(values) == 2 and values[0] else ""
        print(f"{label:24}" + "".join(f"{v:12.1f}" for v in values) + ratio)
    for name, r in results.items():
        p50 = r["active_p50"]
        print(f"reference: Nova (fake driver, 50 concurrent) median boot-to-ACTIVE {NOVA_FAKE_DRIVER_MEDIAN_S} s; "
              f"ours on {name} {p50:.2f} s (ratio {NOVA_FAKE_DRIVER_MEDIAN_S / p50:.1f}x)")


if __name__ == "__main__":
    asyncio.run(main())
