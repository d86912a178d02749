"""A real RabbitMQ (Debian's rabbitmq-server) for tests and benchmarks, owned by the caller.

Everything lives under one directory: the node's database, its log, its config, the
Erlang cookie and a private `epmd` on a port of its own, so runs never meet each other or a
system broker. The broker is a child process, stopped and started again at will (for the
restart tests); its database survives a restart, as a real broker's does.

    broker = Broker(tmp_dir)
    await broker.start()          # ~4 s on an idle machine; more on a busy one
    url = broker.url              # amqp://guest:guest@127.0.0.1:PORT/
    await broker.restart()
    await broker.close()

A cluster of such nodes on this one machine, for what only a cluster shows (a node dying):

    async with cluster_started(tmp_dir, size=3) as cluster:   # tens of seconds
        cluster.transport         # rabbit://guest:guest@127.0.0.1:P1,guest:guest@127.0.0.1:P2,…/
        await cluster.nodes[0].stop(kill=True)   # SIGKILL of that node's Erlang VM

Each node has its own name (rabbit1@localhost, …), ports (AMQP, Erlang distribution) and
directory (database, log, config); they share one Erlang cookie and one private `epmd`, which
is how Erlang nodes on one host find each other. No plugin is enabled (`enabled_plugins` is
empty), so no node opens a management or Prometheus listener that the others would collide
with.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import socket
from collections.abc import AsyncIterator
from pathlib import Path

RABBITMQ_BIN = Path("/usr/lib/rabbitmq/bin")  # Debian's scripts, without the su-to-rabbitmq wrapper
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
_names = itertools.count(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.asynccontextmanager
async def cluster_started(base: Path, size: int = 3) -> AsyncIterator["Cluster"]:
    """A cluster of `size` nodes under `base`, running for the block (a fixture's whole body)."""
    cluster = Cluster(base, size)
    try:
        await cluster.start()
        yield cluster
    finally:
        await cluster.close()


@contextlib.asynccontextmanager
async def started(base: Path) -> AsyncIterator["Broker"]:
    """A broker under `base`, running for the block (a fixture's whole body)."""
    broker = Broker(base)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.close()


def available() -> str | None:
    """Why a broker cannot be started here, or None when it can."""
    if not (RABBITMQ_BIN / "rabbitmq-server").exists():
        return "rabbitmq-server is not installed (apt-get install rabbitmq-server; `make test` does)"
    if not shutil.which("epmd") and not Path("/usr/lib/erlang/bin/epmd").exists():
        return "epmd (Erlang) is not installed"
    return None


async def _start_epmd(port: int, env: dict[str, str]) -> asyncio.subprocess.Process:
    epmd = shutil.which("epmd") or "/usr/lib/erlang/bin/epmd"
    return await asyncio.create_subprocess_exec(
        epmd, "-port", str(port), env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)


async def _stop_epmd(epmd: asyncio.subprocess.Process | None) -> None:
    if epmd is not None and epmd.returncode is None:
        epmd.terminate()
        await epmd.wait()


class Broker:
    """One node. On its own it runs its own `epmd`; a Cluster gives its nodes a shared one
    (`epmd_port`) and one Erlang cookie."""

    def __init__(self, base: Path, *, nodename: str | None = None, epmd_port: int | None = None,
                 cookie: str | None = None) -> None:
        self.base = base
        self.port = free_port()
        self.nodename = nodename or f"nova-async-test-{os.getpid()}-{next(_names)}@localhost"
        self._own_epmd = epmd_port is None
        self._epmd_port = epmd_port or free_port()
        self._cookie = cookie or f"NOVAASYNCTEST{os.getpid()}{self.port}"
        self._dist_port = free_port()
        self._epmd: asyncio.subprocess.Process | None = None
        self._server: asyncio.subprocess.Process | None = None
        self.log_path = base / "rabbitmq.log"

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"

    @property
    def running(self) -> bool:
        return self._server is not None and self._server.returncode is None

    def _env(self) -> dict[str, str]:
        b = self.base
        return {
            "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(b),  # the Erlang cookie is read from $HOME/.erlang.cookie
            "ERL_EPMD_PORT": str(self._epmd_port),
            "RABBITMQ_CONF_ENV_FILE": str(b / "rabbitmq-env.conf"),  # not /etc/rabbitmq's
            "RABBITMQ_CONFIG_FILE": str(b / "rabbitmq"),  # .conf is appended
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(b / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(b / "mnesia"),
            "RABBITMQ_LOG_BASE": str(b / "log"),
            "RABBITMQ_LOGS": "-",  # to stdout, which goes to rabbitmq.log
            "RABBITMQ_PID_FILE": str(b / "rabbitmq.pid"),
            "RABBITMQ_NODENAME": self.nodename,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self._dist_port),
        }

    def _write_files(self) -> None:
        b = self.base
        b.mkdir(parents=True, exist_ok=True)
        cookie = b / ".erlang.cookie"
        if not cookie.exists():
            cookie.write_text(self._cookie)
            cookie.chmod(0o400)
        (b / "rabbitmq-env.conf").write_text("")
        (b / "enabled_plugins").write_text("[].\n")
        (b / "rabbitmq.conf").write_text(
            f"listeners.tcp.1 = 127.0.0.1:{self.port}\n"
            "loopback_users = none\n"
            # A test machine's disk is often nearly full; the default alarm (50 MB) would block
            # every publisher. Memory likewise: other tests share the machine.
            "disk_free_limit.absolute = 1MB\n"
            "vm_memory_high_watermark.relative = 0.8\n")

    async def start(self) -> None:
        if self.running:
            return
        self._write_files()
        env = self._env()
        if self._own_epmd and (self._epmd is None or self._epmd.returncode is not None):
            self._epmd = await _start_epmd(self._epmd_port, env)
        (self.base / "rabbitmq.pid").unlink(missing_ok=True)
        # A fresh Erlang distribution port each time: after a crash the old one may linger in
        # TIME_WAIT, and the node refuses to start on it. Clients only use the AMQP port.
        self._dist_port = free_port()
        env["RABBITMQ_DIST_PORT"] = str(self._dist_port)
        with open(self.log_path, "ab") as log:
            self._server = await asyncio.create_subprocess_exec(
                str(RABBITMQ_BIN / "rabbitmq-server"), env=env, cwd=self.base,
                stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=asyncio.subprocess.STDOUT)
        # `rabbitmqctl wait` follows the pid file, then the node, until the broker's applications
        # (and so its listener) are up; it gives up early when the server process dies. But it
        # reads the pid file the moment it exists, and the VM creates it before it writes the
        # number: read in between, an empty file ends the wait with garbage_in_pid_file. So
        # the wait starts once the file holds a pid.
        await self._pid_written()
        wait = await asyncio.create_subprocess_exec(
            str(RABBITMQ_BIN / "rabbitmqctl"), "-q", "-n", self.nodename, "wait", "--timeout",
            str(int(START_TIMEOUT)), str(self.base / "rabbitmq.pid"), env=env, cwd=self.base,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await wait.communicate()
        if wait.returncode != 0 or not self.running:
            await self.stop()
            raise RuntimeError(f"RabbitMQ did not start (rabbitmqctl wait: {out.decode(errors='replace')})\n"
                               + self.log_tail())

    async def _pid_written(self) -> None:
        """Until the pid file holds a number, the server has exited, or START_TIMEOUT passed
        (the last two are then reported by `rabbitmqctl wait`)."""
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT
        while (self._vm_pid() is None and self.running
               and asyncio.get_running_loop().time() < deadline):
            await asyncio.sleep(0.05)

    def _vm_pid(self) -> int | None:
        try:
            return int((self.base / "rabbitmq.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    async def stop(self, *, kill: bool = False) -> None:
        """Stop the broker: SIGTERM (a clean shutdown) or SIGKILL (a crash).

        Our child is Debian's start script, which runs the Erlang VM as its own child and
        turns SIGTERM into a clean stop; a crash is the VM itself being killed (its pid is in
        the pid file), after which the script exits too."""
        server, self._server = self._server, None
        if server is None or server.returncode is not None:
            return
        vm = self._vm_pid()
        if kill and vm is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(vm, signal.SIGKILL)
        else:
            server.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(server.wait(), STOP_TIMEOUT)
        except TimeoutError:
            if vm is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(vm, signal.SIGKILL)
            server.kill()
            await server.wait()

    async def restart(self, *, kill: bool = False) -> None:
        await self.stop(kill=kill)
        await self.start()

    async def close(self) -> None:
        await self.stop()
        epmd, self._epmd = self._epmd, None
        await _stop_epmd(epmd)

    async def rabbitmqctl(self, *args: str) -> str:
        """Run `rabbitmqctl -n <this node> ARGS` and return what it printed."""
        proc = await asyncio.create_subprocess_exec(
            str(RABBITMQ_BIN / "rabbitmqctl"), "-q", "-n", self.nodename, *args, env=self._env(),
            cwd=self.base, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT)
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)} failed: {out.decode(errors='replace')}")
        return out.decode()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no broker log)"


class Cluster:
    """`size` nodes on this machine joined into one RabbitMQ cluster (see the module's doc)."""

    def __init__(self, base: Path, size: int = 3) -> None:
        self.base = base
        self._epmd_port = free_port()
        self._epmd: asyncio.subprocess.Process | None = None
        cookie = f"NOVAASYNCCLUSTER{os.getpid()}{self._epmd_port}"
        self.nodes = [Broker(base / f"rabbit{i}", nodename=f"rabbit{i}@localhost", epmd_port=self._epmd_port,
                             cookie=cookie) for i in range(1, size + 1)]

    @property
    def transport(self) -> str:
        """Every node, in oslo.messaging's form of a transport URL (as --transport takes it)."""
        return "rabbit://" + ",".join(f"guest:guest@127.0.0.1:{node.port}" for node in self.nodes) + "/"

    async def start(self) -> None:
        first, *others = self.nodes
        first._write_files()
        self._epmd = await _start_epmd(self._epmd_port, first._env())
        # Each node starts as a cluster of its own, all at once (their boots do not depend on
        # each other); then every other node resets itself into the first one's cluster.
        await asyncio.gather(*(node.start() for node in self.nodes))
        for node in others:
            await node.rabbitmqctl("stop_app")
            await node.rabbitmqctl("join_cluster", first.nodename)
            await node.rabbitmqctl("start_app")
        await first.rabbitmqctl("await_online_nodes", str(len(self.nodes)))

    async def close(self) -> None:
        # Every node's own stop first (each is bounded), then the epmd they shared.
        await asyncio.gather(*(node.close() for node in self.nodes), return_exceptions=True)
        epmd, self._epmd = self._epmd, None
        await _stop_epmd(epmd)

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(f"--- {node.nodename}\n{node.log_tail(lines)}" for node in self.nodes)
