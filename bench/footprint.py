"""Memory as servers accumulate: the service's resident set with 0, 1,000 and 10,000 servers.

Starts `nova-async serve --simulate-hosts H --auth noauth` (libvirt's test driver, a private
database in a temporary state dir), boots servers in waves of B concurrent POSTs until each
mark is reached and every server is ACTIVE, then lets the service settle (a few periodic
rounds) and prints its RSS there, beside its peak so far and its PostgreSQL's. Memory that
grows with the servers that exist, not with the ones in flight, shows as the slope between
the marks. Nothing is asserted.

Where the simulated hosts' domains live (`--domains`):

  * libvirtd (the default): the service opens each host's test driver through libvirtd
    (`[compute] sim_in_libvirtd`), so the domains live in the daemon, as a real host's
    guests do, and the service's RSS is its own. libvirtd's RSS is printed beside it, for
    information: it is the hypervisor's, not ours. `make host-setup` starts libvirtd.
  * process: the test driver inside the service's own process (what `--simulate-hosts` does by
    default), so the slope includes what libvirt holds per domain. A peer in the same run
    measures that share: a bare Python process that defines and starts as many test-driver
    domains (an XML shaped like ours: metadata, a disk, an interface, a console) and reports
    its own growth; the last column is the service's RSS less it.

    .venv/bin/python bench/footprint.py [--hosts 1000] [--marks 0,1000,10000] [--batch 50] [--settle 25]
        [--domains libvirtd|process]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import sys
import tempfile
import time

import aiohttp

from boot_rate import boot_one, peak_rss_mb, prepare, status_mb, watch
from schedule_rate import serving

SETTLE_S = 25.0   # long enough for the periodic jobs (heartbeats, power sync) to run a round

# The peer: libvirt's test driver alone, holding `count` running domains; prints its growth in MiB.
LIBVIRT_ALONE = """
import sys, uuid, libvirt
def rss():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS:")) / 1024
conn = libvirt.open("test:///default")
before = rss()
xml = ("<domain type='test'><name>{n}</name><uuid>{u}</uuid><memory unit='KiB'>65536</memory><vcpu>1</vcpu>"
       "<metadata><nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/nova/1.1'><nova:name>b</nova:name>"
       "<nova:flavor name='bench'><nova:memory>64</nova:memory><nova:disk>1</nova:disk><nova:vcpus>1</nova:vcpus>"
       "</nova:flavor><nova:owner><nova:user uuid='admin'>admin</nova:user><nova:project uuid='admin'>admin"
       "</nova:project></nova:owner></nova:instance></metadata><os><type arch='x86_64'>hvm</type></os><devices>"
       "<disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='/x/{u}/disk'/>"
       "<target dev='vda' bus='virtio'/></disk><interface type='bridge'><mac address='fa:16:3e:00:00:01'/>"
       "<source bridge='br-x'/><model type='virtio'/><target dev='tap{t}'/></interface><serial type='file'>"
       "<source path='/x/{u}/console.log'/></serial><console type='file'><source path='/x/{u}/console.log'/>"
       "</console></devices></domain>")
for i in range(int(sys.argv[1])):
    u = str(uuid.uuid4())
    conn.defineXML(xml.format(n=f"instance-{i:08x}", u=u, t=u[:11])).create()
print(rss() - before)
"""


async def libvirt_alone_mb(count: int) -> float:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", LIBVIRT_ALONE, str(count),
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    return float(out) if proc.returncode == 0 else float("nan")


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


def libvirtd_rss_mb() -> float:
    """The running libvirtd's resident set (NaN: none runs)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as fh:
                    if fh.read().strip() == "libvirtd":
                        return status_mb(int(entry), "VmRSS")
            except OSError:
                continue
    return float("nan")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--marks", default="0,1000,10000", help="server counts to measure at, ascending")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--settle", type=float, default=SETTLE_S, help="seconds to wait at each mark")
    parser.add_argument("--domains", choices=("libvirtd", "process"), default="libvirtd",
                        help="where the simulated hosts' domains live")
    args = parser.parse_args()
    marks = [int(m) for m in args.marks.split(",")]
    in_libvirtd = args.domains == "libvirtd"
    if in_libvirtd and math.isnan(libvirtd_rss_mb()):
        raise SystemExit("libvirtd is not running: `make host-setup` starts it (or use --domains process)")
    state = tempfile.mkdtemp(prefix="nova-async-bench-")
    os.chmod(state, 0o755)
    more: tuple[str, ...] = ()
    if in_libvirtd:
        config = os.path.join(state, "footprint.toml")
        with open(config, "w") as fh:
            fh.write("[compute]\nsim_in_libvirtd = true\n")
        more = ("--config", config)
    # servers, RSS, peak, PostgreSQL, libvirt's (libvirtd's RSS, or the peer's domains)
    rows: list[tuple[int, float, float, float, float]] = []
    try:
        async with serving(state, args.hosts, [], more) as (proc, url):
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
                    await asyncio.sleep(args.settle)
                    rows.append((mark, status_mb(proc.pid, "VmRSS"), peak_rss_mb(proc.pid), postgres_rss_mb(state),
                                 libvirtd_rss_mb() if in_libvirtd else await libvirt_alone_mb(mark)))
                    print(f"  {mark:6d} servers ({errors} not ACTIVE, booted in {took:.0f} s): "
                          f"RSS {rows[-1][1]:.1f} MiB", flush=True)
        print(f"hosts={args.hosts} batch={args.batch} domains in {args.domains}")
        if in_libvirtd:
            print(f"{'servers':>8} {'RSS MiB':>9} {'peak MiB':>9} {'PostgreSQL PSS MiB':>19} {'libvirtd RSS MiB':>17}")
            for mark, rss, peak, pg, daemon in rows:
                print(f"{mark:8d} {rss:9.1f} {peak:9.1f} {pg:19.1f} {daemon:17.1f}")
        else:
            print(f"{'servers':>8} {'RSS MiB':>9} {'peak MiB':>9} {'PostgreSQL PSS MiB':>19} "
                  f"{'libvirt test domains MiB':>25} {'RSS less those':>15}")
            for mark, rss, peak, pg, domains in rows:
                print(f"{mark:8d} {rss:9.1f} {peak:9.1f} {pg:19.1f} {domains:25.1f} {rss - domains:15.1f}")
        if len(rows) > 1 and rows[-1][0] > rows[0][0]:
            span = rows[-1][0] - rows[0][0]
            slope = (rows[-1][1] - rows[0][1]) / span * 1024
            own = slope if in_libvirtd else ((rows[-1][1] - rows[-1][4]) - (rows[0][1] - rows[0][4])) / span * 1024
            print(f"growth per existing server: {slope:.2f} KiB, {own:.2f} KiB of it the service's own   "
                  f"(target: peak <= 150 MiB at 10,000 servers)")
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
