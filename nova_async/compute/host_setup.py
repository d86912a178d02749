"""Make this machine able to run real guests: libvirt daemons up, /dev/kvm usable, KVM probed.

`nova-async host-setup` (and `make run` / `make test`, which call it) does this before the
compute role opens `qemu:///system`, so the first build does not fail on a missing daemon.

Why not just `systemctl start libvirtd`? The lab boxes and CI containers this runs on have
no systemd as PID 1 (no D-Bus, no udev). There we start `virtlogd -d` and run libvirtd under
`tini -s`: libvirtd forks a QEMU per guest, and without a reaping subreaper above it the
orphans of destroyed domains linger and a destroy takes ~1.6 s instead of ~0.2 s. A small
shell loop under tini starts libvirtd again when it dies, as systemd's unit would.

Why probe KVM instead of trusting `/dev/kvm`? Some machines expose a paravirtual /dev/kvm on
which real guests abort (`failed to set MSR 0x10a`) or, with another host kernel, run
firmware fine and then hang inside Linux without printing a byte. The only honest answer is
to boot what guests boot: first a throwaway QEMU with `-accel kvm -cpu host` must survive
its firmware, then the demo guest's kernel must reach its init under KVM. Without the demo
guest (`make guest-image`) KVM cannot be verified, so guests use TCG until it can. A
verdict is cached per machine and kernel, beside the demo guest, since it can cost seconds.

Everything is idempotent: a second run finds the daemons running and changes nothing.
"""

from __future__ import annotations

import asyncio
import grp
import json
import os
import platform
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

import libvirt
import structlog

from nova_async.common import errors, process
from nova_async.compute import guest_image

log = structlog.get_logger("compute.host_setup")

SYSTEM_URI = "qemu:///system"
QEMU = "qemu-system-x86_64"
KVM_DEV = Path("/dev/kvm")
READY_TIMEOUT = 60.0       # libvirtd's first start probes QEMU's capabilities (~14 s here)
PROBE_SETTLE = 1.0         # how long the throwaway KVM firmware must survive
PROBE_BOOT = 15.0          # how long the demo guest may take to reach its init under KVM

libvirt.registerErrorHandler(lambda _ctx, _err: None, None)


class HostSetupError(errors.Unavailable):
    """The host cannot run guests; the message says what to do about it."""


@dataclass
class HostReport:
    actions: list[str] = field(default_factory=list)
    kvm: bool = False
    kvm_reason: str = ""
    domain_type: str = "qemu"

    def summary(self) -> str:
        did = "; ".join(self.actions) if self.actions else "nothing to do, libvirt already running"
        accel = ("KVM works: domain type kvm" if self.kvm else
                 "KVM unusable: guests run under TCG (domain type qemu)") + f" ({self.kvm_reason})"
        return f"host-setup: {did}\nhost-setup: {SYSTEM_URI} answers; {accel}"


def _systemd_booted() -> bool:
    # sd_booted(3)'s own test.
    return Path("/run/systemd/system").is_dir()


def _running(name: str) -> bool:
    """Whether a process whose command name is `name` runs (no pidof: not always installed)."""
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                try:
                    if Path(entry.path, "comm").read_text().strip() == name:
                        return True
                except OSError:
                    continue
    return False


def _privilege_prefix() -> list[str]:
    """[] as root, ["sudo", "-n"] when sudo can run without a password prompt, else refuse."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo"):
        return ["sudo", "-n"]
    raise HostSetupError(
        "host-setup needs root to start libvirt. Run as root: "
        "`chgrp kvm /dev/kvm; chmod 0660 /dev/kvm; virtlogd -d; setsid -f tini -s -- libvirtd`"
        " (or `systemctl start virtlogd libvirtd` under systemd), then run nova-async again.")


async def _run(argv: list[str], *, timeout: float = 30.0) -> tuple[int, str]:
    try:
        done = await process.run(*argv, timeout=timeout)
    except process.ProcessTimeout:
        raise HostSetupError(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s") from None
    return done.returncode, done.output.strip()


async def _checked(argv: list[str], what: str) -> None:
    rc, out = await _run(argv)
    if rc != 0:
        hint = " (sudo needs a password: run host-setup as root)" if argv[:2] == ["sudo", "-n"] else ""
        raise HostSetupError(f"cannot {what}: `{' '.join(argv)}` exited {rc}{hint}: {out[-400:]}")


async def fix_kvm_device() -> str | None:
    """Group kvm, mode 0660: otherwise libvirt re-probes QEMU on every call (30–45 s each)."""
    if not KVM_DEV.exists():
        return None
    st = KVM_DEV.stat()
    try:
        kvm_gid = grp.getgrnam("kvm").gr_gid
    except KeyError:
        return None
    if st.st_gid == kvm_gid and stat.S_IMODE(st.st_mode) == 0o660:
        return None
    prefix = _privilege_prefix()
    await _checked([*prefix, "chgrp", "kvm", str(KVM_DEV)], "give /dev/kvm to group kvm")
    await _checked([*prefix, "chmod", "0660", str(KVM_DEV)], "make /dev/kvm mode 0660")
    return "set /dev/kvm to root:kvm 0660"


# libvirtd kept up as systemd keeps its unit (Restart=on-failure): one that dies of a signal
# or exits with an error is started again after a pause (the script's argument, in seconds),
# and its guests, which outlive it, are taken over by the new one; a clean stop (SIGTERM,
# exit 0) is left stopped. A libvirtd that dies five times in a row within a minute of its
# start is left down, as systemd's start limit does. What happened goes to libvirtd's log.
KEEP_LIBVIRTD = """# nova-async host-setup: libvirtd, started again when it dies (this line is what ps shows)
quick=0
while :; do
    started=$(date +%s)
    libvirtd
    rc=$?
    [ "$rc" -eq 0 ] && exit 0
    if [ $(( $(date +%s) - started )) -lt 60 ]; then quick=$((quick + 1)); else quick=1; fi
    if [ "$quick" -ge 5 ]; then
        echo "nova-async: libvirtd exited with status $rc, five times in a row within a minute; not started again" >&2
        exit "$rc"
    fi
    echo "nova-async: libvirtd exited with status $rc; starting it again in $1 s" >&2
    sleep "$1"
done
"""


# The loop's name in `ps` ($0 of its shell), by which a later host-setup knows it runs.
KEEPER = "nova-async-libvirtd"


def _keeper_running(name: str = KEEPER) -> bool:
    """Whether a KEEP_LIBVIRTD loop named `name` runs: between a libvirtd's death and its new
    start (a second) libvirtd is not running, but is about to be, and a second loop would
    only start a libvirtd that finds the first one's pid file taken."""
    script, wanted = KEEP_LIBVIRTD.encode(), name.encode()
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                try:
                    argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if script in argv and wanted in argv:
                    return True
    return False


async def start_daemons(log_dir: Path) -> list[str]:
    if _running("virtlogd") and _running("libvirtd"):
        return []
    prefix = _privilege_prefix()
    if _systemd_booted():
        await _checked([*prefix, "systemctl", "start", "virtlogd", "libvirtd"], "start libvirt")
        return ["started virtlogd and libvirtd with systemctl"]
    done = []
    if not _running("virtlogd"):
        await _checked([*prefix, "virtlogd", "-d"], "start virtlogd")
        done.append("started virtlogd -d")
    if not _running("libvirtd"):
        if _keeper_running():   # between two of its starts: the loop starts it in a moment
            done.append("libvirtd is being started again by the loop that keeps it up")
            return done
        for tool in ("tini", "setsid", "libvirtd"):
            if not shutil.which(tool) and not Path("/usr/sbin", tool).exists():
                raise HostSetupError(f"{tool} is missing: apt-get install tini util-linux libvirt-daemon-system")
        log_dir.mkdir(parents=True, exist_ok=True)
        log_file = log_dir / "libvirtd.log"
        # `setsid -f` forks and returns at once: libvirtd ends up owned by init, detached from
        # our session, and we leave no child process behind to reap.
        with open(log_file, "ab") as out:
            proc = await asyncio.create_subprocess_exec(
                *prefix, "setsid", "-f", "tini", "-s", "--", "sh", "-c", KEEP_LIBVIRTD, KEEPER, "1",
                stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out)
            rc = await proc.wait()
        if rc != 0:
            raise HostSetupError(f"cannot start libvirtd (exit {rc}); see {log_file}")
        done.append(f"started libvirtd under tini, started again if it dies (log: {log_file})")
    return done


def _answers(uri: str) -> int:
    conn = libvirt.open(uri)
    try:
        return conn.getLibVersion()
    finally:
        conn.close()


async def wait_for_libvirt(uri: str = SYSTEM_URI, timeout: float = READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        try:
            await asyncio.to_thread(_answers, uri)
            return
        except libvirt.libvirtError as exc:
            last = str(exc)
        if time.monotonic() >= deadline:
            raise HostSetupError(f"{uri} did not answer within {timeout:.0f} s: {last}")
        # No event tells us libvirtd finished starting; a short bounded retry is all there is.
        await asyncio.sleep(0.2)


async def _probe_kvm() -> tuple[bool | None, str]:
    if not KVM_DEV.exists():
        return False, "no /dev/kvm"
    if not os.access(KVM_DEV, os.R_OK | os.W_OK):
        return False, "/dev/kvm is not accessible"
    if not shutil.which(QEMU):
        return False, f"{QEMU} is not installed"
    # A guest without disks runs SeaBIOS; on a broken /dev/kvm QEMU aborts at the first vCPU
    # reset (within ~50 ms). One that is still alive after PROBE_SETTLE is told to quit.
    proc = await asyncio.create_subprocess_exec(
        QEMU, "-accel", "kvm", "-cpu", "host", "-machine", "pc", "-nodefaults", "-display", "none",
        "-m", "16", "-serial", "none", "-parallel", "none", "-monitor", "stdio",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    assert proc.stdin is not None and proc.stderr is not None
    try:
        await asyncio.wait_for(proc.wait(), PROBE_SETTLE)
    except TimeoutError:
        proc.stdin.write(b"quit\n")
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        proc.stdin.close()
    else:
        proc.stdin.close()
        err = (await proc.stderr.read()).decode(errors="replace").strip().splitlines()
        reason = next((line for line in err if "error" in line), err[-1] if err else f"exit {proc.returncode}")
        return False, reason
    guest = guest_image.load_cached(guest_image.default_cache_dir())
    if guest is None:
        return None, "not verified: the demo guest is not built (make guest-image)"
    took = await guest_image.boots(guest.kernel, guest.initrd, timeout=PROBE_BOOT, accel="kvm")
    if took is None:
        return False, f"the demo guest did not reach its init under KVM within {PROBE_BOOT:.0f} s"
    return True, f"the demo guest booted under KVM in {took:.1f} s"


def _probe_cache() -> Path:
    # Keyed by host and kernel: a cache copied to another machine, or a kernel upgrade
    # that fixes KVM, gets a fresh probe.
    host = platform.node() or "localhost"
    return guest_image.default_cache_dir().parent / f"kvm-probe.{host}.json"


async def kvm_verdict() -> tuple[bool, str]:
    """Whether real KVM guests run here, and why; probed once per machine and kernel, then
    cached. An unverified answer (no demo guest yet) is False and is not cached."""
    cache = _probe_cache()
    key = {"host": platform.node(), "kernel": platform.release(), "recipe": guest_image.RECIPE}
    try:
        cached = json.loads(cache.read_text())
        if {k: cached.get(k) for k in key} == key:
            return bool(cached["kvm"]), str(cached.get("reason", ""))
    except (OSError, ValueError, KeyError):
        pass
    ok, reason = await _probe_kvm()
    log.info("KVM probed", kvm=ok, reason=reason)
    if ok is None:
        return False, reason
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({**key, "kvm": ok, "reason": reason}) + "\n")
    except OSError:
        pass    # an unwritable cache only costs a re-probe next time
    return ok, reason


async def kvm_works() -> bool:
    return (await kvm_verdict())[0]


async def setup_host(state_dir: Path, uri: str = SYSTEM_URI) -> HostReport:
    report = HostReport()
    fixed = await fix_kvm_device()
    if fixed:
        report.actions.append(fixed)
    report.actions += await start_daemons(state_dir / "logs")
    await wait_for_libvirt(uri)
    report.kvm, report.kvm_reason = await kvm_verdict()
    report.domain_type = "kvm" if report.kvm else "qemu"
    return report
