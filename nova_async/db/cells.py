"""Cells v2: which database holds what.

The database the service is given is the API database. It maps each cell to a database of
its own (`cell_mappings`), each compute host to its cell (`host_mappings`) and each instance
to the cell that holds it (`instance_mappings`). Instances, with their faults, actions,
migrations and console tokens, live in the cells: cell0 keeps the ones that never got a host,
and a fresh install has one cell for the rest, cell1. Both sit beside the API database on the
same server (`<db>_cell0`, `<db>_cell1`) unless a mapping names another URL.

A boot writes its instances into the default cell. When the scheduler finds no host they move
to cell0, and when it picks a host of another cell they move there; a move copies, re-points
the mapping, then deletes, and `tidy()` finishes any move a crash interrupted.

A boot that fails after its rows reached the cell takes them out again; when it failed
because the database went away, that has to wait for the database: `forget_later()` keeps
them, and `forget_pending()` (run by the API role each time the database is back) takes out
those that no mapping names, at once rather than at tidy()'s first minute."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid as uuidlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.db import pool_order
from nova_async.db.migrate import Gate, Mode, migrate
from nova_async.db.pool import Pool, open_pool
from nova_async.db.queries import queries

log = structlog.get_logger("db.cells")
Q = queries("cells")
BQ = queries("block_devices")

CELL0_UUID = "00000000-0000-0000-0000-000000000000"  # Nova's fixed uuid for cell0
DEFAULT_CELL = "cell1"
# A process's connections to each cell's database at most (see pool.MAX_CONNECTIONS), and to
# cell0's, which holds only the boots that found no host.
CELL_CONNECTIONS = 4
CELL0_CONNECTIONS = 2
T = TypeVar("T")


@dataclass(frozen=True)
class Cell:
    uuid: str
    name: str
    pool: Pool

    @property
    def is_cell0(self) -> bool:
        return self.uuid == CELL0_UUID


def cell_dsn(api_dsn: str, connection: str) -> str:
    """A mapping's database as a DSN: a full URL as it is, a bare name on the API's server."""
    if "://" in connection:
        return connection
    parts = urlsplit(api_dsn)
    return urlunsplit(parts._replace(path="/" + connection))


def api_database_name(api_dsn: str) -> str:
    name = urlsplit(api_dsn).path.lstrip("/")
    if not name:
        raise errors.Unavailable("the database DSN must name its database (postgresql://…/nova)")
    return name


class Cells:
    """The cells of one API database, each with a pool open to its database. A cell created
    while the service runs (`nova-async cell create`) is opened when something names it."""

    def __init__(self, api: Pool, api_dsn: str, stack: contextlib.AsyncExitStack, *,
                 min_size: int, max_size: int, mode: Mode = Mode.ALL, gate: Gate = Gate()) -> None:
        self.api = api
        # How each cell's database is migrated: as the API database was, the services that
        # may hold contracts back read from the API database (cells keep no records).
        self._mode, self._gate = mode, dataclasses.replace(gate, services_db=api)
        self._api_dsn = api_dsn
        self._stack = stack
        self._sizes = {"min_size": min_size, "max_size": max_size}
        self._by_uuid: dict[str, Cell] = {}
        self._hosts: dict[str, Cell] = {}
        self._opening = asyncio.Lock()
        self._unwanted: list[tuple[Cell, list[str]]] = []   # see forget_later

    async def refresh(self) -> None:
        """Open a pool to every mapped cell not opened yet (its database made and migrated)."""
        async with self._opening:
            for row in await self.api.fetch(Q.cells):
                if row["uuid"] in self._by_uuid:
                    continue
                dsn = cell_dsn(self._api_dsn, row["database_connection"])
                await _ensure_database(self.api, dsn)
                sizes: dict = dict(self._sizes, rank=pool_order.COMPUTE_CELL)
                if row["uuid"] == CELL0_UUID:  # failed boots only: a few connections do
                    sizes.update(max_size=min(sizes["max_size"], CELL0_CONNECTIONS), rank=pool_order.CELL0)
                pool = await self._stack.enter_async_context(open_pool(dsn, health=self.api.health, **sizes))
                async with pool.acquire() as conn:
                    await migrate(conn, mode=self._mode, gate=self._gate)
                self._by_uuid[row["uuid"]] = Cell(uuid=row["uuid"], name=row["name"], pool=pool)
            cells = list(self._by_uuid.values())
            self.cell0 = self._by_uuid[CELL0_UUID]
            self.compute_cells = [c for c in cells if not c.is_cell0]
            self.default = next((c for c in self.compute_cells if c.name == DEFAULT_CELL), self.compute_cells[0])

    def all(self) -> list[Cell]:
        return list(self._by_uuid.values())

    async def get(self, cell_uuid: str) -> Cell:
        if cell_uuid not in self._by_uuid:
            await self.refresh()
        return self._by_uuid[cell_uuid]

    def named(self, name: str) -> Cell:
        for cell in self._by_uuid.values():
            if cell.name == name:
                return cell
        raise errors.InvalidInput(f"There is no cell named {name!r} (see cell_mappings).")

    # -- where an instance is

    async def of_instance(self, instance_uuid: str) -> Cell | None:
        cell_uuid = await self.api.fetchval(Q.instance_cell, instance_uuid)
        return await self.get(cell_uuid) if cell_uuid else None

    async def of_instance_with_project(self, instance_uuid: str) -> tuple[Cell, str] | None:
        """The instance's cell and project, as its mapping has them."""
        row = await self.api.fetchrow(Q.instance_cell_and_project, instance_uuid)
        return (await self.get(row["cell_uuid"]), row["project_id"]) if row else None

    async def instance_db(self, instance_uuid: str) -> Pool:
        """The pool of the cell that holds the instance; 404 when no cell does."""
        cell = await self.of_instance(instance_uuid)
        if cell is None:
            raise errors.NotFound(f"Instance {instance_uuid} could not be found.")
        return cell.pool

    async def group_by_cell(self, instance_uuids: list[str]) -> dict[Cell, list[str]]:
        found: dict[Cell, list[str]] = {}
        for row in await self.api.fetch(Q.instance_cells, instance_uuids):
            found.setdefault(await self.get(row["cell_uuid"]), []).append(row["instance_uuid"])
        return found

    async def map_instances(self, conn: asyncpg.Connection, cell: Cell, instance_uuids: list[str],
                            project_id: str, user_id: str) -> None:
        await conn.execute(Q.map_instances, instance_uuids, cell.uuid, project_id, user_id)

    # -- where a host is

    async def of_host(self, host: str) -> Cell | None:
        cell = self._hosts.get(host)
        if cell is None:
            cell_uuid = await self.api.fetchval(Q.host_cell, host)
            if cell_uuid is None:
                return None
            cell = self._hosts[host] = await self.get(cell_uuid)
        return cell

    async def map_host(self, host: str, cell: Cell) -> Cell:
        """Map a compute host to `cell` on its first start; a mapped host keeps its cell."""
        cell_uuid = await self.api.fetchval(Q.map_host, host, cell.uuid) or await self.api.fetchval(Q.host_cell, host)
        mapped = self._hosts[host] = await self.get(cell_uuid)
        return mapped

    # -- every cell at once

    async def each(self, work: Callable[[Cell], Awaitable[T]], *, cell0: bool = True) -> list[T]:
        cells = self.all() if cell0 else self.compute_cells
        if len(cells) == 1:
            return [await work(cells[0])]
        return list(await asyncio.gather(*(work(c) for c in cells)))

    async def gather(self, query: str, *args: Any, cell0: bool = True) -> list[asyncpg.Record]:
        """One query run in every cell concurrently, the rows of all of them together."""
        found = await self.each(lambda c: c.pool.fetch(query, *args), cell0=cell0)
        return [row for rows in found for row in rows]

    # -- moving an instance that has not been built

    async def move(self, instance_uuid: str, source: Cell, target: Cell) -> None:
        """Copy the instance (with its faults, actions, events and block device mappings) into
        `target`, point its mapping there, then delete it from `source`. Safe to repeat after a
        crash."""
        if source is target:
            return
        # The source row stays locked to the end: a change made meanwhile (a delete) waits, then
        # finds the row gone and looks again where the mapping now points.
        # Neither side is an event for the stream (api/event_stream.py): its clients saw the
        # server all along; the copy is the same server, the delete is not its end.
        # The API database's connection is taken first, as everywhere (pool_order.py).
        async with self.api.acquire() as api, source.pool.acquire() as src, src.transaction():
            if await src.fetchval(Q.lock_instance, instance_uuid) is None:
                return
            await src.execute(Q.quiet_events)
            exported = await src.fetchrow(Q.export_instance, instance_uuid)
            mappings = await src.fetchval(BQ.export_of_instance, instance_uuid)
            async with target.pool.acquire() as conn, conn.transaction():
                await conn.execute(Q.quiet_events)
                await conn.execute(Q.drop_instance, instance_uuid)
                await conn.execute(Q.import_instance, exported["instance"], exported["faults"],
                                   exported["actions"], exported["events"])
                if mappings:
                    await conn.execute(BQ.import_rows, mappings)
            await api.execute(Q.remap_instance, instance_uuid, target.uuid)
            await src.execute(Q.drop_instance, instance_uuid)
        log.info("instance moved between cells", instance_uuid=instance_uuid, source=source.name,
                 target=target.name)

    def forget_later(self, cell: Cell, instance_uuids: list[str]) -> None:
        """Rows a failed boot may have left in `cell`, to be taken out once the database is
        back unless a mapping names them (its commit may have gone through unanswered)."""
        self._unwanted.append((cell, instance_uuids))

    async def forget_pending(self) -> None:
        while self._unwanted:
            cell, uuids = self._unwanted[0]
            mapped = {r["instance_uuid"] for r in await self.api.fetch(Q.instance_cells, uuids)}
            unmapped = [u for u in uuids if u not in mapped]
            if unmapped:
                await cell.pool.execute(Q.forget_instances, unmapped)
                log.info("removed the rows of boot requests a database outage failed", cell=cell.name,
                         instances=",".join(unmapped))
            self._unwanted.pop(0)

    async def tidy(self) -> list[str]:
        """Finish what a crash interrupted: an unbuilt instance whose mapping names another
        cell is a copy left by a move (the mapped cell has the real one), and one without a
        mapping a minute after it was written belongs to a boot request that never answered.
        Cells another process created since are opened first, so that lists and counts
        (every cell-wide query) see them from then on. (Not in each(): a boot counts usage
        through it while holding its project's counting lock, and under a burst of boots every
        other API connection is waiting for that lock, so one more would never come and the
        boots would fail at the command timeout.)"""
        await self.refresh()
        removed: list[str] = []
        for cell in self.all():
            rows = await cell.pool.fetch(Q.unsettled_instances)
            if not rows:
                continue
            mapped = {r["instance_uuid"]: r["cell_uuid"]
                      for r in await self.api.fetch(Q.instance_cells, [r["uuid"] for r in rows])}
            stale = [r["uuid"] for r in rows if r["uuid"] not in mapped and r["old"]]
            if stale:
                await cell.pool.execute(Q.forget_instances, stale)
            for uuid in (r["uuid"] for r in rows):
                if uuid in mapped and mapped[uuid] != cell.uuid and await self._drop_copy(uuid, cell):
                    stale.append(uuid)
            if stale:
                log.warning("removed instance rows a crash left in the wrong cell", cell=cell.name,
                            instances=",".join(stale))
                removed += stale
        return removed

    async def _drop_copy(self, instance_uuid: str, cell: Cell) -> bool:
        """Delete `cell`'s copy of an instance mapped to another cell, unless a move is making
        that copy the real one right now: a move holds its source row locked from the copy
        to the delete, so waiting for that lock, then reading the mapping again, tells."""
        source = await self.of_instance(instance_uuid)
        if source is None or source is cell:
            return False
        async with self.api.acquire() as api, source.pool.acquire() as conn, conn.transaction():
            await conn.fetchval(Q.lock_instance, instance_uuid)
            if await api.fetchval(Q.instance_cell, instance_uuid) != source.uuid:
                return False   # the move finished: this copy is the instance now
            async with cell.pool.acquire() as copy, copy.transaction():
                await copy.execute(Q.quiet_events)   # a leftover copy, not the server's end
                await copy.execute(Q.drop_instance, instance_uuid)
        return True


# What moves out of the API database into cell1 on the first start with cells, parents first;
# the ones with a serial id have their sequence caught up after.
_INSTANCE_TABLES = ("instances", "instance_faults", "instance_actions", "instance_action_events",
                    "migrations", "instance_snapshots", "console_auth_tokens")
_SERIAL_TABLES = ("instance_faults", "instance_actions", "instance_action_events", "migrations")
_ADOPTION_LOCK = 0x6E6F7662  # beside migrate's 0x6E6F7661 ("nova")


async def adopt_legacy_instances(cells: Cells) -> int:
    """Instances an install made before it had cells are still in the API database: copy
    them (and everything hanging off them) into the default cell, map them, then delete
    them from the API database. A repeat after a crash starts the copy over. Every process
    calls this at start, so it runs under a lock: without it, one process could delete the
    copies another just made and then find nothing left to copy."""
    async with cells.api.acquire() as conn:
        await conn.execute("SELECT pg_advisory_lock($1)", _ADOPTION_LOCK)
        try:
            return await _adopt(cells, conn)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _ADOPTION_LOCK)


async def _adopt(cells: Cells, api: asyncpg.Connection) -> int:
    legacy = await api.fetch(Q.legacy_instances)
    if not legacy:
        return 0
    target = cells.default
    uuids = [r["uuid"] for r in legacy]
    # Before cells a deleted server kept its group membership (the member list joined the
    # instances to hide it); the cells' member list cannot join, so the rows go now.
    await api.execute(Q.forget_deleted_members)
    async with target.pool.acquire() as conn, conn.transaction():
        await conn.execute(Q.forget_instances, uuids)
        for table in _INSTANCE_TABLES:
            rows = await api.fetchval(Q.export_table.format(table=table))
            if rows:
                await conn.execute(Q.import_table.format(table=table), rows)
        for table in _SERIAL_TABLES:
            await conn.execute(Q.catch_up_sequence.format(table=table))
    await api.execute(Q.adopt_mappings, uuids, [target.uuid] * len(uuids),
                      [r["project_id"] for r in legacy], [r["user_id"] for r in legacy])
    async with api.transaction():
        await api.execute(Q.quiet_events)   # they live on in the cell: not deletes (no one reads them here)
        await api.execute(Q.forget_instances, uuids)
    log.info("instances moved from the API database into their cell", cell=target.name, count=len(uuids))
    return len(uuids)


async def _ensure_database(api: Pool, dsn: str) -> None:
    """Create a cell's database beside the API database when it does not exist yet."""
    try:
        conn = await asyncpg.connect(dsn)
    except asyncpg.InvalidCatalogNameError:
        name = urlsplit(dsn).path.lstrip("/")
        try:
            await api.execute(f'CREATE DATABASE "{name.replace(chr(34), "")}"')
        except asyncpg.DuplicateDatabaseError:
            pass
        except asyncpg.PostgresError as exc:
            raise errors.Unavailable(f"cannot create the cell database {name}: {exc}; create it, or let "
                                     "the database user create databases (CREATEDB)") from exc
        log.info("cell database created", database=name)
        return
    except (OSError, asyncpg.PostgresError) as exc:
        raise errors.Unavailable(f"cannot connect to a cell database: {exc}") from exc
    await conn.close()


@contextlib.asynccontextmanager
async def open_cells(api: Pool, api_dsn: str, *, min_size: int = 1, max_size: int = CELL_CONNECTIONS,
                     mode: Mode = Mode.ALL, gate: Gate = Gate()) -> AsyncIterator[Cells]:
    """The cells of the API database `api`: cell0 and cell1 are made on first start, each
    cell's database is created if missing and migrated, and a pool is opened to each."""
    base = api_database_name(api_dsn)
    await api.execute(Q.ensure_cell, CELL0_UUID, "cell0", f"{base}_cell0")
    await api.execute(Q.ensure_cell, str(uuidlib.uuid4()), DEFAULT_CELL, f"{base}_cell1")
    async with contextlib.AsyncExitStack() as stack:
        cells = Cells(api, api_dsn, stack, min_size=min_size, max_size=max_size, mode=mode, gate=gate)
        await cells.refresh()
        yield cells
