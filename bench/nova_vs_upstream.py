"""nova-async against upstream OpenStack Nova 34 + Placement 16: the same boot burst, same run.

First nova-async: `serve --simulate-hosts H --auth noauth` with its private PostgreSQL, as
boot_rate.py starts it. Then upstream, from its own venv (made once under
/var/cache/nova-async/bench-peer): a private MariaDB and RabbitMQ in a temp dir, Placement and
nova-api under gunicorn, nova-conductor, nova-scheduler and H nova-compute processes on Nova's
fake virt driver (bench/nova_peer.py starts and stops them all). Each side gets N concurrent
POST /servers of the same flavor over H hosts; we print POST→202 and POST→ACTIVE p50/p95,
boots/s (N over first POST to last ACTIVE), CPU per server of every process of each side
(service, database and broker apart, from /proc: user + system, with reaped children), the
peak RSS and PSS summed over each side's processes (sampled every 0.2 s), and ours/upstream ratios
beside the targets. Numbers, not verdicts: the exit code says nothing about them.

    .venv/bin/python bench/nova_vs_upstream.py [--servers 50] [--hosts 4] [--keep]
        [--api-workers 2] [--api-threads 4] [--service-workers 2] [--upstream-venv DIR]

(`make bench-peer ARGS='--servers 200 --hosts 20'`.) Upstream's memory grows with H: ~0.1 GiB
per nova-compute process.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import boot_rate  # noqa: E402
from bench import nova_peer as peer  # noqa: E402
from tests import rabbitmq  # noqa: E402
from tests.rabbitmq import Broker  # noqa: E402

SAMPLE_INTERVAL_S = 0.2
BURST_TIMEOUT_S = 1800
TICK_S = 1 / os.sysconf("SC_CLK_TCK")
PAGE_MIB = os.sysconf("SC_PAGE_SIZE") / 2**20
GROUPS = ("service", "database", "broker")
Groups = dict[str, list[int]]   # group → the pids at the root of its process trees


@dataclasses.dataclass(frozen=True)
class ProcStat:
    ppid: int
    cpu_s: float     # user + system, its own and that of the children it has reaped
    rss_mib: float


def read_procs() -> dict[int, ProcStat]:
    """One look at every process on the machine, from /proc/<pid>/stat."""
    table: dict[int, ProcStat] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue   # gone meanwhile
        table[int(entry.name)] = ProcStat(int(fields[1]), sum(map(int, fields[11:15])) * TICK_S,
                                          int(fields[21]) * PAGE_MIB)
    return table


def members(groups: Groups, table: dict[int, ProcStat]) -> dict[str, set[int]]:
    """Each group's processes: its roots and all their descendants. A process belongs to the
    first group that reaches it, in GROUPS order reversed (broker, database, then service), so
    a database started by the service is counted as database."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for pid, stat in table.items():
        children[stat.ppid].append(pid)
    taken: set[int] = set()
    found: dict[str, set[int]] = {}
    for group in reversed(GROUPS):
        mine: set[int] = set()
        stack = [pid for pid in groups.get(group, []) if pid in table]
        while stack:
            pid = stack.pop()
            if pid not in mine and pid not in taken:
                mine.add(pid)
                stack.extend(children[pid])
        taken |= mine
        found[group] = mine
    return found


def cpu_seconds(groups: Groups) -> dict[str, float]:
    """CPU seconds each group has used so far."""
    table = read_procs()
    return {group: sum(table[p].cpu_s for p in pids) for group, pids in members(groups, table).items()}


def pss_mib(pid: int) -> float:
    """Proportional set size: each shared page divided among the processes that map it."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def sample_peak_memory(groups: Groups, peaks: dict[str, float], stop: asyncio.Event) -> None:
    """Every SAMPLE_INTERVAL_S until `stop`: the largest RSS and PSS sums seen, per group and
    for service + database together (the target's figure)."""
    while True:
        table = read_procs()
        for group, pids in members(groups, table).items():
            sample = {"rss": sum(table[p].rss_mib for p in pids), "pss": sum(pss_mib(p) for p in pids)}
            for kind, mib in sample.items():
                peaks[f"{kind}_{group}"] = max(peaks.get(f"{kind}_{group}", 0.0), mib)
                peaks[f"{kind}_now_{group}"] = mib
        for kind in ("rss", "pss"):
            both = peaks[f"{kind}_now_service"] + peaks[f"{kind}_now_database"]
            peaks[f"{kind}_service+database"] = max(peaks.get(f"{kind}_service+database", 0.0), both)
        try:
            await asyncio.wait_for(stop.wait(), SAMPLE_INTERVAL_S)
            return
        except TimeoutError:
            continue


async def count_faults(s: aiohttp.ClientSession, url: str, server_ids: list[str], faults: dict[str, int]) -> None:
    """Why those servers went to ERROR: each one's fault message, counted."""
    for server_id in server_ids:
        async with s.get(f"{url}/compute/v2.1/servers/{server_id}", headers=boot_rate.HEADERS) as r:
            fault = (await r.json()).get("server", {}).get("fault") or {}
        message = str(fault.get("message", "(no fault recorded)"))[:300]
        faults[message] = faults.get(message, 0) + 1


async def burst(s: aiohttp.ClientSession, url: str, base: dict, servers: int, groups: Groups,
                faults: dict[str, int]) -> dict[str, float]:
    """N concurrent POST /servers, watched until each is ACTIVE or ERROR (boot_rate's client and
    poller, unchanged, for both sides), with the processes in `groups` measured meanwhile; the
    fault messages of servers in ERROR go to `faults`, once the measuring is over."""
    peaks: dict[str, float] = {}
    stop = asyncio.Event()
    done: dict[str, tuple[float, str]] = {}
    async with asyncio.TaskGroup() as sampling:
        sampling.create_task(sample_peak_memory(groups, peaks, stop), name="sample-memory")
        try:
            cpu0 = cpu_seconds(groups)
            t0 = time.perf_counter()
            async with asyncio.timeout(BURST_TIMEOUT_S), asyncio.TaskGroup() as tg:
                tg.create_task(boot_rate.watch(s, url, servers, done), name="watch")
                posted = await asyncio.gather(*(boot_rate.boot_one(s, url, base, i) for i in range(servers)))
            wall = time.perf_counter() - t0
            cpu1 = cpu_seconds(groups)
        finally:
            stop.set()
    accepted = [p[2] for p in posted]
    active = [done[sid][0] - start for sid, start, _ in posted if done[sid][1] == "ACTIVE"]
    nan = float("nan")
    result = {"errors": servers - len(active),
              "accept_p50": statistics.median(accepted), "accept_p95": boot_rate.pct(accepted, .95),
              "active_p50": statistics.median(active) if active else nan,
              "active_p95": boot_rate.pct(active, .95) if active else nan,
              "boots_s": len(active) / wall}
    for group in GROUPS:
        result[f"cpu_{group}"] = (cpu1[group] - cpu0[group]) / servers * 1000
    result["cpu_all"] = sum(result[f"cpu_{group}"] for group in GROUPS)
    await count_faults(s, url, [sid for sid, _, _ in posted if done[sid][1] == "ERROR"], faults)
    return {**result, **{key: mib for key, mib in peaks.items() if "_now_" not in key}}


def postmaster_pid(state: str) -> int:
    with open(os.path.join(state, "postgres", "data", "postmaster.pid")) as fh:
        return int(fh.readline())


async def measure_ours(servers: int, hosts: int, faults: dict[str, int]) -> dict[str, float]:
    state = tempfile.mkdtemp(prefix="nova-async-peer-")
    os.chmod(state, 0o755)   # its PostgreSQL runs as the postgres user
    try:
        print(f"nova-async: serve --simulate-hosts {hosts} …", file=sys.stderr, flush=True)
        async with boot_rate.serving(state, hosts) as (proc, url), \
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            base = await boot_rate.prepare(s, url)
            groups = {"service": [proc.pid], "database": [postmaster_pid(state)]}
            print(f"nova-async: {servers} boots …", file=sys.stderr, flush=True)
            return await burst(s, url, base, servers, groups, faults)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def broker_vm_pid(broker: Broker) -> int:
    """The broker's Erlang VM, from the pid file it writes under its base dir (its epmd, a
    few hundred KiB and idle, is left out)."""
    return int((broker.base / "rabbitmq.pid").read_text().strip())


async def measure_upstream(args: argparse.Namespace, venv: Path, image_requests: dict[str, int],
                           faults: dict[str, int]) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="nova-peer-"))
    stub = peer.ImageStub()
    broker = Broker(work / "rabbitmq")
    try:
        await stub.start()
        print("upstream: RabbitMQ …", file=sys.stderr, flush=True)
        await broker.start()
        transport = broker.url.replace("amqp://", "rabbit://", 1)   # oslo.messaging's name for it
        async with peer.upstream(work / "nova", venv, transport, stub.url, args.hosts, args.api_workers,
                                 args.api_threads, args.service_workers) as nova, \
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            base = await peer.prepare(s, nova.api_url, boot_rate.HEADERS, boot_rate.FLAVOR)
            groups = {"service": [d.pid for d in nova.services], "database": [nova.database.pid],
                      "broker": [broker_vm_pid(broker)]}
            print(f"upstream: {args.servers} boots …", file=sys.stderr, flush=True)
            result = await burst(s, nova.api_url, base, args.servers, groups, faults)
        image_requests.update(stub.seen)
        return result
    finally:
        await broker.close()
        await stub.close()
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


# label, key, scale, target (as ours/upstream)
ROWS = [("POST->202 p50 (ms)", "accept_p50", 1000, ""), ("POST->202 p95 (ms)", "accept_p95", 1000, ""),
        ("POST->ACTIVE p50 (ms)", "active_p50", 1000, ""),
        ("POST->ACTIVE p95 (ms)", "active_p95", 1000, "<= 0.01"),
        ("boots/s", "boots_s", 1, ">= 100"),
        ("CPU/server service (ms)", "cpu_service", 1, ""), ("CPU/server database (ms)", "cpu_database", 1, ""),
        ("CPU/server broker (ms)", "cpu_broker", 1, ""), ("CPU/server all (ms)", "cpu_all", 1, ""),
        ("peak RSS service (MiB)", "rss_service", 1, ""), ("peak RSS database (MiB)", "rss_database", 1, ""),
        ("peak RSS service+database (MiB)", "rss_service+database", 1, "<= 0.05"),
        ("peak RSS broker (MiB)", "rss_broker", 1, ""),
        ("peak PSS service (MiB)", "pss_service", 1, ""), ("peak PSS database (MiB)", "pss_database", 1, ""),
        ("peak PSS service+database (MiB)", "pss_service+database", 1, "<= 0.05 (set for RSS)"),
        ("peak PSS broker (MiB)", "pss_broker", 1, ""), ("errors", "errors", 1, "")]


def ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:10.4f}" if ours and theirs and ours == ours and theirs == theirs else f"{'-':>10}"


def print_table(ours: dict[str, float], theirs: dict[str, float]) -> None:
    print(f"{'':34}{'nova-async':>12}{'upstream':>12}{'ours/up':>10}{'up/ours':>10}   target (ours/up)")
    for label, key, scale, target in ROWS:
        a, b = ours[key] * scale, theirs[key] * scale
        print(f"{label:34}{a:12.1f}{b:12.1f}{ratio(a, b)}{ratio(b, a)}   {target}")


def print_notes(args: argparse.Namespace, versions: dict[str, str], image_requests: dict[str, int],
                faults: dict[str, dict[str, int]]) -> None:
    nova, placement = versions["nova"], versions["openstack-placement"]
    notes = [
        f"upstream: nova {nova}, openstack-placement {placement}"
        + ("" if nova.startswith("34.") and placement.startswith("16.") else " (NOT the 34/16 the issue names)")
        + f"; nova-api and placement under gunicorn, {args.api_workers} workers x {args.api_threads} threads each; "
        f"nova-conductor and nova-scheduler with {args.service_workers} workers each; {args.hosts} nova-compute "
        "(compute_driver = fake.FakeDriver, one fake host each, no database connection); "
        "[filter_scheduler] shuffle_best_same_weighed_hosts = True; MariaDB (Debian, defaults: a commit "
        "is flushed to disk) and RabbitMQ (Debian), both private to this run.",
        "nova-async: one `serve` process (in-memory bus) and its private PostgreSQL (fsync on); "
        f"{args.hosts} hosts on libvirt's test driver.",
        "stubbed for upstream: Keystone (a paste filter of ours sets the identity headers keystonemiddleware "
        "would: admin user/project, roles admin,member,reader; Placement runs noauth2, reached with "
        "keystoneauth's admin_token plugin); Glance (an HTTP stub in this process, one image, "
        f"{peer.IMAGE_SIZE} bytes, raw); Neutron (none: servers are created with \"networks\": \"none\"). "
        "Quotas are lifted in nova.conf ([quota] instances/cores/ram = -1; Nova asks Keystone about a "
        "project before it changes its quotas), nova-async's through its API.",
        "nova-async does more per boot: it stores the image itself and boots every server on a real "
        "network, with a port (MAC, fixed IP) allocated from its subnet.",
        "both sides: the same client (boot_rate.boot_one/watch), flavor "
        f"{boot_rate.FLAVOR}, microversion {boot_rate.HEADERS['OpenStack-API-Version']}; ACTIVE is seen by "
        "polling `GET /servers?status=…&changes-since=…` 0.05 s after each answer (its requests are "
        "served, and counted, by each side's API).",
        "CPU: user + system of every process of a side (children reaped included) over first POST to "
        "last ACTIVE, per server; RSS and PSS: sums over a side's processes, sampled every 0.2 s over "
        "the same span. RSS counts a shared page once per process that maps it (PostgreSQL's shared "
        "buffers in every backend, forked gunicorn and oslo.service workers), PSS divides it among them: "
        "PSS is the fairer sum for both sides.",
        "the image stub was asked: " + (", ".join(f"{k} x{v}" for k, v in sorted(image_requests.items()))
                                        or "nothing"),
    ]
    for side, messages in faults.items():
        notes += [f"{side}: {count} server(s) in ERROR: {message}" for message, count in messages.items()]
    for note in notes:
        print(f"note: {note}")


async def run(args: argparse.Namespace) -> None:
    missing = [why for why in (peer.mariadb_missing(), rabbitmq.available()) if why]
    if missing:  # said before anything is installed or started
        raise SystemExit(f"upstream's side needs MariaDB and RabbitMQ: {'; '.join(missing)}. "
                         f"`make bench-peer ARGS='…'` installs them and runs this.")
    venv = peer.ensure_venv(args.upstream_venv)
    versions = peer.versions(venv)
    faults: dict[str, dict[str, int]] = {"nova-async": {}, "upstream": {}}
    ours = await measure_ours(args.servers, args.hosts, faults["nova-async"])
    image_requests: dict[str, int] = {}
    theirs = await measure_upstream(args, venv, image_requests, faults["upstream"])
    print(f"\nservers={args.servers} hosts={args.hosts}: nova-async vs upstream Nova {versions['nova']} "
          f"+ Placement {versions['openstack-placement']}")
    print_table(ours, theirs)
    print_notes(args, versions, image_requests, faults)


async def main(args: argparse.Namespace) -> None:
    # SIGTERM ends the run as Ctrl-C does: through every `finally`, so nothing stays behind.
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    await run(args)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=50, help="concurrent POST /servers per side")
    parser.add_argument("--hosts", type=int, default=4, help="compute hosts per side (fake / simulated)")
    parser.add_argument("--api-workers", type=int, default=2, help="gunicorn workers for nova-api and placement")
    parser.add_argument("--api-threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--service-workers", type=int, default=2,
                        help="workers of nova-conductor and of nova-scheduler")
    parser.add_argument("--upstream-venv", type=Path, default=peer.DEFAULT_VENV,
                        help="upstream's own virtualenv, made there on first use (default %(default)s)")
    parser.add_argument("--keep", action="store_true", help="keep upstream's work dir (configs, logs)")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
