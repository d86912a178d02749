"""A private PostgreSQL cluster under the state directory, for when no DSN is given.

initdb on first start, pg_ctl start/stop around the service's life, listening on a unix
socket only. PostgreSQL refuses to run as root, so as root the cluster belongs to the
`postgres` system user (Debian's package creates it) and commands run through runuser.

The cluster is a child the service owns, so its death is the service's to handle. The
service makes itself the subreaper of its descendants (`embedded_postgres`), so that the
postmaster, which pg_ctl leaves behind, is its child: the supervisor (`supervise`, a task of
the service) watches it through a pidfd, which becomes readable the moment it exits (the
OOM killer's SIGKILL included), reaps it (a zombie postmaster still answers kill(pid, 0),
and pg would take it for a running server), and starts the cluster again; PostgreSQL runs
its own crash recovery. A postmaster killed that way leaves its backends behind for a
moment, attached to the old shared memory, and a new postmaster refuses to start while they
are (pg says: terminate any old server processes). They are the service's children then:
they are ended first, as pg's postmaster ends its children after a crash (SIGQUIT, then
SIGKILL), and reaped. Deaths that keep coming (a setting: so many within so many seconds)
end the service with a one-line reason, and its service manager's Restart= takes over."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import os
import pwd
import shutil
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import structlog

from nova_async.common import errors, process
from nova_async.db.health import DatabaseHealth

log = structlog.get_logger("db.embedded")

DB_NAME = "nova"
SUPERUSER = "nova"
# pg's postmaster gives its children this long after SIGQUIT before SIGKILL (after a crash).
QUIT_GRACE = 5.0
RESTART_PAUSE = 1.0  # seconds before trying again after a restart that failed
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def find_bin(name: str) -> str:
    for version in ("17", "16", "15", "14", "13"):
        candidate = Path(f"/usr/lib/postgresql/{version}/bin/{name}")
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if not found:
        raise errors.Unavailable(f"PostgreSQL's {name} was not found: install the postgresql package "
                                 "(make run does) or give --database DSN")
    return found


def _owner() -> tuple[list[str], int, int]:
    """The command prefix to run as the cluster's owner, and that owner's uid/gid."""
    if os.geteuid() != 0:
        return [], os.geteuid(), os.getegid()
    try:
        pw = pwd.getpwnam("postgres")
    except KeyError:
        raise errors.Unavailable("running as root needs the 'postgres' system user "
                                 "(install the postgresql package)") from None
    return ["runuser", "-u", "postgres", "--"], pw.pw_uid, pw.pw_gid


async def _run(*argv: str) -> str:
    done = await process.run(*argv, timeout=120)
    if done.returncode != 0:
        program = Path(argv[argv.index("--") + 1] if "--" in argv else argv[0]).name
        raise errors.Unavailable(f"{program} failed ({done.returncode}): {done.output.strip()[-800:]}")
    return done.output


class EmbeddedPostgres:
    def __init__(self, state_dir: Path, *, durable: bool = True, settings: dict[str, str] | None = None) -> None:
        # durable=False (the test suite's throwaway cluster) skips fsync: a checkpoint, which
        # every DROP DATABASE waits for, then costs milliseconds instead of seconds.
        self.durable = durable
        self.settings = settings or {}  # more server settings (`-c name=value`)
        self.root = state_dir / "postgres"
        self.data = self.root / "data"
        self.socket_dir = self.root / "run"
        self.prefix, self.uid, self.gid = _owner()

    @property
    def dsn(self) -> str:
        return f"postgresql://{SUPERUSER}@/{DB_NAME}?host={self.socket_dir}"

    def _check_reachable(self) -> None:
        # The cluster's owner must be able to walk down to its directory.
        if os.geteuid() != 0:
            return
        for parent in reversed(self.root.parents):
            mode = parent.stat().st_mode
            if not mode & 0o001:
                raise errors.Unavailable(
                    f"the state directory must be reachable by the postgres user, but {parent} is "
                    f"not searchable by others; choose another --state-dir (default /var/lib/nova-async)")

    async def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self._check_reachable()
        for d in (self.root, self.socket_dir):
            d.mkdir(exist_ok=True)
            os.chown(d, self.uid, self.gid)
        os.chmod(self.root, 0o755)
        os.chmod(self.socket_dir, 0o700)
        if not (self.data / "PG_VERSION").exists():
            log.info("creating private PostgreSQL cluster", path=str(self.data))
            await _run(*self.prefix, find_bin("initdb"), "-D", str(self.data), "-U", SUPERUSER,
                       "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        pid_file = self.data / "postmaster.pid"
        if pid_file.exists():
            await self._stop_stale()
        await self._start_server()
        await self._ensure_database()
        log.info("private PostgreSQL started", socket=str(self.socket_dir))

    async def _start_server(self) -> None:
        await self._end_orphans()
        opts = (f"-c listen_addresses='' -c unix_socket_directories='{self.socket_dir}' "
                f"-c max_connections=200 -c shared_buffers=128MB "
                + ("-c fsync=on" if self.durable else "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
                + "".join(f" -c {name}={value}" for name, value in self.settings.items()))
        await _run(*self.prefix, find_bin("pg_ctl"), "-D", str(self.data), "-o", opts, "-w",
                   "-t", "60", "-l", str(self.root / "postgres.log"), "start")

    async def _running(self) -> bool:
        status = await process.run(*self.prefix, find_bin("pg_ctl"), "-D", str(self.data), "status")
        return status.returncode == 0

    async def _stop_stale(self) -> None:
        # A crash can leave a server running (or just its pid file); pg_ctl sorts out which.
        if await self._running():
            log.warning("a PostgreSQL from an earlier run is still up; restarting it")
            await _run(*self.prefix, find_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def postmaster_pid(self) -> int | None:
        """The running postmaster's pid; None when postmaster.pid is missing or names a
        process that is gone (or, its pid reused, is no PostgreSQL)."""
        try:
            first = (self.data / "postmaster.pid").read_text().split("\n", 1)[0].strip()
        except OSError:
            return None
        if not first.isdigit():
            return None
        found = _stat(int(first))
        return int(first) if found is not None and found[0] == "postgres" and found[1] != "Z" else None

    @staticmethod
    def _orphans() -> list[int]:
        """PostgreSQL processes whose parent is this process: what a postmaster that died left
        behind (its children come to the subreaper), zombies included."""
        me = os.getpid()
        found = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None \
                    and stat[0] == "postgres" and stat[2] == me:
                found.append(int(entry.name))
        return found

    async def _end_orphans(self) -> None:
        """End what a dead postmaster left behind, as pg ends its children after a crash."""
        orphans = self._orphans()
        if not orphans:
            return
        log.warning("ending PostgreSQL processes a dead postmaster left behind", pids=orphans)
        for sig, grace in ((signal.SIGQUIT, QUIT_GRACE), (signal.SIGKILL, 60.0)):
            for pid in orphans:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await asyncio.gather(*(exited(pid) for pid in orphans))
            orphans = self._orphans()
            if not orphans:
                return
        raise errors.Unavailable(f"PostgreSQL processes {orphans} of {self.data} outlived SIGKILL")

    async def supervise(self, health: DatabaseHealth, *, deaths: int, window: float) -> None:
        """Start the cluster again each time its postmaster dies, until it has died `deaths`
        times within `window` seconds: then raise, to end the service (a task of the service;
        cancelled before the cluster is stopped at shutdown)."""
        recent: collections.deque[float] = collections.deque()
        while True:
            pid = self.postmaster_pid()
            if pid is not None:
                await exited(pid)
            now = time.monotonic()
            recent.append(now)
            while recent[0] < now - window:
                recent.popleft()
            health.lost(self.dsn, f"the private PostgreSQL's postmaster (pid {pid}) exited" if pid
                        else "the private PostgreSQL is not running")
            if len(recent) >= deaths:
                reason = (f"the private PostgreSQL died {len(recent)} times within {window:g} s (see "
                          f"{self.root / 'postgres.log'}); exiting so that the service manager restarts "
                          "nova-async")
                log.error(reason)
                raise errors.Unavailable(reason)
            log.warning("the private PostgreSQL died; starting it again", pid=pid, deaths=len(recent),
                        window=window)
            try:
                await self._start_server()
            except errors.Unavailable as exc:
                # Counted as one more death on the next round (no postmaster to wait for).
                log.error("could not start the private PostgreSQL again", error=exc.message)
                await asyncio.sleep(RESTART_PAUSE)
                continue
            log.info("private PostgreSQL started again; it recovers from the crash on its own",
                     pid=self.postmaster_pid())
            health.wake()

    async def _ensure_database(self) -> None:
        import asyncpg

        conn = await asyncpg.connect(f"postgresql://{SUPERUSER}@/postgres?host={self.socket_dir}")
        try:
            exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", DB_NAME)
            if not exists:
                await conn.execute(f'CREATE DATABASE "{DB_NAME}"')
        finally:
            await conn.close()

    async def stop(self) -> None:
        pid = self.postmaster_pid()
        if pid is None:  # it died, and the service is ending because of it
            await self._end_orphans()
            return
        await _run(*self.prefix, find_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        await exited(pid)  # reaped, when it is this process's child
        log.info("private PostgreSQL stopped")


def _stat(pid: int) -> tuple[str, str, int] | None:
    """A process's name, state and parent, from /proc/<pid>/stat (readable by anyone)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    head, _, rest = raw.rpartition(")")
    fields = rest.split()
    return head.partition("(")[2], fields[0], int(fields[1])


def become_subreaper() -> None:
    """Orphaned descendants (the postmaster pg_ctl leaves, and what it leaves when it dies)
    become this process's children instead of init's."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        log.warning("could not become the subreaper of the private PostgreSQL",
                    error=os.strerror(ctypes.get_errno()))


async def exited(pid: int) -> None:
    """Return once process `pid` has ended (its pidfd becomes readable then: not polling, the
    kernel tells the event loop), reaped when it is this process's child. Only for processes
    nobody else waits for: not those asyncio started."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    loop.add_reader(fd, lambda: ended.done() or ended.set_result(None))
    try:
        await ended
        with contextlib.suppress(ChildProcessError):  # another's child: its parent reaps it
            os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOHANG)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


@contextlib.asynccontextmanager
async def embedded_postgres(state_dir: Path) -> AsyncIterator[EmbeddedPostgres]:
    become_subreaper()
    pg = EmbeddedPostgres(state_dir)
    await pg.start()
    try:
        yield pg
    finally:
        await pg.stop()
