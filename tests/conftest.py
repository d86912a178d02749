"""Fixtures every test layer shares: one real PostgreSQL cluster per test process (each
pytest-xdist worker has its own), a migrated template database built once in it, and a fresh
database per test cloned from it."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import asyncpg
import libvirt
import pytest

from nova_async.db import pool_order
from nova_async.db.embedded import EmbeddedPostgres
from nova_async.db.migrate import migrate
from nova_async.db.pool import open_pool
from tests.harness import remember_dsn

# A connection taken out of order (db/pool_order.py) fails the test that does it, here and in
# every `nova-async` the tests start.
os.environ["NOVA_ASYNC_POOL_ORDER"] = "strict"

_counter = itertools.count(1)
E2E = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/e2e starts `nova-async serve` or a guest: `-m "not e2e"` leaves
    it out, whether or not its file remembered the marker. Tests marked `long` go first."""
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.e2e)
    # The workers take tests in this order: the longest first, while the short ones fill in.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def scratch_root() -> str | None:
    """Where scratch directories go: /dev/shm when it is a memory file system with room that
    programs may run from, else the usual temp directory. A test database's CREATE and DROP
    make and remove ~500 files: 0.17 s each on this machine's ext4 (mounted with `discard`),
    0.02 s on tmpfs."""
    try:
        shm = os.statvfs("/dev/shm")
    except OSError:
        return None
    if shm.f_flag & os.ST_NOEXEC or shm.f_flag & os.ST_RDONLY or shm.f_bavail * shm.f_frsize < 4 << 30:
        return None
    return "/dev/shm"


SCRATCH_PREFIX = "nova-async-test-"


def remove_domains(uri: str, whose: Callable[[str], bool]) -> list[str]:
    """Destroy and undefine the domains whose XML `whose` accepts; their names. Nothing when
    no libvirt daemon answers (then none of ours can be defined either)."""
    try:
        conn = libvirt.open(uri)
    except libvirt.libvirtError:
        return []
    removed = []
    try:
        for dom in conn.listAllDomains():
            try:
                if not whose(dom.XMLDesc(0)):
                    continue
                if dom.isActive():
                    dom.destroy()
                dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE)
            except libvirt.libvirtError as exc:
                # The list is every test's and every worker's: a domain may be undefined by
                # another between the listing and the look (a failed run's, or ours meanwhile).
                if exc.get_error_code() != libvirt.VIR_ERR_NO_DOMAIN:
                    raise
                continue
            removed.append(dom.name())
    finally:
        conn.close()
    return removed


def remove_guests_of_ended_runs(uri: str = "qemu:///system") -> list[str]:
    """The domains whose files are all under scratch directories that are gone (a run's, which
    has ended) removed: a test cut off with libvirtd down (killed under it) could not remove
    its guests itself. A run still going has its directory, and nothing outside a test
    scratch directory is looked at."""
    def of_ended_runs(xml: str) -> bool:
        dirs = set(re.findall(rf"(/[^'\"<>]*?/{SCRATCH_PREFIX}[^/'\"<>]+)/", xml))
        return bool(dirs) and not any(Path(d).exists() for d in dirs)
    return remove_domains(uri, of_ended_runs)


@pytest.fixture(scope="session")
def work_dir():
    """A scratch directory the postgres user can reach (pytest's tmp dirs are 0700). Guests an
    earlier run left behind go first (remove_guests_of_ended_runs)."""
    remove_guests_of_ended_runs()
    path = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=scratch_root()))
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
    # Its WAL is kept small, as it lives in memory: every test's database copies ~30 MB in.
    pg = EmbeddedPostgres(work_dir, durable=False, settings={"autovacuum": "off", "max_wal_size": "128MB"})
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


class Databases:
    """Fresh databases for tests, made ahead and dropped behind by two tasks of their own, so
    that a test's three CREATE DATABASE and three DROP (~0.06 s on tmpfs, ~0.5 s on this
    machine's disk) overlap the tests before and after it instead of adding to them."""

    AHEAD = 2

    def __init__(self, cluster: str, template: str) -> None:
        self._cluster = cluster
        self._template = template
        self._ready: asyncio.Queue[str] = asyncio.Queue(maxsize=self.AHEAD)
        self._trash: asyncio.Queue[str] = asyncio.Queue()
        self._maker = asyncio.create_task(self._make(), name="tests:databases-ahead")
        self._dropper = asyncio.create_task(self._drop(), name="tests:databases-behind")

    @staticmethod
    def _names(name: str) -> list[str]:
        # The API database and its two cells' (cells v2: <db>_cell0, <db>_cell1), all clones.
        return [name, f"{name}_cell0", f"{name}_cell1"]

    async def _make(self) -> None:
        admin = await asyncpg.connect(dsn_for(self._cluster, "postgres"))
        try:
            while True:
                name = f"test_{os.getpid()}_{next(_counter)}"
                for each in self._names(name):
                    # FILE_COPY copies the template's files; the default (WAL_LOG) writes each of
                    # its ~10 MB through the WAL and shared buffers: 20-30 ms of the server's CPU
                    # per database against 11-13, and a drop costs twice as much after it.
                    await admin.execute(f'CREATE DATABASE "{each}" TEMPLATE "{self._template}" STRATEGY FILE_COPY')
                await self._ready.put(name)
        finally:
            await admin.close()

    async def _drop(self) -> None:
        admin = await asyncpg.connect(dsn_for(self._cluster, "postgres"))
        try:
            while True:
                name = await self._trash.get()
                for each in self._names(name):
                    await admin.execute(f'DROP DATABASE IF EXISTS "{each}" WITH (FORCE)')
                self._trash.task_done()
        finally:
            await admin.close()

    async def take(self) -> str:
        """The next fresh database's name (the maker's error, should it have failed)."""
        taking = asyncio.ensure_future(self._ready.get())
        await asyncio.wait([taking, self._maker], return_when=asyncio.FIRST_COMPLETED)
        if not taking.done():
            taking.cancel()
            self._maker.result()
        return taking.result()

    def discard(self, name: str) -> None:
        self._trash.put_nowait(name)

    async def close(self) -> None:
        """Stop making; drop what was discarded and what was made ahead."""
        self._maker.cancel()
        await asyncio.gather(self._maker, return_exceptions=True)
        while not self._ready.empty():
            self.discard(self._ready.get_nowait())
        emptied = asyncio.ensure_future(self._trash.join())
        await asyncio.wait([emptied, self._dropper], return_when=asyncio.FIRST_COMPLETED)
        for task in (emptied, self._dropper):
            task.cancel()
        await asyncio.gather(emptied, self._dropper, return_exceptions=True)


@pytest.fixture(scope="session")
async def databases(pg_cluster, template_db):
    factory = Databases(pg_cluster, template_db)
    try:
        yield factory
    finally:
        await factory.close()


@pytest.fixture
async def database(pg_cluster, databases):
    """A DSN to a fresh, migrated database of its own (with its cells' beside it)."""
    name = await databases.take()
    yield dsn_for(pg_cluster, name)
    databases.discard(name)


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


@pytest.fixture(autouse=True)
def connections_taken_in_order():
    """Fail a test during which any task, the service's background ones too, took a database
    connection out of order (db/pool_order.py): an error there may never reach the test."""
    pool_order.seen.clear()
    yield
    if pool_order.seen:
        found, pool_order.seen[:] = list(pool_order.seen), []
        pytest.fail("connections taken out of order:\n" + "\n".join(found))
