"""Subnets: an address range on a network, with its gateway and allocation pools.

A subnet is visible wherever its network is. Creating one needs the network's owner (or
an admin); its CIDR may not overlap another subnet of the same network, which the
network's row lock keeps true under concurrent creates. Its cidr, version and network
never change; its gateway, pools, name servers and routes may, without taking an address
from a port. A subnet with addresses still handed out cannot be deleted."""

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
from nova_async.network import dhcp_ports, ipam, networks, quotas

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


def _plan(body: dict[str, Any]) -> tuple[ipam.SubnetPlan, list[str], list[dict[str, str]]]:
    """Everything about a new subnet that needs no database: its cidr, gateway and pools,
    name servers and routes, validated."""
    if body.get("subnetpool_id") or body.get("use_default_subnet_pool"):
        raise errors.InvalidInput("Subnet pools are not supported here; give a cidr.")
    if "cidr" not in body:
        raise errors.InvalidInput("Invalid input: a cidr is required to create a subnet.")
    plan = ipam.plan_subnet(body["cidr"], body["ip_version"],
                            body.get("gateway_ip", ipam.DEFAULT_GATEWAY), body.get("allocation_pools"))
    return plan, ipam.check_nameservers(body.get("dns_nameservers", [])), \
        ipam.check_host_routes(body.get("host_routes", []))


async def create_subnets(pool: Pool, ctx: RequestContext, bodies: list[dict[str, Any]]) -> list[asyncpg.Record]:
    """One subnet or a bulk list: all made, or none (one transaction). The networks are
    row-locked in id order before any insert, so two batches never deadlock, and a batch's
    subnets are checked for overlap with each other as with those already there."""
    plans = [_plan(body) for body in bodies]
    projects = [networks.owner_project(ctx, body) for body in bodies]
    async with pool.acquire() as conn, conn.transaction():
        await quotas.check_batch(conn, "subnet", projects)
        nets = {}
        for body in bodies:
            net = await networks.get_network(conn, ctx, body["network_id"])
            if not (ctx.is_admin or net["project_id"] == ctx.project_id):
                raise errors.Forbidden(f"Only the owner of network {body['network_id']} may add subnets to it.")
            nets[body["network_id"]] = net
        for net_id in sorted({str(n["id"]) for n in nets.values()}):
            await conn.fetchrow(Q.lock_network, net_id)
        made = []
        for body, (plan, dns, routes), project in zip(bodies, plans, projects):
            net = nets[body["network_id"]]
            for other in await conn.fetch(Q.network_subnets, net["id"]):
                if other["cidr"].version == plan.cidr.version and other["cidr"].overlaps(plan.cidr):
                    raise errors.InvalidInput(
                        f"Invalid input for operation: Requested subnet with cidr: {plan.cidr} for network: "
                        f"{net['id']} overlaps with another subnet ({other['cidr']}).")
            made.append(await conn.fetchrow(
                Q.insert_subnet, str(uuid.uuid4()), net["id"], project, body.get("name", ""),
                body.get("description", ""), plan.cidr, plan.cidr.version,
                None if plan.gateway is None else str(plan.gateway), plan.pools_json(),
                body.get("enable_dhcp", True), dns, routes))
        return made


async def update_subnet(pool: Pool, ctx: RequestContext, subnet_id: str, body: dict[str, Any]) -> asyncpg.Record:
    """Change what may change of a subnet. Under its row lock (the one allocations take), a new
    gateway may not be another port's address nor lie in a pool, and new pools may not leave
    out an address a port holds from the old ones."""
    async with pool.acquire() as conn, conn.transaction():
        seen = await get_subnet(conn, ctx, subnet_id)
        if not (ctx.is_admin or ctx.project_id in (seen["project_id"], seen["network_project_id"])):
            raise networks.not_allowed("update_subnet")
        row = await conn.fetchrow(Q.lock_subnet, seen["id"])
        net = row["cidr"]
        gateway = ipam.host(row["gateway_ip"]) if row["gateway_ip"] is not None else None
        if "gateway_ip" in body:
            gateway = None if body["gateway_ip"] is None else str(ipam.parse_address(body["gateway_ip"], net,
                                                                                     "gateway_ip"))
        old_pools = [(ipam.ip(p["start"]), ipam.ip(p["end"])) for p in row["allocation_pools"]]
        pools = old_pools
        if "allocation_pools" in body:
            pools = ipam.plan_subnet(str(net), net.version, None, body["allocation_pools"]).pools
        if gateway is not None:
            for a, b in pools:
                if a <= ipam.ip(gateway) <= b:
                    raise errors.Conflict(f"Gateway ip {gateway} conflicts with allocation pool {a}-{b}.",
                                          code="gateway_conflicts_with_pools")
        in_use = await conn.fetch(Q.subnet_allocations, row["id"])
        old_gateway = ipam.host(row["gateway_ip"]) if row["gateway_ip"] is not None else None
        if gateway != old_gateway:
            for a in in_use:
                # A router's interface on the subnet holds its gateway address (as in Neutron).
                routed = a["device_owner"].startswith("network:router_interface")
                if ipam.host(a["ip_address"]) == gateway and not routed:
                    raise errors.Conflict(f"Gateway ip {gateway} is already in use by port {a['port_id']}. "
                                          "Unable to update.", code="gateway_ip_in_use")
                if ipam.host(a["ip_address"]) == old_gateway and routed:
                    raise errors.Conflict(f"Current gateway ip {old_gateway} already in use by port "
                                          f"{a['port_id']}. Unable to update.", code="gateway_ip_in_use")
        for a in in_use:
            addr = ipam.ip(ipam.host(a["ip_address"]))
            if any(s <= addr <= e for s, e in old_pools) and not any(s <= addr <= e for s, e in pools):
                raise errors.Conflict(f"Allocation pools of subnet {subnet_id} would leave out {addr}, which "
                                      f"port {a['port_id']} holds.", code="subnet_in_use")
        return await conn.fetchrow(
            Q.update_subnet, row["id"], body.get("name", row["name"]), body.get("description", row["description"]),
            gateway, [{"start": str(a), "end": str(b)} for a, b in pools],
            body.get("enable_dhcp", row["enable_dhcp"]),
            ipam.check_nameservers(body["dns_nameservers"]) if "dns_nameservers" in body else row["dns_nameservers"],
            ipam.check_host_routes(body["host_routes"]) if "host_routes" in body else row["host_routes"])


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
