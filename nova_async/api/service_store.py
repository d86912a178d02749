"""Compute services and the hypervisors behind them, apart from their HTTP resources
(handlers/os_services.py, handlers/availability_zones.py): listing them, by zone too, with
whether each is up (seen within `down_time` seconds), and enabling, disabling or forcing
one down; what each hypervisor's instances take (counted in the cells) and which they are."""

from __future__ import annotations

from collections import defaultdict

import asyncpg

from nova_async.common import errors
from nova_async.db.cells import Cells
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.placement.client import PlacementClient

Q = queries("os_services")
COMPUTE = "nova-compute"


async def services(pool: Pool, down_time: int, host: str | None, binary: str | None) -> list[asyncpg.Record]:
    return await pool.fetch(Q.services, down_time, host, binary)


async def get(pool: Pool, down_time: int, service_id: str) -> asyncpg.Record | None:
    return await pool.fetchrow(Q.get_service, service_id, down_time)


async def compute_up(pool: Pool, down_time: int, host: str) -> bool:
    """Whether compute host `host` is up: its service seen within `down_time` seconds and not
    forced down (no service at all: not up)."""
    return bool(await pool.fetchval(Q.compute_up, down_time, host))


async def hypervisors(pool: Pool, down_time: int) -> list[asyncpg.Record]:
    return await pool.fetch(Q.hypervisors, down_time)


async def compute_host_exists(pool: Pool, host: str) -> bool:
    return bool(await pool.fetchval(Q.compute_host_exists, host))


async def usage(cells: Cells) -> dict[str, asyncpg.Record]:
    """What the live instances on each node take, by node name (nodes without any are absent)."""
    return {r["node"]: r for r in await cells.gather(Q.node_usage, cell0=False)}


async def servers_on(cells: Cells, nodes: list[str]) -> dict[str, list[asyncpg.Record]]:
    """The live instances on each of `nodes`, by node name."""
    found: dict[str, list[asyncpg.Record]] = defaultdict(list)
    for row in await cells.gather(Q.node_servers, nodes, cell0=False):
        found[row["node"]].append(row)
    return found


async def host_usage_by_project(cells: Cells, host: str) -> list[asyncpg.Record]:
    """What the live instances on `host` take, per project (a project in two cells: twice)."""
    return await cells.gather(Q.host_usage_by_project, host, cell0=False)


async def update(pool: Pool, down_time: int, *, service_id: str | None = None, host: str | None = None,
                 binary: str | None = None, disabled: bool | None = None, reason: str | None = None,
                 forced_down: bool | None = None) -> asyncpg.Record:
    """Change the service named by id, or by host and binary; None leaves a field as it is."""
    row = await pool.fetchrow(Q.update_service, service_id, down_time, disabled, reason, forced_down, host, binary)
    if row is None:
        what = f"Service {service_id}" if service_id else f"Service {binary} on host {host}"
        raise errors.NotFound(f"{what} could not be found.")
    return row


async def delete(pool: Pool, cells: Cells, placement: PlacementClient, down_time: int,
                 service_id: str) -> asyncpg.Record:
    """Remove a compute service that runs nothing any more: its record, its compute nodes,
    their resource providers and its host's cell mapping (Nova's DELETE /os-services/{id}).
    Refused while it is up (its heartbeat would keep it half there: stop it or force it down
    first), hosts instances, or has a move from or to it unfinished. A conductor's or a
    scheduler's (a process gone for good) is only its record, once it is down."""
    row = await pool.fetchrow(Q.get_service, service_id, down_time)
    if row is None:
        raise errors.NotFound(f"Service {service_id} not found.")
    if row["up"] and not row["forced_down"]:
        raise errors.Conflict(f"Service {service_id} on host {row['host']} is up: stop it (or force it down) "
                              "before deleting it.")
    if row["binary_name"] != COMPUTE:
        # A conductor or scheduler of a process gone for good: only its record (Nova's too).
        gone = await pool.fetchrow(Q.delete_service, service_id)
        if gone is None:
            raise errors.NotFound(f"Service {service_id} not found.")
        return gone
    use = await cells.gather(Q.host_in_use, row["host"], cell0=False)
    if any(r["instances"] for r in use):
        raise errors.Conflict("Unable to delete compute service that is hosting instances. "
                              "Migrate or delete the instances first.")
    if any(r["migrations"] for r in use):
        raise errors.Conflict("Unable to delete compute service that has in-progress migrations. "
                              "Complete the migrations or delete the instances first.")
    # Providers first: placement refuses one that still holds allocations, and then nothing
    # else has changed. Deleting again after a failure half-way finds the ones already gone.
    for node in await pool.fetch(Q.compute_node_uuids, service_id):
        try:
            await placement.delete_provider(str(node["uuid"]))
        except errors.NotFound:
            pass
    gone = await pool.fetchrow(Q.delete_service, service_id)
    if gone is None:
        raise errors.NotFound(f"Service {service_id} not found.")
    return gone


async def zones(pool: Pool, down_time: int) -> dict[str, list[asyncpg.Record]]:
    """The compute services of each availability zone, by zone name."""
    found: dict[str, list[asyncpg.Record]] = {}
    for row in await pool.fetch(Q.zone_services, down_time):
        found.setdefault(row["zone"], []).append(row)
    return found
