"""Fixtures every test layer shares: one real PostgreSQL cluster per test process (each
pytest-xdist worker has its own), a migrated template database built once in it, and a fresh
database per test cloned from it."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import tempfile
from pathlib import Path

import asyncpg
import pytest

from nova_async.db.embedded import EmbeddedPostgres
from nova_async.db.migrate import migrate
from nova_async.db.pool import open_pool
from tests.harness import remember_dsn

_counter = itertools.count(1)
E2E = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/e2e starts `nova-async serve` or a guest: `-m "not e2e"` leaves
    it out, whether or not its file remembered the marker."""
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def work_dir():
    """A scratch directory the postgres user can reach (pytest's tmp dirs are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="nova-async-test-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
async def pg_cluster(work_dir):
    if os.environ.get("NOVA_ASYNC_TEST_DSN"):
        yield os.environ["NOVA_ASYNC_TEST_DSN"].rsplit("/", 1)[0]
        return
    # Thrown away after the run. No autovacuum: a worker on the template makes every CREATE
    # DATABASE wait for it to leave, and on a database a test throws away within seconds it
    # only costs CPU (measured: 0.57 -> 0.13 s of wall time per test's three databases).
    pg = EmbeddedPostgres(work_dir, durable=False, settings={"autovacuum": "off"})
    await pg.start()
    try:
        yield f"postgresql://nova@/{{db}}?host={pg.socket_dir}"
    finally:
        await pg.stop()


def dsn_for(cluster: str, name: str) -> str:
    return cluster.replace("{db}", name)


@pytest.fixture(scope="session")
async def template_db(pg_cluster):
    # Named per process: with NOVA_ASYNC_TEST_DSN every worker shares one server.
    template = f"nova_template_{os.getpid()}"
    conn = await asyncpg.connect(dsn_for(pg_cluster, "postgres"))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{template}"')
        await conn.execute(f'CREATE DATABASE "{template}"')
    finally:
        await conn.close()
    conn = await asyncpg.connect(dsn_for(pg_cluster, template))
    try:
        await migrate(conn)
    finally:
        await conn.close()
    # Nobody connects to it from now on, autovacuum included (as to template0), on any server.
    conn = await asyncpg.connect(dsn_for(pg_cluster, "postgres"))
    try:
        await conn.execute(f'ALTER DATABASE "{template}" WITH ALLOW_CONNECTIONS false')
    finally:
        await conn.close()
    yield template
    conn = await asyncpg.connect(dsn_for(pg_cluster, "postgres"))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture
async def database(pg_cluster, template_db):
    """A DSN to a fresh, migrated database of its own."""
    name = f"test_{os.getpid()}_{next(_counter)}"
    # The API database and its two cells' (cells v2: <db>_cell0, <db>_cell1), all clones.
    names = [name, f"{name}_cell0", f"{name}_cell1"]
    admin = await asyncpg.connect(dsn_for(pg_cluster, "postgres"))
    try:
        for each in names:
            await admin.execute(f'CREATE DATABASE "{each}" TEMPLATE "{template_db}"')
    finally:
        await admin.close()
    yield dsn_for(pg_cluster, name)
    admin = await asyncpg.connect(dsn_for(pg_cluster, "postgres"))
    try:
        for each in names:
            await admin.execute(f'DROP DATABASE IF EXISTS "{each}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
async def pool(database):
    async with open_pool(database, min_size=1, max_size=10) as p:
        remember_dsn(p, database)
        yield p


@pytest.fixture
async def cell1(database):
    """The default cell's database beside the test's API database (where instances live)."""
    async with open_pool(f"{database.split('?')[0]}_cell1" + (f"?{database.split('?', 1)[1]}" if "?" in database else ""),
                         min_size=1, max_size=5) as p:
        yield p


def _libvirt_timer(task: asyncio.Task) -> bool:
    """libvirtaio runs libvirt's timers (keepalives, event queues) as tasks for the process."""
    return getattr(task.get_coro(), "__qualname__", "").startswith("TimeoutCallback.")


@pytest.fixture(autouse=True)
async def no_leaked_tasks():
    """Fail a test that leaves tasks running behind it."""
    before = set(asyncio.all_tasks())
    yield
    await asyncio.sleep(0)
    leaked = [t for t in asyncio.all_tasks() - before if not t.done() and t is not asyncio.current_task()
              and not _libvirt_timer(t)]
    if leaked:
        for t in leaked:
            t.cancel()
        pytest.fail(f"test leaked tasks: {[t.get_name() for t in leaked]}")
