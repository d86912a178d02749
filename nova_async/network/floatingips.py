"""Floating IPs: an address of an external network, NATted by a router to a guest's fixed IP.

The address is held by a port on the external network (device_owner network:floatingip),
so no guest, router gateway or other floating IP can get it. Associating needs a router
with a gateway on that external network and an interface on the subnet of the fixed IP
(Neutron's ExternalGatewayForFloatingIPNotFound otherwise); the router is found, and held
(FOR SHARE), in the same transaction that records the association. A fixed IP has at most
one floating IP per external network (a unique index backs the check). When the guest's
port goes, the foreign key and sql/functions/floatingip_disassociated.sql leave the
floating IP unassociated and DOWN. A floating IP is visible to its own project only.
Once an association, disassociation or delete is committed, the servers it touched get
their addresses recomputed (instance_addresses.py), as Nova's network-changed event does."""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.cells import Cells
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.network import instance_addresses, ipam, networks, ports, quotas

Q = queries("l3")
NQ = queries("network")

Db = Pool | asyncpg.Connection


@dataclass(frozen=True)
class FloatingIpFilters:
    ids: list[str] | None = None
    addresses: list[str] | None = None
    network_ids: list[str] | None = None
    port_ids: list[str] | None = None
    router_ids: list[str] | None = None
    statuses: list[str] | None = None
    project_ids: list[str] | None = None
    fixed_addresses: list[str] | None = None


def not_found(fip_id: str) -> errors.NotFound:
    return errors.NotFound(f"Floating IP {fip_id} could not be found", code="floatingip_not_found")


def bad_request(message: str) -> errors.InvalidInput:
    return errors.InvalidInput(f"Bad floatingip request: {message}", code="bad_request")


def _uuids(values: list[str] | None) -> list[str] | None:
    return None if values is None else [i for i in map(parse_uuid, values) if i]


def _addresses(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    out = []
    for v in values:
        try:
            out.append(str(ipaddress.ip_address(v)))
        except ValueError:
            continue  # matches nothing, like any other unknown value
    return out


async def get_floatingip(db: Db, ctx: RequestContext, fip_id: str) -> asyncpg.Record:
    canonical = parse_uuid(fip_id)
    row = await db.fetchrow(Q.get_floatingip, canonical) if canonical else None
    if row is None or not ctx.can_see(row["project_id"]):
        raise not_found(fip_id)
    return row


async def list_floatingips(db: Db, ctx: RequestContext, f: FloatingIpFilters) -> list[asyncpg.Record]:
    return await db.fetch(Q.list_floatingips, ctx.is_admin, ctx.project_id, _uuids(f.ids), _addresses(f.addresses),
                          _uuids(f.network_ids), _uuids(f.port_ids), _uuids(f.router_ids), f.statuses,
                          f.project_ids, _addresses(f.fixed_addresses))


async def create_floatingip(pool: Pool, ctx: RequestContext, body: dict[str, Any]) -> asyncpg.Record:
    if "floating_ip_address" in body and not ctx.is_admin:
        raise errors.Forbidden("(rule:create_floatingip:floating_ip_address is disallowed by policy)")
    project = networks.owner_project(ctx, body)
    fip_id = str(uuid.uuid4())
    async with pool.acquire() as conn, conn.transaction():
        net = await networks.get_network(conn, ctx, body["floating_network_id"])
        if not net["external"]:
            raise bad_request(f"Network {body['floating_network_id']} is not a valid external network.")
        await quotas.reserve(conn, project, "floatingip")
        subnet = await _floating_subnet(conn, net, body)
        locked = await ipam.lock_subnets(conn, [subnet["id"]])
        port = await ports.make_port(conn, ports.NewPort(
            network=net, project_id="", subnets=[(locked[str(subnet["id"])], body.get("floating_ip_address"))],
            device_id=fip_id, device_owner=ports.FLOATINGIP))
        address = (await conn.fetchrow(NQ.port_ips, [port["id"]]))["ip_address"]
        await conn.execute(Q.insert_floatingip, fip_id, project, body.get("description", ""), net["id"],
                           port["id"], ipam.host(address))
        if body.get("port_id"):
            await _associate(conn, ctx, await conn.fetchrow(Q.lock_floatingip, fip_id), body)
        return await conn.fetchrow(Q.get_floatingip, fip_id)


async def _floating_subnet(conn: asyncpg.Connection, net: asyncpg.Record, body: dict[str, Any]) -> asyncpg.Record:
    """The subnet the address comes from: the one asked for, the one holding the address
    asked for, or the network's first IPv4 subnet."""
    candidates = [s for s in await conn.fetch(NQ.network_subnets, net["id"]) if s["ip_version"] == 4]
    if body.get("subnet_id"):
        candidates = [s for s in candidates if str(s["id"]) == parse_uuid(body["subnet_id"])]
        if not candidates:
            raise bad_request(f"Subnet {body['subnet_id']} is not an IPv4 subnet of network {net['id']}.")
    if body.get("floating_ip_address"):
        wanted = body["floating_ip_address"]
        for s in candidates:
            try:
                ipam.parse_address(wanted, s["cidr"], "floating_ip_address")
                return s
            except errors.InvalidInput:
                continue
        raise errors.InvalidInput(f"IP address {wanted} is not a valid IP for any of the subnets on the specified "
                                  "network.", code="invalid_ip_for_network")
    if not candidates:
        raise bad_request(f"Network {net['id']} has no IPv4 subnet to take a floating IP from.")
    return candidates[0]


async def update_floatingip(pool: Pool, cells: Cells, ctx: RequestContext, fip_id: str,
                            body: dict[str, Any]) -> asyncpg.Record:
    async with pool.acquire() as conn, conn.transaction():
        row = await get_floatingip(conn, ctx, fip_id)
        locked = await conn.fetchrow(Q.lock_floatingip, row["id"])
        if locked is None:
            raise not_found(fip_id)
        before = await conn.fetchrow(Q.get_floatingip, locked["id"])
        if "description" in body:
            await conn.execute(Q.describe_floatingip, locked["id"], body["description"])
        if "port_id" in body:
            if body["port_id"]:
                await _associate(conn, ctx, locked, body)
            else:
                await conn.execute(Q.associate_floatingip, locked["id"], None, None, None)
        elif "fixed_ip_address" in body:
            if locked["port_id"] is None:
                raise bad_request("fixed_ip_address cannot be given without a port_id.")
            await _associate(conn, ctx, locked, {**body, "port_id": str(locked["port_id"])})
        after = await conn.fetchrow(Q.get_floatingip, locked["id"])
    # committed: the servers it left and joined show it (or not) in their addresses
    await instance_addresses.refresh(pool, cells, _devices(before, after))
    return after


def _devices(*rows: asyncpg.Record) -> set[str]:
    """The instances (device ids) of the ports the floating IP rows are associated with."""
    return {r["port_device_id"] for r in rows if r["port_device_id"]}


async def _associate(conn: asyncpg.Connection, ctx: RequestContext, fip: asyncpg.Record, body: dict[str, Any]) -> None:
    port = await ports.get_port(conn, ctx, body["port_id"])
    if not ctx.is_admin and port["project_id"] != fip["project_id"]:
        raise bad_request(f"Cannot associate floating IP {fip['floating_ip_address']} ({fip['id']}) with port "
                          f"{port['id']}: the port belongs to another project.")
    if port["device_owner"].startswith("network:"):
        raise bad_request(f"Port {port['id']} has owner {port['device_owner']} and therefore cannot be associated "
                          "with a floating IP.")
    fixed = [r for r in await conn.fetch(NQ.port_ips, [port["id"]]) if r["ip_address"].version == 4]
    wanted = body.get("fixed_ip_address")
    if wanted is not None:
        fixed = [r for r in fixed if ipam.host(r["ip_address"]) == wanted]
        if not fixed:
            raise bad_request(f"Port {port['id']} does not have fixed ip {wanted}.")
    elif not fixed:
        raise bad_request(f"Cannot add floating IP to port {port['id']} that has no fixed IPv4 addresses.")
    elif len(fixed) > 1:
        raise bad_request(f"Port {port['id']} has multiple fixed IPv4 addresses. Must provide a specific IPv4 "
                          "address when assigning a floating IP.")
    chosen = fixed[0]
    router_id = await conn.fetchval(Q.gateway_router_for, fip["floating_network_id"], chosen["subnet_id"])
    if router_id is not None:
        # Asked again now that the router is held: this statement's snapshot is newer than the
        # lock, so an interface or gateway removed while we waited for it is seen gone.
        router_id = await conn.fetchval(Q.gateway_router_for, fip["floating_network_id"], chosen["subnet_id"])
    if router_id is None:
        raise errors.NotFound(f"External network {fip['floating_network_id']} is not reachable from subnet "
                              f"{chosen['subnet_id']}. Therefore, cannot associate Port {port['id']} with a "
                              "Floating IP.", code="external_gateway_not_found")
    address = ipam.host(chosen["ip_address"])
    try:
        await conn.execute(Q.associate_floatingip, fip["id"], port["id"], address, router_id)
    except asyncpg.ForeignKeyViolationError:  # the port was deleted since we read it
        raise ports.not_found(str(port["id"])) from None
    except asyncpg.UniqueViolationError:  # floatingips_one_per_fixed_ip
        raise errors.Conflict(f"Cannot associate floating IP {fip['floating_ip_address']} ({fip['id']}) with port "
                              f"{port['id']} using fixed IP {address}, as that fixed IP already has a floating IP "
                              f"on external network {fip['floating_network_id']}.",
                              code="floatingip_port_already_associated") from None


async def delete_floatingip(pool: Pool, cells: Cells, ctx: RequestContext, fip_id: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        row = await get_floatingip(conn, ctx, fip_id)
        locked = await conn.fetchrow(Q.lock_floatingip, row["id"])
        if locked is None:
            raise not_found(fip_id)
        row = await conn.fetchrow(Q.get_floatingip, locked["id"])
        await conn.execute(Q.delete_floatingip, row["id"])
        await conn.execute(NQ.delete_port, row["floating_port_id"])
    await instance_addresses.refresh(pool, cells, _devices(row))
