"""Subnets: an address range on a network, with its gateway and allocation pools.

A subnet is visible wherever its network is. Creating one needs the network's owner (or
an admin); its CIDR may not overlap another subnet of the same network, which the
network's row lock keeps true under concurrent creates. A subnet with addresses still
handed out cannot be deleted."""

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
from nova_async.network import dhcp_ports, ipam, networks

Q = queries("network")

Db = Pool | asyncpg.Connection


@dataclass(frozen=True)
class SubnetFilters:
    ids: list[str] | None = None
    names: list[str] | None = None
    network_ids: list[str] | None = None
    cidrs: list[str] | None = None
    ip_version: int | None = None
    project_ids: list[str] | None = None


def not_found(subnet_id: str) -> errors.NotFound:
    return errors.NotFound(f"Subnet {subnet_id} could not be found.", code="subnet_not_found")


def _may_see(row: asyncpg.Record, ctx: RequestContext) -> bool:
    return (ctx.is_admin or row["project_id"] == ctx.project_id or row["network_project_id"] == ctx.project_id
            or row["shared"] or row["external"])


async def get_subnet(db: Db, ctx: RequestContext, subnet_id: str) -> asyncpg.Record:
    canonical = parse_uuid(subnet_id)
    row = await db.fetchrow(Q.get_subnet, canonical) if canonical else None
    if row is None or not _may_see(row, ctx):
        raise not_found(subnet_id)
    return row


async def create_subnet(pool: Pool, ctx: RequestContext, body: dict[str, Any]) -> asyncpg.Record:
    if body.get("subnetpool_id") or body.get("use_default_subnet_pool"):
        raise errors.InvalidInput("Subnet pools are not supported here; give a cidr.")
    if "cidr" not in body:
        raise errors.InvalidInput("Invalid input: a cidr is required to create a subnet.")
    plan = ipam.plan_subnet(body["cidr"], body["ip_version"],
                            body.get("gateway_ip", ipam.DEFAULT_GATEWAY), body.get("allocation_pools"))
    dns = ipam.check_nameservers(body.get("dns_nameservers", []))
    routes = ipam.check_host_routes(body.get("host_routes", []))
    project = networks.owner_project(ctx, body)
    async with pool.acquire() as conn, conn.transaction():
        net = await networks.get_network(conn, ctx, body["network_id"])
        if not (ctx.is_admin or net["project_id"] == ctx.project_id):
            raise errors.Forbidden(f"Only the owner of network {body['network_id']} may add subnets to it.")
        await conn.fetchrow(Q.lock_network, net["id"])
        for other in await conn.fetch(Q.network_subnets, net["id"]):
            if other["cidr"].version == plan.cidr.version and other["cidr"].overlaps(plan.cidr):
                raise errors.InvalidInput(
                    f"Invalid input for operation: Requested subnet with cidr: {plan.cidr} for network: "
                    f"{net['id']} overlaps with another subnet ({other['cidr']}).")
        return await conn.fetchrow(
            Q.insert_subnet, str(uuid.uuid4()), net["id"], project, body.get("name", ""),
            body.get("description", ""), plan.cidr, plan.cidr.version,
            None if plan.gateway is None else str(plan.gateway), plan.pools_json(),
            body.get("enable_dhcp", True), dns, routes)


async def list_subnets(db: Db, ctx: RequestContext, f: SubnetFilters) -> list[asyncpg.Record]:
    ids = None if f.ids is None else [i for i in map(parse_uuid, f.ids) if i]
    net_ids = None if f.network_ids is None else [i for i in map(parse_uuid, f.network_ids) if i]
    cidrs = None
    if f.cidrs is not None:
        cidrs = []
        for text in f.cidrs:
            try:
                cidrs.append(ipam.parse_cidr(text, 6 if ":" in text else 4))
            except errors.InvalidInput:
                continue  # matches nothing, like any other unknown value
    return await db.fetch(Q.list_subnets, ctx.is_admin, ctx.project_id, ids, f.names, net_ids,
                          cidrs, f.ip_version, f.project_ids)


async def delete_subnet(pool: Pool, ctx: RequestContext, subnet_id: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        row = await get_subnet(conn, ctx, subnet_id)
        if not (ctx.is_admin or ctx.project_id in (row["project_id"], row["network_project_id"])):
            raise errors.Forbidden(f"Only the owner of subnet {subnet_id} may delete it.")
        await conn.fetchrow(Q.lock_subnet, row["id"])
        await dhcp_ports.release_subnet(conn, row["id"])
        if await conn.fetchval(Q.subnet_in_use, row["id"]):
            raise errors.Conflict(f"Unable to complete operation on subnet {subnet_id}: one or more "
                                  "ports have an IP allocation from this subnet.", code="subnet_in_use")
        await conn.execute(Q.delete_subnet, row["id"])
