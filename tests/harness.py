"""Run a chosen set of roles in this test's event loop, with the real HTTP stack in front.

    async with running(pool, ["image", "network"], tmp_path) as h:
        resp = await h.http.get("/network/v2.0/networks", headers=h.admin)

Roles talk over a real MemoryBus and the test's own PostgreSQL database; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from nova_async import config
from nova_async.bus.memory import MemoryBus
from nova_async.db.cells import Cells, open_cells
from nova_async.db.pool import Pool
from nova_async.db.session_locks import SessionLocks
from nova_async.hooks import runner as hook_runner
from nova_async.notifications.feed import Feed
from nova_async.role import Deps, Role
from nova_async.service import RoleTasks, _token_key, build_http, role_class
from nova_async.common.tokens import TokenCodec


_DSN: dict[int, str] = {}


def remember_dsn(pool: Pool, dsn: str) -> None:
    """The test's pool fixture says which database a pool is on, for its cells' DSNs."""
    _DSN[id(pool)] = dsn


@dataclasses.dataclass
class Harness:
    http: TestClient
    bus: MemoryBus
    pool: Pool          # the API database
    deps: Deps
    roles: dict[str, Role]
    cells: Cells

    @property
    def cell1(self) -> Pool:
        """The default cell's database: where instances live once booted."""
        return self.cells.default.pool
    # noauth headers: an admin, and plain members of two projects
    admin: dict[str, str] = dataclasses.field(
        default_factory=lambda: {"X-Auth-Token": "admin", "X-Auth-Project-Id": "admin"})
    alice: dict[str, str] = dataclasses.field(default_factory=lambda: {"X-Auth-Token": "alice:proj-a"})
    bob: dict[str, str] = dataclasses.field(default_factory=lambda: {"X-Auth-Token": "bob:proj-b"})


def locks_for(pool: Pool, name: str = "nova-async second copy") -> SessionLocks:
    """Locks of a process of its own on the test's database: what a second copy of a role
    (another `serve` process) holds. Close them to have that process die."""
    return SessionLocks(_DSN[id(pool)], health=pool.health, name=name)


# The bootstrap admin's password in every harness unless a test says otherwise: one
# password for all of a worker's tests, so the identity role hashes it once per worker, not
# once per test (identity/store.py, _BOOTSTRAP_HASHES).
ADMIN_PASSWORD = "harness-admin"


def settings_for(state_dir: Path, **sections: dict[str, Any]) -> config.Settings:
    # libvirt's test driver unless a test asks for more: real guests are the e2e tests' job.
    overrides = {("service", "state_dir"): str(state_dir), ("identity", "auth"): "noauth",
                 ("identity", "admin_password"): ADMIN_PASSWORD, ("compute", "libvirt_uri"): "test:///default"}
    for section, values in sections.items():
        for name, value in values.items():
            overrides[(section, name)] = value
    return config.load(None, overrides)


@contextlib.asynccontextmanager
async def running(pool: Pool, roles: list[str], state_dir: Path,
                  **sections: dict[str, Any]) -> AsyncIterator[Harness]:
    settings = settings_for(state_dir, **sections)
    bus = MemoryBus()
    async with open_cells(pool, _DSN[id(pool)], max_size=10) as cells:
        deps = Deps(settings=settings, pool=pool, bus=bus, tokens=TokenCodec(await _token_key(pool)),
                    cells=cells, hooks=hook_runner.load(settings.hooks.enabled, settings.hooks.post_timeout,
                                                      settings.hooks.pre_timeout),
                    feed=Feed(bus, file=settings.notifications.file),
                    locks=SessionLocks(_DSN[id(pool)], health=pool.health, name="nova-async harness"))
        deps.hooks.follow(deps.feed)
        await deps.locks.open()   # this "process"'s own lock, as service.py takes it at start
        try:
            async with _running(deps, roles) as h:
                yield h
        finally:
            await deps.locks.close()


@contextlib.asynccontextmanager
async def _running(deps: Deps, roles: list[str]) -> AsyncIterator[Harness]:
    built = [role_class(name)(deps) for name in roles]
    client = TestClient(TestServer(build_http(deps.settings, built, deps.tokens, deps.pool.health)))
    up, stop = asyncio.Event(), asyncio.Event()

    async def supervise() -> None:
        # The service's own supervision (service.RoleTasks), in a task of its own: a fixture's
        # set-up and tear-down run in different tasks, and a TaskGroup is left by the task
        # that entered it. A role that fails ends the group, and the test when it leaves.
        async with asyncio.TaskGroup() as tg:
            feed_stop = asyncio.Event()
            if deps.feed is not None:   # as the service runs it
                tg.create_task(deps.feed.run(feed_stop), name="harness:notifications")
            running = RoleTasks(tg, built)
            await running.ready()
            up.set()
            await stop.wait()
            await running.stop(deps.bus, time.monotonic() + 30)
            feed_stop.set()

    await client.start_server()
    owner = asyncio.create_task(supervise(), name="harness:roles")
    try:
        waiting = asyncio.ensure_future(up.wait())
        await asyncio.wait([waiting, owner], timeout=30, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if owner.done():
            owner.result()  # a role that died at start-up fails the test with its error
        if not up.is_set():
            raise TimeoutError("roles did not become ready within 30 s")
        yield Harness(http=client, bus=deps.bus, pool=deps.pool, deps=deps,
                      roles={r.name: r for r in built}, cells=deps.cells)
    finally:
        await client.close()  # HTTP intake first, then the roles, as the service stops
        if up.is_set():
            stop.set()
        else:
            owner.cancel()
        await asyncio.wait([owner])
    owner.result()  # a role that failed while the test ran fails it
