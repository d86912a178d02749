"""nova-async.service under a real systemd (252), not a socket standing in for it.

Machines without systemd as PID 1 (containers, microVMs) can still run one: a system
instance as PID 1 of fresh PID, mount, IPC and UTS namespaces, in its own cgroup, seeing
only what the test gives it:
- /run, /tmp, /var/tmp, /dev (a few device nodes), /var/lib and /var/cache are private, and
  /etc/systemd/system is empty, so none of the host's enabled units (libvirtd, postgresql,
  apt timers…) start; what would touch the shared kernel (sysctl, binfmt, modules, the
  tmpfiles that empty /tmp…) is masked; the journal is volatile; /sys is read-only, as in
  any container.
- The unit is systemd/nova-async.service as shipped, only pointed at this checkout's
  virtualenv and at a config using libvirt's test driver; a drop-in shortens WatchdogSec.

What a user of the unit relies on, checked against that systemd:
1. `systemctl start` leaves the unit `activating` with STATUS= saying what it waits for,
   and `active` only with READY=1, when the API answers and the compute host is up.
2. A hung event loop stops the keep-alive: systemd says "Watchdog timeout", kills the
   service with SIGABRT (Python's faulthandler prints the loop thread's stack into the
   journal) and restarts it (NRestarts=1), and the new process becomes ready again.
   The hang is real and in the loop thread only: the drop-in sets the service's test hang
   trigger (NOVA_ASYNC_TEST_HANG_SIGNAL=SIGUSR2, common/systemd.py), and SIGUSR2 makes the
   loop's own thread sleep 60 s while every other thread goes on. A signal works on every
   Linux machine; ptrace register writes (gdb) do not on some virtual machines, and
   SIGSTOP would freeze every thread, so it could not tell a loop-fed keep-alive from a
   thread-fed one.
3. `journalctl -u nova-async -t nova-async -o cat` is JSON lines (the only other lines are
   the stack dump of the process the watchdog killed), and the README's jq pipeline works.
4. `systemctl stop` drains and stops the private PostgreSQL.

Every process the test starts lives in the PID namespace, and killing its PID 1 (systemd)
kills them all, PostgreSQL included, even when the test fails half-way; a PID-1 death signal
does the same if pytest itself dies."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.conftest import PASSWORD, free_port
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]
SYSTEMD = Path("/lib/systemd/systemd")
CGROUPS = (Path("/sys/fs/cgroup/systemd"), Path("/sys/fs/cgroup/unified"))
SERVICE = "nova-async.service"
WATCHDOG_SEC = 8
INSIDE = "/run/nova-e2e"  # where the test's directory appears inside the namespaces
NOVA_ASYNC = Path(sys.executable).parent / "nova-async"


# Units of a booting system that reach outside the namespaces (kernel settings, modules,
# binfmt, the root file system's /tmp) or are of no use here.
MASKED = (
    "systemd-sysctl.service", "systemd-binfmt.service", "proc-sys-fs-binfmt_misc.automount",
    "systemd-modules-load.service", "kmod-static-nodes.service", "systemd-tmpfiles-setup.service",
    "systemd-tmpfiles-setup-dev.service", "systemd-tmpfiles-clean.timer",
    "systemd-sysusers.service", "systemd-firstboot.service", "systemd-machine-id-commit.service",
    "systemd-random-seed.service", "systemd-repart.service", "systemd-pcrphase.service",
    "systemd-pcrphase-sysinit.service", "systemd-update-utmp.service",
    "systemd-remount-fs.service", "systemd-hwdb-update.service",
    "systemd-journal-catalog-update.service", "systemd-update-done.service", "ldconfig.service",
    "systemd-timesyncd.service", "systemd-ask-password-console.path", "systemd-initctl.socket",
    "systemd-journald-audit.socket", "dbus.socket", "dbus.service", "getty.target",
    "console-getty.service", "libvirtd.service",
)

# linux/capability.h, for the names the unit's CapabilityBoundingSet= uses.
CAPABILITIES = {
    "CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
    "CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
    "CAP_NET_BIND_SERVICE": 10, "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14,
    "CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21, "CAP_SYS_NICE": 23, "CAP_SYS_RESOURCE": 24,
    "CAP_AUDIT_WRITE": 29,
}

# Runs as the namespaces' first process, then becomes systemd. $1: the test's directory;
# $2…: directories the service runs from (the checkout, the virtualenv), which stay visible
# at their own paths even when they live under the /tmp this hides (as a CI clone does).
BOOT = r"""
set -euo pipefail
R=$1
shift
mount -t proc proc /proc
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
mkdir -p /run/nova-e2e /run/nova-e2e.dev
mount --bind "$R" /run/nova-e2e
# A /dev of its own: journald's /dev/log symlink must not land in the host's devtmpfs.
D=/run/nova-e2e.dev
mount -t tmpfs -o mode=755,nosuid tmpfs $D
for n in null zero full random urandom tty kvm net/tun; do
    [ -c /dev/$n ] || continue
    mkdir -p "$(dirname $D/$n)"
    mknod -m "$(stat -c %a /dev/$n)" $D/$n c $((0x$(stat -c %t /dev/$n))) $((0x$(stat -c %T /dev/$n)))
    chown --reference=/dev/$n $D/$n
done
mkdir $D/pts $D/shm
ln -s pts/ptmx $D/ptmx; ln -s /proc/self/fd $D/fd
ln -s /proc/self/fd/0 $D/stdin; ln -s /proc/self/fd/1 $D/stdout; ln -s /proc/self/fd/2 $D/stderr
touch $D/console; mount --bind "$R/console.log" $D/console
mount --move $D /dev
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
i=0
for keep in "$@"; do
    mkdir -p /run/nova-e2e.keep/$i; mount --bind "$keep" /run/nova-e2e.keep/$i; i=$((i + 1))
done
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp
i=0
for keep in "$@"; do
    mkdir -p "$keep"; mount --bind /run/nova-e2e.keep/$i "$keep"; i=$((i + 1))
done
# (/tmp hides $R from here on: it is /run/nova-e2e now)
mount --bind /run/nova-e2e/etc-systemd-system /etc/systemd/system
mount --bind /run/nova-e2e/var-lib /var/lib
mount --bind /run/nova-e2e/var-cache /var/cache
mount -o remount,bind,ro /sys
mkdir -p /run/systemd/system /run/systemd/journald.conf.d
printf '[Journal]\nStorage=volatile\n' > /run/systemd/journald.conf.d/volatile.conf
cp -r /run/nova-e2e/units/. /run/systemd/system/
exec env -i container=nova-e2e PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    /lib/systemd/systemd --system --unit=nova-e2e.target --log-target=journal --show-status=no
"""

TARGET = """[Unit]
Description=nova-async e2e: what the test needs and nothing else
Requires=basic.target
After=basic.target
"""

DROP_IN = f"""[Service]
WatchdogSec={WATCHDOG_SEC}
RestartSec=1
TimeoutAbortSec=10
Environment=NOVA_ASYNC_TEST_HANG_SIGNAL=SIGUSR2
# The unit's PrivateTmp hides a checkout that lives under /tmp (a CI clone): show it again.
BindReadOnlyPaths={REPO} {sys.prefix}
"""

def why_not_here() -> str | None:
    if os.geteuid() != 0:
        return "needs root: PID and mount namespaces, cgroups, mknod"
    if not SYSTEMD.exists():
        return f"systemd is not installed ({SYSTEMD} missing)"
    missing = [t for t in ("unshare", "nsenter", "setpriv", "systemctl", "journalctl", "mknod")
               if not shutil.which(t)]
    if missing:
        return f"missing tools: {', '.join(missing)}"
    if Path("/proc/1/comm").read_text().strip() == "systemd":
        return "PID 1 is systemd here: install the unit for real (make install) instead"
    mounts = Path("/proc/self/mounts").read_text()
    if f" {CGROUPS[0]} cgroup " not in mounts or f" {CGROUPS[1]} cgroup2 " not in mounts:
        return ("only the hybrid cgroup layout (name=systemd v1 at /sys/fs/cgroup/systemd and "
                "cgroup2 at /sys/fs/cgroup/unified) has been tried")
    if not NOVA_ASYNC.exists():
        return f"{NOVA_ASYNC} is missing: run from the project's virtualenv"
    return None


REASON = why_not_here()
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(REASON is not None, reason=str(REASON))]


async def run(*argv: str, timeout: float = 30, check: bool = True) -> str:
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    text = out.decode(errors="replace")
    if check:
        assert proc.returncode == 0, f"{' '.join(argv)} exited {proc.returncode}:\n{text[-4000:]}"
    return text


class RealSystemd:
    """A systemd system instance in namespaces of its own, with nova-async.service installed."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self.name = f"nova-e2e-{uuid.uuid4().hex[:12]}"
        self.cgroups = [h / self.name for h in CGROUPS]
        self.proc: asyncio.subprocess.Process | None = None
        self.init_pid: int | None = None  # systemd, PID 1 inside, as the host sees it

    def prepare(self) -> None:
        r = self.root
        for sub in ("units", f"units/{SERVICE}.d", "etc-systemd-system", "var-lib", "var-cache"):
            (r / sub).mkdir(parents=True)
        r.chmod(0o755)
        (r / "console.log").touch()
        unit = (REPO / "systemd" / SERVICE).read_text()
        shipped = "ExecStart=/opt/nova-async/.venv/bin/nova-async serve --config /etc/nova-async/nova-async.toml"
        assert shipped in unit
        (r / "units" / SERVICE).write_text(unit.replace(
            shipped, f"ExecStart={NOVA_ASYNC} serve --config {INSIDE}/nova-async.toml"))
        (r / "units" / f"{SERVICE}.d" / "e2e.conf").write_text(DROP_IN)
        (r / "units" / "nova-e2e.target").write_text(TARGET)
        for name in MASKED:
            (r / "units" / name).symlink_to("/dev/null")
        # What the shipped config says, but the test driver instead of libvirtd and a free port.
        (r / "nova-async.toml").write_text(
            f'[service]\nlisten = "127.0.0.1:{self.port}"\nstate_dir = "/var/lib/nova-async"\n'
            f'log_format = "auto"\n[identity]\nauth = "keystone"\nadmin_password = "{PASSWORD}"\n'
            f'[compute]\nlibvirt_uri = "test:///default"\n')
        (r / "boot.sh").write_text(BOOT)
        remove_stale_cgroups()
        for cg in self.cgroups:
            cg.mkdir()

    async def start(self, timeout: float = 30) -> None:
        procs = " ".join(f"{cg}/cgroup.procs" for cg in self.cgroups)
        # The shell joins the cgroup, then becomes unshare; setpriv: unshare gets SIGKILL when
        # pytest dies, and --kill-child: systemd gets SIGKILL when unshare dies.
        launcher = (f'for f in {procs}; do echo $$ > "$f"; done; '
                    f'exec setpriv --pdeathsig KILL -- unshare --pid --mount --ipc --uts '
                    f'--propagation private --kill-child=SIGKILL /bin/bash {self.root}/boot.sh {self.root} {REPO} {sys.prefix}')
        log = os.open(self.root / "boot.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                "/bin/bash", "-c", launcher, stdin=asyncio.subprocess.DEVNULL, stdout=log,
                stderr=asyncio.subprocess.STDOUT)
        finally:
            os.close(log)
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            if self.proc.returncode is not None:
                break
            if self.init_pid is None:
                children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
                with contextlib.suppress(OSError):
                    pids = children.read_text().split()
                    if pids:
                        self.init_pid = int(pids[0])
            if self.init_pid is not None and Path(f"/proc/{self.init_pid}/comm").read_text().strip() == "systemd":
                state = (await self.inside("systemctl", "is-system-running", check=False)).strip()
                if state in ("running", "degraded"):
                    return
            await asyncio.sleep(0.2)
        log = (self.root / "boot.log").read_text(errors="replace") + \
            (self.root / "console.log").read_text(errors="replace")
        pytest.skip(f"systemd did not come up here (state {state!r}):\n{log[-3000:]}")

    async def inside(self, *argv: str, timeout: float = 30, check: bool = True) -> str:
        assert self.init_pid is not None
        return await run("nsenter", "-t", str(self.init_pid), "-m", "-p", "-u", "-i", "--", *argv,
                         timeout=timeout, check=check)

    async def show(self, *props: str) -> dict[str, str]:
        out = await self.inside("systemctl", "show", SERVICE, *(f"-p{p}" for p in props))
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    async def wait_for(self, predicate, timeout: float, what: str) -> dict[str, str]:
        try:
            return await until(lambda: self.show("ActiveState", "SubState", "MainPID", "NRestarts", "Result",
                                                 "StatusText"),
                               predicate, what=what, timeout=timeout, interval=0.1)
        except AssertionError as exc:
            journal = await self.inside("journalctl", "--no-pager", "-n", "80", check=False)
            pytest.fail(f"{exc}\n{journal}")

    async def close(self) -> None:
        if self.init_pid is not None:
            # A clean stop first (PostgreSQL shuts down), then the namespace's end kills the rest.
            with contextlib.suppress(Exception):
                await self.inside("systemctl", "stop", SERVICE, timeout=60, check=False)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.init_pid, 9)
        if self.proc is not None:
            # unshare reaps systemd and exits; killed first, it would leave a zombie to a
            # PID 1 that may reap orphans slowly or never.
            try:
                await asyncio.wait_for(self.proc.wait(), 15)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()
        for cg in self.cgroups:
            await remove_cgroup(cg)


def remove_stale_cgroups(age: float = 3600) -> None:
    """The empty cgroups a run killed with SIGKILL left (its processes died with it)."""
    for hierarchy in CGROUPS:
        for top in hierarchy.glob("nova-e2e-*"):
            if time.time() - top.stat().st_mtime < age:
                continue  # maybe another run's, just made
            if any(procs.read_text().strip() for procs in top.rglob("cgroup.procs")):
                continue
            for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts),
                            reverse=True) + [top]:
                with contextlib.suppress(OSError):
                    d.rmdir()


async def remove_cgroup(top: Path) -> None:
    """Kill whatever is left in `top` and remove it, deepest first."""
    if not top.exists():
        return
    for _ in range(100):
        pids = {pid for procs in top.rglob("cgroup.procs") for pid in procs.read_text().split()}
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), 9)
        if not pids:
            break
        await asyncio.sleep(0.1)
    for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            d.rmdir()
    top.rmdir()


@contextlib.asynccontextmanager
async def real_systemd(root: Path):
    sd = RealSystemd(root, free_port())
    try:
        sd.prepare()
        await sd.start()
        yield sd
    finally:
        await sd.close()


def own_bounding_set() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("CapBnd:")), 16)


async def services_up(url: str) -> dict[str, str]:
    auth = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"name": "Default"}, "password": PASSWORD}}},
        "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{url}/v3/auth/tokens", json=auth) as r:
            assert r.status == 201, await r.text()
            token = r.headers["X-Subject-Token"]
        async with s.get(f"{url}/compute/v2.1/os-services", headers={"X-Auth-Token": token}) as r:
            assert r.status == 200, await r.text()
            return {v["binary"]: v["state"] for v in (await r.json())["services"]}


async def test_unit_under_real_systemd_ready_watchdog_journal(work_dir):
    async with real_systemd(work_dir / f"real-systemd-{uuid.uuid4().hex[:8]}") as sd:
        url = f"http://127.0.0.1:{sd.port}"

        # 1. activating, with STATUS= saying what it waits for, then active with READY=1.
        await sd.inside("systemctl", "start", "--no-block", SERVICE)
        seen: list[tuple[str, str]] = []

        def active(state: dict[str, str]) -> bool:
            if not seen or seen[-1] != (state["ActiveState"], state["StatusText"]):
                seen.append((state["ActiveState"], state["StatusText"]))
            assert state["ActiveState"] in ("inactive", "activating", "active"), seen
            return state["ActiveState"] == "active"

        ready = await sd.wait_for(active, 120, "the unit never became active")
        waiting = [text for state, text in seen if state == "activating" and text]
        assert waiting and not any(t.startswith("ready") for t in waiting), seen
        assert ready["StatusText"].startswith(f"ready at {url}, roles "), ready
        assert (await services_up(url)).get("nova-compute") == "up"
        first_pid = int(ready["MainPID"])
        assert ready["NRestarts"] == "0"

        # The hardening is in force, and the service works under it.
        status = await sd.inside("cat", f"/proc/{first_pid}/status")
        assert "NoNewPrivs:\t1" in status, status
        bounding = next(line for line in (REPO / "systemd" / SERVICE).read_text().splitlines()
                        if line.startswith("CapabilityBoundingSet="))
        expected = sum(1 << CAPABILITIES[name] for name in bounding.split("=", 1)[1].split())
        expected &= own_bounding_set()  # what this machine grants at all (here: no CAP_SYS_RESOURCE)
        assert f"CapBnd:\t{expected:016x}" in status, (bounding, status)
        mounts = [line.split() for line in (await sd.inside("cat", f"/proc/{first_pid}/mountinfo")).splitlines()]
        assert any(m[4] == "/" and m[5].split(",")[0] == "ro" for m in mounts)  # ProtectSystem=strict
        assert any(m[4] == "/var/lib/nova-async" and m[5].split(",")[0] == "rw" for m in mounts)

        # 2. A hung event loop: the watchdog kills it, systemd restarts it, it is ready again.
        await sd.inside("kill", "-USR2", str(first_pid))
        again = await sd.wait_for(lambda s: s["NRestarts"] == "1" and s["ActiveState"] == "active",
                                  90, "the watchdog did not restart the hung service")
        assert int(again["MainPID"]) != first_pid
        assert (await services_up(url)).get("nova-compute") == "up"
        manager = await sd.inside("journalctl", "--no-pager", "-o", "cat", "_PID=1")
        assert f"{SERVICE}: Watchdog timeout (limit {WATCHDOG_SEC}s)!" in manager, manager
        assert f"Killing process {first_pid} (nova-async) with signal SIGABRT" in manager, manager
        assert f"{SERVICE}: Failed with result 'watchdog'." in manager, manager

        # 3. The service's own lines are JSON, but for the stack dump of the killed process,
        # which shows the loop thread inside the injected code.
        raw = await sd.inside("journalctl", "--no-pager", "-u", "nova-async", "-t", "nova-async", "-o", "json")
        entries = [json.loads(line) for line in raw.splitlines()]
        logs, dump = [], []
        for entry in entries:
            try:
                logs.append((int(entry["_PID"]), json.loads(entry["MESSAGE"])))
            except (ValueError, TypeError):
                dump.append((int(entry["_PID"]), entry["MESSAGE"]))
        assert {pid for pid, _ in dump} == {first_pid}, dump
        dump_text = "\n".join(text for _, text in dump)
        assert "NOVA_ASYNC_TEST_HANG_SIGNAL: the event loop thread now sleeps 60 s" in dump_text
        assert "Fatal Python error: Aborted" in dump_text
        assert "in _hang_event_loop" in dump_text, dump_text
        assert "in run_forever" in dump_text, dump_text  # …called from the loop's own thread
        events = [(pid, record["event"]) for pid, record in logs]
        for pid in (first_pid, int(again["MainPID"])):
            assert (pid, f"nova-async ready at {url}") in events, events
        assert all({"event", "level", "timestamp"} <= record.keys() for _, record in logs)
        if shutil.which("jq"):
            # The README's command, as a user types it.
            await sd.inside("bash", "-o", "pipefail", "-c",
                            "journalctl -u nova-async -t nova-async -o cat | jq -R 'fromjson? // .' >/dev/null")
            # Without -t, systemd's and runuser's own lines about the unit are not JSON.
            plain = await sd.inside("bash", "-o", "pipefail", "-c",
                                    "journalctl -u nova-async -o cat | jq . >/dev/null", check=False)
            assert "parse error" in plain, plain

        # 4. A clean stop: the drain, then the private PostgreSQL stops.
        await sd.inside("systemctl", "stop", SERVICE, timeout=120)
        stopped = await sd.show("ActiveState", "Result")
        assert stopped == {"ActiveState": "inactive", "Result": "success"}, stopped
        last = await sd.inside("journalctl", "--no-pager", "-u", "nova-async", "-t", "nova-async", "-o", "cat",
                               f"_PID={again['MainPID']}")
        assert "private PostgreSQL stopped" in last, last[-2000:]
