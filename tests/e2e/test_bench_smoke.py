"""Every script in bench/ runs to its last line from a clean clone, at its smallest size.

The benchmarks assert nothing and run rarely, so a change elsewhere can break one unseen
until someone wants its numbers (guest_boot once crashed before printing anything). Each
case runs a script as a user would, a subprocess of this virtualenv's python from the
checkout, with sizes that keep its whole code path (both peers, every table row) but little
work, and checks that it exited 0 and printed its closing figures: the rows with the ratios
to its peer. The figures themselves are never judged; only what is not a timing is (no
failed boots, upstream placement finding the same candidates).

Each case brings its own peer: boot_rate and bus start their own RabbitMQ, guest_boot a real
TCG guest (the demo guest is built first if this machine has none), placement_vs_upstream
upstream Placement in a virtualenv this run makes (shared by its two cases, then removed),
volumes a test:///default connection of its own; event_stream has no peer (Nova has no stream).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

from nova_async import config
from nova_async.compute.guest_image import build_or_reuse
from nova_async.compute.host_setup import setup_host
from tests.rabbitmq import available as rabbitmq_missing

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
QEMU = Path("/usr/bin/qemu-system-x86_64")
# Long enough for a loaded 2-core machine to finish, short enough that a hang ends the run.
HANG_GUARD_S = 900
NUM = r"(?:-?\d+(?:\.\d+)?|nan|inf)"

needs_broker = pytest.mark.skipif(bool(rabbitmq_missing()), reason=rabbitmq_missing() or "")


async def run_bench(script: str, *args: str) -> str:
    """Run bench/<script> to its end; its output (stdout and stderr) once it exited 0."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "bench" / script), *args, cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []

    async def pump() -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            lines.append(raw.decode(errors="replace").rstrip())

    pumping = asyncio.create_task(pump(), name=f"bench-smoke:{script}")
    try:
        await asyncio.wait_for(proc.wait(), HANG_GUARD_S)
    except TimeoutError:
        # SIGINT cancels the script's main(), whose finally blocks stop what it started
        # (service, broker, guests); kill only if that does not end it either.
        proc.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(proc.wait(), 120)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        await pumping
        pytest.fail(f"{script} {' '.join(args)} hung:\n" + "\n".join(lines[-60:]))
    await pumping
    out = "\n".join(lines)
    assert proc.returncode == 0, f"{script} {' '.join(args)} exited {proc.returncode}:\n" + "\n".join(lines[-60:])
    return out


def expect(out: str, *patterns: str) -> None:
    """Each pattern matches one whole line of the output."""
    for pattern in patterns:
        assert re.search(f"^{pattern}$", out, re.M), f"no line matching {pattern!r} in:\n{out[-4000:]}"


@needs_broker
async def test_boot_rate_on_both_transports():
    out = await run_bench("boot_rate.py", "--servers", "4", "--hosts", "2")
    expect(out, r"servers=4 hosts=2",
           rf"POST->ACTIVE p50 \(ms\)\s+{NUM}\s+{NUM}\s+{NUM}x",
           rf"boots/s\s+{NUM}\s+{NUM}\s+{NUM}x",
           rf"service CPU/boot \(ms\)\s+{NUM}\s+{NUM}\s+{NUM}x",
           r"errors\s+0\.0\s+0\.0",  # every server became ACTIVE, on both buses
           rf"reference: Nova .* ours on memory {NUM} s \(ratio {NUM}x\)",
           rf"reference: Nova .* ours on rabbitmq {NUM} s \(ratio {NUM}x\)")


@needs_broker
async def test_bus_memory_against_rabbitmq():
    out = await run_bench("bus.py", "--calls", "20", "--casts", "20", "--in-flight", "4")
    expect(out, r"calls=20 casts=20 in_flight=4",
           rf"RPC p50 \(ms\)\s+{NUM}\s+{NUM}\s+{NUM}x",
           rf"RPC p99 \(ms\)\s+{NUM}\s+{NUM}\s+{NUM}x",
           rf"casts/s\s+{NUM}\s+{NUM}\s+{NUM}x fewer")


@pytest.mark.skipif(not QEMU.exists(), reason="QEMU is not installed (make test installs it)")
async def test_guest_boot_against_bare_libvirt():
    await setup_host(Path(config.default_state_dir()))
    await build_or_reuse()  # what `nova-async guest-image` runs: built here when missing
    out = await run_bench("guest_boot.py", "--runs", "1")
    pair = rf"\s+{NUM}\s+{NUM}\s+[+-]{NUM}\s+{NUM}x"
    expect(out, r"run 1: ACTIVE .*",
           r"first console line \(a\): '.+'",  # both guests printed, through the API and bare
           r"first console line \(b\): '.+'",
           rf"1{pair}{pair}",
           rf"median{pair}{pair}",
           r"service log: \d+ lines, \d+ warnings/errors; bench took \d+ s")


async def test_schedule_rate_in_batches():
    out = await run_bench("schedule_rate.py", "--hosts", "2", "--servers", "4", "--batch", "2")
    expect(out, r"hosts=2 servers=4 batch=2 errors=0 .*",
           rf"scheduling decisions/s\s+{NUM} .*",
           rf"POST->ACTIVE\s+p50\s+{NUM} ms\s+p95\s+{NUM} ms .*",
           rf"service CPU per server\s+{NUM} ms .*",
           rf"database blocks/server\s+{NUM} .*",
           rf"bus calls/server\s+{NUM} .*",
           rf"peak RSS\s+{NUM} MiB")


async def test_footprint_at_marks():
    await setup_host(Path(config.default_state_dir()))   # the simulated hosts' domains live in libvirtd
    out = await run_bench("footprint.py", "--hosts", "2", "--marks", "0,3", "--batch", "2", "--settle", "0")
    expect(out, r"hosts=2 batch=2 domains in libvirtd",
           *(rf"\s+{mark}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}" for mark in (0, 3)),
           rf"growth per existing server: {NUM} KiB, {NUM} KiB of it the service's own .*")


async def test_footprint_with_the_domains_in_the_service():
    out = await run_bench("footprint.py", "--hosts", "2", "--marks", "0,3", "--batch", "2", "--settle", "0",
                          "--domains", "process")
    expect(out, r"hosts=2 batch=2 domains in process",
           *(rf"\s+{mark}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}" for mark in (0, 3)),
           rf"growth per existing server: {NUM} KiB, {NUM} KiB of it the service's own .*")


async def test_volumes_against_bare_libvirt():
    out = await run_bench("volumes.py", "--concurrency", "2", "--rounds", "1", "--hosts", "1")
    # errors 0: every round trip ended where it should (the one verdict that is not a timing)
    expect(out, rf"concurrency=2 rounds=1 size=1G samples: ours 2 \(errors 0\), floor 2; poll every {NUM} ms",
           *(rf"{phase}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}x"
             for phase in ("create", "attach", "detach", "delete", "total")))


async def test_event_stream():
    out = await run_bench("event_stream.py", "--servers", "20", "--rounds", "2", "--writers", "2", "--quiet", "3")
    # 0 out of order/missing/repeated: each stream got every change once, in order (not a timing)
    expect(out, rf"20 servers × 2 rounds by 2 writers = 40 changes, 2 streams; the writes took {NUM} ms",
           *(rf"stream {i}: 40 events, servers out of order/missing/repeated: 0; commit→event p50 {NUM} ms, "
             rf"p95 {NUM} ms, max {NUM} ms; {NUM} events/s" for i in (0, 1)),
           rf"3 single changes one at a time: commit→event p50 {NUM} ms, p95 {NUM} ms")


@pytest.fixture(scope="session")
def upstream_venv():
    """Upstream Placement's virtualenv for this run only: the first placement case installs
    it (35-60 s from an empty pip cache), the other reuses it; removed at the end. In memory
    where there is a tmpfs: its ~8,000 files took 9 s to delete from this machine's disk."""
    shm = Path("/dev/shm")
    in_memory = shm.is_dir() and not os.statvfs(shm).f_flag & os.ST_NOEXEC  # the venv runs its scripts
    root = Path(tempfile.mkdtemp(prefix="nova-async-bench-upstream-", dir=shm if in_memory else None))
    yield root / "venv"
    shutil.rmtree(root, ignore_errors=True)


def expect_placement_table(out: str, load: str) -> None:
    for size in (10, 20):
        for request in (r"GET /allocation_candidates \(no limit\)", r"GET /allocation_candidates\?limit=10",
                        r"PUT /allocations/\{consumer\} \(claim\)", r"GET / \(HTTP round trip, no SQL\)"):
            expect(out, rf"\s*{size}\s+{request}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}x\s+.*")
        expect(out, rf"load up to\s+{size} providers \({load}\): nova-async\s+{NUM} s, upstream\s+{NUM} s")
    # The one verdict the bench gives that is not a timing: both sides found the same candidates.
    assert "MISMATCH" not in out, out[-4000:]


# Two sizes, so the second load adds providers to the first's; one gunicorn worker.
PLACEMENT_SMOKE = ("--sizes", "10,20", "--repeat", "2", "--claims", "2", "--upstream-workers", "1")


@pytest.mark.xdist_group("upstream-placement")  # one worker, one install
async def test_placement_vs_upstream_bulk_loaded(upstream_venv):
    """The default load: placement_load.py's COPY into each schema (placement_servers.py runs
    the three processes in both cases)."""
    out = await run_bench("placement_vs_upstream.py", *PLACEMENT_SMOKE, "--upstream-venv", str(upstream_venv))
    expect_placement_table(out, "sql")


@pytest.mark.xdist_group("upstream-placement")  # one worker, one install
async def test_placement_vs_upstream_loaded_over_http(upstream_venv):
    out = await run_bench("placement_vs_upstream.py", *PLACEMENT_SMOKE, "--load", "http",
                          "--upstream-venv", str(upstream_venv))
    expect_placement_table(out, "http")
