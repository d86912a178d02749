"""The three processes `placement_vs_upstream.py` compares against each other: one PostgreSQL
cluster holding both databases (so neither side gets a better-tuned server), nova-async's
placement role, and upstream OpenStack Placement under gunicorn from its own venv.

Upstream is installed with pip into a venv of its own: its dependency pins must never leak
into nova-async's environment. By default that venv is kept under /var/cache so later runs
reuse it (~35 s to install with an empty pip cache); `--upstream-venv DIR` puts it elsewhere,
as the smoke test does with a temporary one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

from bench import upstream_venv
from nova_async.db.embedded import EmbeddedPostgres

DEFAULT_VENV = Path(os.environ.get("PLACEMENT_BENCH_VENV", "/var/cache/nova-async/bench/placement-venv"))
UPSTREAM_PACKAGES = ["openstack-placement", "gunicorn", "psycopg2-binary"]
UPSTREAM_DB = "placement"
WSGI_APP = "placement.wsgi.api:application"  # the module behind upstream's `placement-api` script
READY_TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_upstream_venv(venv: Path) -> Path:
    return upstream_venv.ensure(venv, UPSTREAM_PACKAGES, ("gunicorn", "placement-manage"), "upstream placement")


def upstream_version(venv: Path) -> str:
    done = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import importlib.metadata as m; print(m.version('openstack-placement'))"],
                          capture_output=True, text=True)
    return done.stdout.strip() or "?"


@contextlib.asynccontextmanager
async def postgres(root: Path) -> AsyncIterator[EmbeddedPostgres]:
    """nova-async's own private-cluster code, reused: it already knows how to run PostgreSQL as
    the postgres user when we are root. Its `nova` database is ours; upstream gets another."""
    pg = EmbeddedPostgres(root)
    await pg.start()
    try:
        import asyncpg

        conn = await asyncpg.connect(pg.dsn.replace("/nova?", "/postgres?"))
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{UPSTREAM_DB}"')
            await conn.execute(f'CREATE DATABASE "{UPSTREAM_DB}"')
        finally:
            await conn.close()
        yield pg
    finally:
        await pg.stop()


async def analyze(pg: EmbeddedPostgres) -> None:
    """Fresh planner statistics in both databases after a bulk load, as autovacuum would give a
    long-running deployment: without them the first timings measure stale plans, not code."""
    import asyncpg

    for db in ("nova", UPSTREAM_DB):
        conn = await asyncpg.connect(pg.dsn.replace("/nova?", f"/{db}?"))
        try:
            await conn.execute("ANALYZE")
        finally:
            await conn.close()


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), 60)
    except TimeoutError:
        proc.kill()
        await proc.wait()


@contextlib.asynccontextmanager
async def nova_async(state_dir: Path, dsn: str) -> AsyncIterator[str]:
    """`nova-async serve --roles placement,identity --auth noauth`; yields its placement URL.

    Its log goes straight to a file, as upstream's does: a pipe drained by this process would
    wake the timing client for every request's log line."""
    port = free_port()
    log_path = state_dir / "nova-async.log"
    state_dir.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "nova_async", "serve", "--roles", "placement,identity", "--auth", "noauth",
            "--state-dir", str(state_dir), "--database", dsn, "--listen", f"127.0.0.1:{port}",
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        await _wait_http(f"http://127.0.0.1:{port}/placement/", proc, log_path, "nova-async")
        yield f"http://127.0.0.1:{port}/placement"
    finally:
        await _stop(proc)


def _write_config(conf_dir: Path, socket_dir: Path) -> None:
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "placement.conf").write_text(
        "[DEFAULT]\ndebug = False\n"
        "[api]\nauth_strategy = noauth2\n"
        f"[placement_database]\nconnection = postgresql+psycopg2://nova@/{UPSTREAM_DB}?host={socket_dir}\n")


async def _wait_http(url: str, proc: asyncio.subprocess.Process, log_path: Path, name: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if proc.returncode is not None:
                break
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url) as resp:
                    if resp.status == 200:
                        return
            await asyncio.sleep(0.2)
    raise SystemExit(f"{name} did not answer at {url}; see {log_path}:\n"
                     + log_path.read_text(errors="replace")[-3000:])


@contextlib.asynccontextmanager
async def upstream(work_dir: Path, socket_dir: Path, workers: int, venv: Path) -> AsyncIterator[str]:
    """Upstream Placement: `placement-manage db sync`, then gunicorn serving the WSGI app that
    the `placement-api` script wraps; yields its URL."""
    conf_dir = work_dir / "etc"
    _write_config(conf_dir, socket_dir)
    env = {**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(conf_dir)}
    sync = subprocess.run([str(venv / "bin" / "placement-manage"), "--config-file",
                           str(conf_dir / "placement.conf"), "db", "sync"],
                          env=env, capture_output=True, text=True)
    if sync.returncode != 0:
        raise SystemExit(f"placement-manage db sync failed:\n{sync.stdout}{sync.stderr}")
    port = free_port()
    log_path = work_dir / "gunicorn.log"
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            str(venv / "bin" / "gunicorn"), "--workers", str(workers), "--bind", f"127.0.0.1:{port}",
            "--timeout", "600", WSGI_APP, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        await _wait_http(url + "/", proc, log_path, "upstream placement")
        yield url
    finally:
        await _stop(proc)
