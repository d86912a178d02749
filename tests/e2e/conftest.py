"""Start `nova-async serve` as a real process and talk to it over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import socket
import sys
import tomllib
import uuid
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import remove_domains

PASSWORD = "e2e-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class Served:
    url: str
    state_dir: Path
    proc: asyncio.subprocess.Process
    log: list[str]
    password: str = PASSWORD

    async def token(self, session: aiohttp.ClientSession) -> str:
        auth = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "domain": {"name": "Default"}, "password": self.password}}},
            "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}
        async with session.post(f"{self.url}/v3/auth/tokens", json=auth) as resp:
            assert resp.status == 201, await resp.text()
            return resp.headers["X-Subject-Token"]


def remove_guests_under(state_dir: Path, uri: str = "qemu:///system") -> list[str]:
    """Destroy and undefine the domains whose files live under `state_dir`: what a test's
    service left running when the test failed half-way (stopping a service keeps guests)."""
    return remove_domains(uri, lambda xml: str(state_dir) in xml)


def safe_network_settings(state_dir: Path, args: tuple[str, ...]) -> tuple[str, ...]:
    """The args with a config whose [network] section is safe on a shared test machine: a
    service's own nftables table name (services of parallel tests never share one), and an
    external network on TEST-NET-3 whose gateway is not the host's (the host gets no address
    on it, no NAT and no forwarding of its own). What a test's own --config says wins; what it
    leaves out of these three is added, in a copy."""
    safe = {"dataplane_table": f"t_{uuid.uuid4().hex[:12]}", "external_cidr": "203.0.113.0/24",
            "external_host_gateway": False}
    args = list(args)
    given: dict = {}
    if "--config" in args:
        given = tomllib.loads(Path(args[args.index("--config") + 1]).read_text())
    merged = {**given, "network": {**safe, **given.get("network", {})}}
    config = state_dir.parent / f"{state_dir.name}-safe.toml"
    config.write_text("".join(f"[{section}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())
                              for section, values in merged.items()))
    if "--config" in args:
        args[args.index("--config") + 1] = str(config)
    else:
        args += ["--config", str(config)]
    return tuple(args)


def remove_dataplane_under(state_dir: Path) -> list[str]:
    """What a service's data plane left on this host for the networks it served from
    `state_dir` (it keeps namespaces and bridges across a stop, for its next start): each
    network's DHCP namespace (its veth goes with it) and, once empty, its bridge."""
    import subprocess

    removed = []
    dhcp = state_dir / "dataplane" / "dhcp"
    for network_dir in sorted(dhcp.iterdir()) if dhcp.is_dir() else []:
        ns, bridge = f"qdhcp-{network_dir.name}", f"brq{network_dir.name[:11]}"
        pid_file = network_dir / "pid"
        pid = pid_file.read_text().strip() if pid_file.exists() else ""
        with contextlib.suppress(OSError):  # a killed service's dnsmasq: ours if it names our pid file
            if pid.isdigit() and f"--pid-file={pid_file}".encode() in \
                    Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                os.kill(int(pid), signal.SIGKILL)
        if Path("/var/run/netns", ns).exists():
            subprocess.run(["ip", "netns", "del", ns], check=False, timeout=30)
            removed.append(ns)
        brif = Path("/sys/class/net", bridge, "brif")
        if brif.is_dir() and not any(brif.iterdir()):
            subprocess.run(["ip", "link", "del", "dev", bridge], check=False, timeout=30)
            removed.append(bridge)
    return removed


async def tear_down_dataplane(args: tuple[str, ...]) -> bool:
    """Everything the data plane of a stopped service made on this host, removed by the data
    plane's own recovery code: each part applied to an empty desired state removes what
    `dataplane_objects` in the service's database lists (namespaces, veths, bridges, dnsmasq,
    nftables tables). A service keeps all that across a stop, for its next start; a test is
    done with it. False when the database is not reachable from here (a private cluster
    stopped with its service)."""
    from nova_async import cli
    from nova_async.dataplane import client as dataplane_client
    from nova_async.dataplane.made import Made
    from nova_async.dataplane.reconcile import PartDeps
    from nova_async.dataplane.role import tear_down
    from nova_async.db.pool import open_pool

    settings = cli._settings(cli._parser().parse_args(["serve", *args]))
    if not dataplane_client.enabled(settings):
        return True
    if not settings.service.database:
        return False
    host = settings.compute.host or socket.gethostname()
    async with open_pool(settings.service.database, min_size=1, max_size=2) as pool:
        await tear_down(PartDeps(pool=pool, cells=None, made=Made(pool, host), settings=settings.network,  # type: ignore[arg-type]
                                 host=host, state_dir=settings.state_path / "dataplane", network=None,  # type: ignore[arg-type]
                                 bus=None, poke=lambda: None))  # type: ignore[arg-type]
    return True


# How much of a served process's output a failed test prints.
SERVICE_LOG_TAIL = 150
LIBVIRTD_LOG_TAIL = 40


def libvirtd_report() -> list[str]:
    """Whether the host's libvirtd still runs, and the end of the log host-setup gave it:
    for a failed test whose guests it ran (was a lost connection libvirtd's doing?)."""
    import subprocess

    from nova_async import config

    running = subprocess.run(["pgrep", "-a", "-x", "libvirtd"], capture_output=True, text=True).stdout.strip()
    log_file = Path(config.default_state_dir()) / "logs" / "libvirtd.log"
    tail = log_file.read_text(errors="replace").splitlines()[-LIBVIRTD_LOG_TAIL:] if log_file.exists() else []
    return [f"---- libvirtd: {running or 'NOT RUNNING'}; the end of {log_file} ----", *tail]


@contextlib.asynccontextmanager
async def serve(state_dir: Path, *args: str, ready_timeout: float = 120, env: dict[str, str] | None = None,
                keep_host_state: bool = False, module: str = "nova_async"):
    """`nova-async serve` on `state_dir`; at the end its guests and what its data plane left on
    the host are removed, unless `keep_host_state` (a test that starts it again on the same
    state dir, to see what a restart finds). `module`: what `python -m` runs (a test's build
    of another release, on the PYTHONPATH that `env` gives)."""
    port = free_port()
    args = safe_network_settings(state_dir, args)
    argv = [sys.executable, "-m", module, "serve", "--listen", f"127.0.0.1:{port}",
            "--state-dir", str(state_dir), "--admin-password", PASSWORD, *args]
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT,
                                                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    log: list[str] = []
    ready = asyncio.Event()

    async def pump() -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip()
            log.append(line)
            if "nova-async ready" in line:
                ready.set()

    pumping = asyncio.create_task(pump(), name="e2e:log-pump")
    waiting = asyncio.create_task(ready.wait(), name="e2e:ready")
    try:
        await asyncio.wait([waiting, pumping], timeout=ready_timeout, return_when=asyncio.FIRST_COMPLETED)
        if not ready.is_set():
            proc.kill()
            await proc.wait()
            pytest.fail("nova-async did not become ready:\n" + "\n".join(log[-60:]))
        try:
            yield Served(url=f"http://127.0.0.1:{port}", state_dir=state_dir, proc=proc, log=log)
        except BaseException:
            # A failed test shows what the service was doing: its output is in the capture.
            print(f"---- the last {SERVICE_LOG_TAIL} lines of nova-async serve ----",
                  *log[-SERVICE_LOG_TAIL:], sep="\n")
            if "qemu:///system" in args:
                print(*libvirtd_report(), sep="\n")
            raise
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 60)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        waiting.cancel()
        await pumping
        if not keep_host_state:
            await asyncio.to_thread(remove_guests_under, state_dir.resolve())
            if not await tear_down_dataplane(("--state-dir", str(state_dir), *args)):
                await asyncio.to_thread(remove_dataplane_under, state_dir.resolve())
