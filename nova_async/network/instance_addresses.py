"""The floating IPs an instance's ports have, written into its network_info, which is what
the compute API shows as a server's addresses (and what the event stream sends).

Nova learns of a new association from Neutron's `network-changed` event and refreshes its
network info cache from Neutron. Here the network role does that refresh itself once the
association (or disassociation, or the floating IP's delete) is committed: the network
tables are the truth, and `refresh` recomputes every port's `floating_ips` of the instance
from them, so a refresh repeated, or run after several changes, writes the same thing.

The instance row is locked in its cell before the network tables are read: two refreshes
of one instance run one after the other, and the later reads what the later commit left,
so an older answer never overwrites a newer one. Nothing changes (no write, no `server`
event) when the addresses are already right. A refresh a crash (or a lost database) cut off
after the commit is made good by `reconcile`, which the network role runs at start and each
time the database is back."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

import structlog

from nova_async.db.cells import Cells
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

log = structlog.get_logger("network.instance_addresses")
Q = queries("l3")
IQ = queries("instances")


def with_floating_ips(network_info: list[dict[str, Any]], floating: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Each port of `network_info` with the floating IPs `floating` gives it (by port id); a
    port without one has no `floating_ips` key, as compute writes it at build."""
    out = []
    for vif in network_info:
        vif = {k: v for k, v in vif.items() if k != "floating_ips"}
        if addresses := floating.get(vif.get("port_id", "")):
            vif["floating_ips"] = addresses
        out.append(vif)
    return out


async def refresh(pool: Pool, cells: Cells, instance_uuids: set[str]) -> None:
    """Recompute the floating IPs in the network_info of each instance (an unknown or deleted
    one is skipped: a port's device_id may name anything, "vm-1" too)."""
    for instance_uuid in sorted(instance_uuids):
        if not _is_uuid(instance_uuid):
            continue
        cell = await cells.of_instance(instance_uuid)
        if cell is None:
            continue
        # The floating IPs are read once the row is locked, so that of two refreshes the later
        # writes what it read later; the API database's connection comes first (db/pool_order.py).
        async with pool.acquire() as api, cell.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(IQ.get_for_update, instance_uuid)
            if row is None or not row["network_info"]:
                continue
            floating: dict[str, list[str]] = defaultdict(list)
            for r in await api.fetch(Q.instance_floating_ips, instance_uuid):
                floating[str(r["port_id"])].append(r["address"])
            wanted = with_floating_ips(row["network_info"], floating)
            if wanted != row["network_info"]:
                await conn.execute(IQ.replace_network_info, instance_uuid, wanted)
                log.info("floating IPs of the instance's ports refreshed", instance=instance_uuid,
                         floating_ips=sorted(a for addresses in floating.values() for a in addresses))


async def reconcile(pool: Pool, cells: Cells) -> None:
    """Refresh every instance that has a floating IP or shows one."""
    wanted = {r["device_id"] for r in await pool.fetch(Q.devices_with_floating_ips)}
    shown = {str(r["uuid"]) for r in await cells.gather(IQ.showing_floating_ips)}
    await refresh(pool, cells, wanted | shown)


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
