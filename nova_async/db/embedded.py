"""A private PostgreSQL cluster under the state directory, for when no DSN is given.

initdb on first start, pg_ctl start/stop around the service's life, listening on a unix
socket only. PostgreSQL refuses to run as root, so as root the cluster belongs to the
`postgres` system user (Debian's package creates it) and commands run through runuser."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import structlog

from nova_async.common import errors, process

log = structlog.get_logger("db.embedded")

DB_NAME = "nova"
SUPERUSER = "nova"


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
        opts = (f"-c listen_addresses='' -c unix_socket_directories='{self.socket_dir}' "
                f"-c max_connections=200 -c shared_buffers=128MB "
                + ("-c fsync=on" if self.durable else "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
                + "".join(f" -c {name}={value}" for name, value in self.settings.items()))
        await _run(*self.prefix, find_bin("pg_ctl"), "-D", str(self.data), "-o", opts, "-w",
                   "-t", "60", "-l", str(self.root / "postgres.log"), "start")
        await self._ensure_database()
        log.info("private PostgreSQL started", socket=str(self.socket_dir))

    async def _stop_stale(self) -> None:
        # A crash can leave a server running (or just its pid file); pg_ctl sorts out which.
        status = await process.run(*self.prefix, find_bin("pg_ctl"), "-D", str(self.data), "status")
        if status.returncode == 0:
            log.warning("a PostgreSQL from an earlier run is still up; restarting it")
            await _run(*self.prefix, find_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

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
        await _run(*self.prefix, find_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        log.info("private PostgreSQL stopped")


@contextlib.asynccontextmanager
async def embedded_postgres(state_dir: Path) -> AsyncIterator[EmbeddedPostgres]:
    pg = EmbeddedPostgres(state_dir)
    await pg.start()
    try:
        yield pg
    finally:
        await pg.stop()
