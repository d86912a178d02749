"""Networks: who may see, create, change and delete them.

A project sees its own networks plus shared and external ones; anything else does not
exist for it (404). Only an admin makes shared or external networks, turns either flag
on or off, or creates on behalf of another project; only the owner (or an admin) changes
or deletes one, and never deletes while ports remain (an external network's floating IPs
that nothing uses go with it, as in Neutron; an associated one keeps it in use). As
Neutron: a caller who may see a network but not change it (another project's shared
network) gets 403, one who may not see it 404."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.network import dhcp_ports, ipam, providers, quotas

Q = queries("network")
LQ = queries("l3")

Db = Pool | asyncpg.Connection


@dataclass(frozen=True)
class NetworkFilters:
    ids: list[str] | None = None
    names: list[str] | None = None
    shared: bool | None = None
    project_ids: list[str] | None = None
    admin_state_up: bool | None = None
    external: bool | None = None


def not_found(network_id: str) -> errors.NotFound:
    return errors.NotFound(f"Network {network_id} could not be found.", code="network_not_found")


def may_see(row: asyncpg.Record, ctx: RequestContext) -> bool:
    return ctx.is_admin or row["project_id"] == ctx.project_id or row["shared"] or row["external"]


def owner_project(ctx: RequestContext, body: dict[str, Any]) -> str:
    """The project a new resource belongs to: the caller's, unless an admin names another."""
    named = {body[k] for k in ("project_id", "tenant_id") if body.get(k)}
    if len(named) > 1:
        raise errors.InvalidInput("project_id and tenant_id disagree.")
    project = named.pop() if named else ctx.project_id
    if project != ctx.project_id and not ctx.is_admin:
        raise errors.InvalidInput("Specifying a project_id or tenant_id other than the authenticated "
                                  "project requires admin privileges.")
    return project


async def get_network(db: Db, ctx: RequestContext, network_id: str) -> asyncpg.Record:
    canonical = parse_uuid(network_id)
    row = await db.fetchrow(Q.get_network, canonical) if canonical else None
    if row is None or not may_see(row, ctx):
        raise not_found(network_id)
    return row


def not_allowed(rule: str) -> errors.Forbidden:
    """Neutron's answer when policy refuses an action on something the caller may see."""
    return errors.Forbidden(f"rule:{rule} is disallowed by policy.", code="policy_not_authorized")


def may_change(row: asyncpg.Record, ctx: RequestContext, rule: str) -> None:
    """Owner or admin; the caller has already been shown the network (else it was a 404)."""
    if not (ctx.is_admin or row["project_id"] == ctx.project_id):
        raise not_allowed(rule)


async def create_networks(pool: Pool, ctx: RequestContext, bodies: list[dict[str, Any]],
                          physnets: frozenset[str] = frozenset()) -> list[asyncpg.Record]:
    """One network or a bulk list: all made, or none (one transaction). `physnets`: the
    physical networks a flat network may name (providers.physical_networks)."""
    for body in bodies:
        for flag, label in (("shared", "shared"), ("router:external", "router:external")):
            if body.get(flag) and not ctx.is_admin:
                raise errors.Forbidden(f"Only an admin may create a network with {label} set "
                                       f"(rule:create_network:{label} is disallowed by policy).")
    made = [(owner_project(ctx, body), providers.from_body(ctx, body, physnets)) for body in bodies]
    async with pool.acquire() as conn, conn.transaction():
        await quotas.check_batch(conn, "network", [project for project, _ in made])
        rows = []
        for body, (project, provider) in zip(bodies, made):
            try:
                async with conn.transaction():
                    rows.append(await conn.fetchrow(
                        Q.insert_network, str(uuid.uuid4()), body.get("name", ""), body.get("description", ""),
                        project, body.get("admin_state_up", True), body.get("shared", False),
                        body.get("router:external", False), body.get("mtu", 1500), provider.network_type,
                        provider.physical_network))
            except asyncpg.UniqueViolationError:  # networks_one_flat_per_physnet
                raise providers.flat_in_use(str(provider.physical_network)) from None
        return rows


async def update_network(pool: Pool, ctx: RequestContext, network_id: str, body: dict[str, Any]) -> asyncpg.Record:
    async with pool.acquire() as conn, conn.transaction():
        row = await get_network(conn, ctx, network_id)
        may_change(row, ctx, "update_network")
        for flag in ("shared", "router:external"):
            if flag in body and not ctx.is_admin:
                raise not_allowed(f"update_network:{flag}")
        row = await conn.fetchrow(Q.lock_network, row["id"])
        shared = body.get("shared", row["shared"])
        external = body.get("router:external", row["external"])
        if row["shared"] and not shared and await conn.fetchval(Q.network_has_foreign_ports, row["id"],
                                                                row["project_id"]):
            raise errors.Conflict(f"Unable to reconfigure sharing settings for network {network_id}. "
                                  "Multiple tenants are using it.", code="invalid_shared_setting")
        if row["external"] and not external and await conn.fetchval(Q.network_external_in_use, row["id"]):
            raise errors.Conflict(f"External network {network_id} cannot be updated to be made non-external, "
                                  "since it has existing gateway ports or floating IPs.",
                                  code="external_network_in_use")
        return await conn.fetchrow(
            Q.update_network, row["id"], body.get("name", row["name"]),
            body.get("description", row["description"]), body.get("admin_state_up", row["admin_state_up"]),
            shared, external, body.get("mtu", row["mtu"]))


async def list_networks(db: Db, ctx: RequestContext, f: NetworkFilters) -> list[asyncpg.Record]:
    ids = None if f.ids is None else [i for i in map(parse_uuid, f.ids) if i]
    return await db.fetch(Q.list_networks, ctx.is_admin, ctx.project_id, ids, f.names, f.shared,
                          f.project_ids, f.admin_state_up, f.external)


async def delete_network(pool: Pool, ctx: RequestContext, network_id: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        row = await get_network(conn, ctx, network_id)
        if not (ctx.is_admin or row["project_id"] == ctx.project_id):
            raise errors.Forbidden(f"Only the owner of network {network_id} may delete it.")
        # Subnets before the network: the order allocations take them in (they lock a
        # subnet, then insert a port referencing the network), so the two never deadlock.
        await ipam.lock_subnets(conn, [s["id"] for s in await conn.fetch(Q.network_subnets, row["id"])])
        await conn.fetchrow(Q.lock_network, row["id"])
        await dhcp_ports.release_network(conn, row["id"])
        for fip in await conn.fetch(LQ.delete_unassociated_floatingips, row["id"]):
            await conn.execute(Q.delete_port, fip["floating_port_id"])
        if await conn.fetchval(Q.network_has_ports, row["id"]):
            raise errors.Conflict(f"Unable to complete operation on network {network_id}. There are "
                                  "one or more ports still in use on the network.", code="network_in_use")
        try:
            await conn.execute(Q.delete_network, row["id"])
        except asyncpg.ForeignKeyViolationError:
            raise errors.Conflict(f"Network {network_id} is still in use.", code="network_in_use") from None


async def usable_networks(db: Db, project_id: str) -> list[asyncpg.Record]:
    """Networks an instance of the project may join without naming one: own and shared."""
    return await db.fetch(Q.usable_networks, project_id)
