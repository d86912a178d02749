"""Quotas: how much a project may have, and how much it has, counted from what exists.

Limits are the `[quota]` defaults, overridden for every project by the default quota class
(`os-quota-class-sets`, table quota_class_limits) and per project by an admin
(`os-quota-sets`, table quota_limits). Usage is counted from the instances each time it is needed, in every
cell at once, as Nova's counting quotas do: there is no usage table that a crash could leave
wrong.

A boot that counts checks and writes under its project's counting lock (PostgreSQL advisory
locks held to the end of the API database's transaction): count, decide how many of the
requested servers fit, insert them into their cell, count again, and only then commit and let
go of the lock. Fifty concurrent requests against a quota of ten thus get exactly ten servers
between them, and the recount catches any writer that did not take the lock. A server moving
between cells is copied before it is deleted, so a count can only see it twice, never miss it.

That lock caps how many boots one project gets accepted per second, so it is held for as few
round trips as can be, and only when there is something to count: every boot holds the
project's quota lock shared (a quota update takes it exclusively, so it waits for the boots in
flight), reads the limits under it, and takes the counting lock only when something it adds to
is limited (sql/functions/quota_lock_for_boot.sql). Boots of a project without limits are accepted side by side.

A resize to a bigger flavor adds to cores and ram too, so it takes the same locks a boot
takes (`growing`) and records its migration before letting go of them. A moving server
counts once, with the larger of its old and new flavor until the move is confirmed or
reverted (sql/functions/project_usage.sql): the room its growth was granted stays taken."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg

from nova_async.common import errors
from nova_async.config import QuotaSettings
from nova_async.db.cells import Cell, Cells
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("quotas")

RESOURCES = ("instances", "cores", "ram", "metadata_items", "key_pairs", "server_groups",
             "server_group_members")
# Shown to clients of older microversions, enforced by nothing here: personality files went
# away at 2.57, the nova-network resources at 2.36.
FILES = {"injected_files": 5, "injected_file_content_bytes": 10240, "injected_file_path_bytes": 255}
NETWORK = {"floating_ips": -1, "fixed_ips": -1, "security_groups": -1, "security_group_rules": -1}


class QuotaExceeded(errors.Forbidden):
    code = "quota_exceeded"


async def limits(db: Pool | asyncpg.Connection, defaults: QuotaSettings,
                 project_id: str) -> dict[str, int]:
    return _with_defaults(_own(await db.fetch(Q.limits, project_id)), defaults)


async def lock_for_boot(conn: asyncpg.Connection, defaults: QuotaSettings, project_id: str,
                        each: dict[str, int]) -> tuple[dict[str, int], bool]:
    """The locks a boot adding `each` per server needs, and the limits read under them, in one
    round trip: (limits, whether the boot must count)."""
    adds = [res for res, amount in each.items() if amount > 0]
    row = await conn.fetchrow(Q.lock_for_boot, project_id, adds, [getattr(defaults, res) for res in adds])
    return _with_defaults(row["limits"], defaults), row["counting"]


async def lock_to_count(conn: asyncpg.Connection, defaults: QuotaSettings, project_id: str,
                        resource: str) -> tuple[dict[str, int], bool]:
    """The locks a request adding to `resource` alone (a server group) needs, and the limits
    read under them: the quota lock shared, as a boot holds it, and, when `resource` is
    limited, its own counting lock, so that it neither waits for boots nor makes them wait."""
    row = await conn.fetchrow(Q.lock_to_count, project_id, resource, getattr(defaults, resource))
    return _with_defaults(row["limits"], defaults), row["counting"]


@dataclass(frozen=True)
class Room:
    """A project's limits as read under its quota locks, for a change that grows its usage."""

    limit: dict[str, int]
    counting: bool          # something the change may add to is limited: the counting lock is held
    used: dict[str, int]    # counted under that lock (nothing when not counting)

    def check(self, growth: dict[str, int]) -> None:
        """QuotaExceeded unless what the project uses leaves room for `growth`."""
        if self.counting and any(amount > 0 for amount in growth.values()):
            how_many_fit(self.limit, self.used, growth, 1, 1)


@contextlib.asynccontextmanager
async def growing(pool: Pool, cells: Cells, defaults: QuotaSettings, project_id: str,
                  adds: tuple[str, ...] = ("cores", "ram")) -> AsyncIterator[Room]:
    """The project's quota locks, taken as a boot adding to `adds` takes them, held while the
    block checks its growth (`Room.check`) and writes what takes that room. The block's writes
    must commit before it ends: the locks go only then, and the next count must see them.
    The usage is counted here, before the block takes a cell's connection (db/pool_order.py):
    under the lock it can only shrink meanwhile (a delete), so the check errs on the safe side."""
    async with pool.acquire() as conn, conn.transaction():
        limit, counting = await lock_for_boot(conn, defaults, project_id, dict.fromkeys(adds, 1))
        yield Room(limit, counting, await usage(cells, project_id) if counting else total())


def _own(rows: list[asyncpg.Record]) -> dict[str, int]:
    """A project's own limits, from (resource, hard_limit) rows."""
    return {r["resource"]: r["hard_limit"] for r in rows}


def _with_defaults(own: dict[str, int], defaults: QuotaSettings) -> dict[str, int]:
    """Every limit: the project's own where it has one, else the configured default."""
    return {res: own.get(res, getattr(defaults, res)) for res in RESOURCES}


async def usage(cells: Cells, project_id: str, *, skip: Cell | None = None) -> dict[str, int]:
    """What the project's instances in every cell (but `skip`) use of each counted resource;
    key pairs (a user's) and server groups (see _with_groups) are not counted here."""
    async def count(cell: Cell) -> asyncpg.Record | None:
        return None if cell is skip else await cell.pool.fetchrow(Q.instance_usage, project_id)
    return total(*(usage_of(r) for r in await cells.each(count) if r is not None))


def usage_of(row: asyncpg.Record) -> dict[str, int]:
    counted = {"instances": row["instances"], "cores": row["cores"], "ram": row["ram"]}
    return {res: int(counted.get(res, 0)) for res in RESOURCES}


def total(*usages: dict[str, int]) -> dict[str, int]:
    return {res: sum(u[res] for u in usages) for res in RESOURCES}


def plus(used: dict[str, int], each: dict[str, int], count: int) -> dict[str, int]:
    """Usage after `count` more of `each`."""
    return {res: n + each.get(res, 0) * count for res, n in used.items()}


def how_many_fit(limit: dict[str, int], used: dict[str, int], each: dict[str, int],
                 min_count: int, max_count: int) -> int:
    """How many servers (at most max_count) fit when each needs `each`; QuotaExceeded naming
    the first resource that cannot take even min_count."""
    fits = max_count
    for res, amount in each.items():
        if limit[res] < 0 or amount <= 0:
            continue
        room = max(0, limit[res] - used[res]) // amount
        if room < min_count:
            raise QuotaExceeded(f"Quota exceeded for {res}: Requested {amount * min_count}, but already "
                                f"used {used[res]} of {limit[res]} {res}")
        fits = min(fits, room)
    return fits


def check_within(limit: dict[str, int], used: dict[str, int]) -> None:
    for res in ("instances", "cores", "ram"):
        if 0 <= limit[res] < used[res]:
            raise QuotaExceeded(f"Quota exceeded for {res}: {used[res]} would be used of {limit[res]} {res}")


def check_metadata(limit: dict[str, int], metadata: dict) -> None:
    allowed = limit["metadata_items"]
    if 0 <= allowed < len(metadata):
        raise QuotaExceeded(f"Maximum number of metadata items exceeds {allowed}")


async def lock_project(conn: asyncpg.Connection, project_id: str) -> None:
    await conn.execute(Q.lock_project, project_id)


async def set_limits(pool: Pool, cells: Cells, defaults: QuotaSettings, project_id: str,
                     changes: dict[str, int], *, force: bool) -> dict[str, int]:
    """An admin's new limits for the project (`os-quota-sets`), under its quota lock held
    exclusively; unless `force`, none below what the project uses already (400). Fields
    nova-async does not enforce (an old client's) are skipped. The limits afterwards."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_project(conn, project_id)
        used = await _with_groups(conn, project_id, await usage(cells, project_id))
        for resource, value in changes.items():
            if resource not in RESOURCES:
                continue  # an old client's field nova-async does not enforce
            if not force and 0 <= value < used[resource]:
                raise errors.InvalidInput(f"Quota limit {value} for {resource} must be greater than or "
                                          f"equal to already used and reserved {used[resource]}.")
            await conn.execute(Q.set_limit, project_id, resource, value)
        return await limits(conn, defaults, project_id)


async def clear_limits(pool: Pool, project_id: str) -> None:
    """Back to the `[quota]` defaults for the project."""
    await pool.execute(Q.clear_limits, project_id)


async def limits_and_usage(pool: Pool, cells: Cells, defaults: QuotaSettings,
                           project_id: str) -> tuple[dict[str, int], dict[str, int]]:
    """(the project's limits, what it uses now), as `os-quota-sets/detail` and `limits` show them."""
    return await limits(pool, defaults, project_id), await _with_groups(pool, project_id,
                                                                        await usage(cells, project_id))


async def _with_groups(db: Pool | asyncpg.Connection, project_id: str, used: dict[str, int]) -> dict[str, int]:
    """`used` with the project's server groups, which live in the API database (a boot's count
    needs none of them, so `usage` leaves them out)."""
    return {**used, "server_groups": int(await db.fetchval(Q.server_groups_in_use, project_id))}


async def class_limits(pool: Pool, defaults: QuotaSettings, class_name: str) -> dict[str, int]:
    """A quota class's limits, the `[quota]` settings where it has none (every class shows
    them; only "default" applies to projects), and the older microversions' personality-file
    and nova-network values it keeps and shows but nothing enforces."""
    own = _own(await pool.fetch(Q.class_limits, class_name))
    return {**_with_defaults(own, defaults), **{res: own.get(res, v) for res, v in {**FILES, **NETWORK}.items()}}


async def default_limits(pool: Pool, defaults: QuotaSettings) -> dict[str, int]:
    """What a project without limits of its own gets."""
    return _with_defaults(_own(await pool.fetch(Q.class_limits, "default")), defaults)


async def set_class_limits(pool: Pool, defaults: QuotaSettings, class_name: str,
                           changes: dict[str, int]) -> dict[str, int]:
    """An admin's limits for a quota class, each kept (the unenforced older ones too, as Nova
    keeps them). Projects under the changed defaults are not recounted (Nova does not either)."""
    async with pool.acquire() as conn, conn.transaction():
        for resource, value in changes.items():
            await conn.execute(Q.set_class_limit, class_name, resource, value)
    return await class_limits(pool, defaults, class_name)
