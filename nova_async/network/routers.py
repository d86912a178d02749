"""Routers: a project's way out of its networks, as Neutron's L3 API has them.

A router's interfaces and its gateway are ports (device_id = the router's id) whose
addresses come from ip_allocations like any guest's: an interface holds its subnet's
gateway_ip, the gateway an address on a `router:external` network. The data plane makes
them real from those rows; here they are only made, checked and removed (ACTIVE from the
start: ports.make_port says why). Every change to a router runs under its row lock, taken
before any subnet's (the order used everywhere here), so an interface cannot be removed
while a floating IP is being associated through it. A router is visible to its own project
only (and to admins)."""

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
from nova_async.network import ipam, networks, ports, quotas, subnets

Q = queries("l3")
NQ = queries("network")

Db = Pool | asyncpg.Connection

# Attributes Neutron lets only an admin set (its policy defaults).
_ADMIN_ONLY = ("distributed", "ha")
_ADMIN_ONLY_GATEWAY = ("enable_snat", "external_fixed_ips")


@dataclass(frozen=True)
class RouterFilters:
    ids: list[str] | None = None
    names: list[str] | None = None
    project_ids: list[str] | None = None
    admin_state_up: bool | None = None


@dataclass(frozen=True)
class Interface:
    """What add_router_interface and remove_router_interface answer."""
    router_id: str
    project_id: str
    port_id: str
    network_id: str
    subnet_ids: list[str]


def not_found(router_id: str) -> errors.NotFound:
    return errors.NotFound(f"Router {router_id} could not be found", code="router_not_found")


def bad_request(message: str) -> errors.InvalidInput:
    return errors.InvalidInput(f"Bad router request: {message}", code="bad_request")


def _check_policy(ctx: RequestContext, body: dict[str, Any], action: str) -> None:
    if ctx.is_admin:
        for name in _ADMIN_ONLY:
            if body.get(name):
                raise bad_request(f"{name} routers are not supported here.")
        return
    for name in _ADMIN_ONLY:
        if name in body:
            raise errors.Forbidden(f"({action}_router:{name} is disallowed by policy)")
    gateway = body.get("external_gateway_info") or {}
    for name in _ADMIN_ONLY_GATEWAY:
        if name in gateway:
            raise errors.Forbidden(f"({action}_router:external_gateway_info:{name} is disallowed by policy)")


def _check_routes(body: dict[str, Any]) -> None:
    if body.get("routes"):
        raise errors.InvalidInput("Invalid input for routes: extra routes are not supported here.")


async def get_router(db: Db, ctx: RequestContext, router_id: str) -> asyncpg.Record:
    canonical = parse_uuid(router_id)
    row = await db.fetchrow(Q.get_router, canonical) if canonical else None
    if row is None or not ctx.can_see(row["project_id"]):
        raise not_found(router_id)
    return row


async def _locked(conn: asyncpg.Connection, ctx: RequestContext, router_id: str) -> asyncpg.Record:
    row = await get_router(conn, ctx, router_id)
    locked = await conn.fetchrow(Q.lock_router, row["id"])
    if locked is None:  # deleted since the read
        raise not_found(router_id)
    return locked


async def list_routers(db: Db, ctx: RequestContext, f: RouterFilters) -> list[asyncpg.Record]:
    ids = None if f.ids is None else [i for i in map(parse_uuid, f.ids) if i]
    return await db.fetch(Q.list_routers, ctx.is_admin, ctx.project_id, ids, f.names, f.project_ids,
                          f.admin_state_up)


async def create_router(pool: Pool, ctx: RequestContext, body: dict[str, Any]) -> asyncpg.Record:
    _check_policy(ctx, body, "create")
    _check_routes(body)
    project = networks.owner_project(ctx, body)
    router_id = str(uuid.uuid4())
    async with pool.acquire() as conn, conn.transaction():
        await quotas.reserve(conn, project, "router")
        await conn.execute(Q.insert_router, router_id, project, body.get("name", ""), body.get("description", ""),
                           body.get("admin_state_up", True))
        if body.get("external_gateway_info"):
            row = await conn.fetchrow(Q.lock_router, router_id)
            await _set_gateway(conn, ctx, row, body["external_gateway_info"])
        return await conn.fetchrow(Q.get_router, router_id)


async def update_router(pool: Pool, ctx: RequestContext, router_id: str, body: dict[str, Any]) -> asyncpg.Record:
    _check_policy(ctx, body, "update")
    _check_routes(body)
    async with pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, ctx, router_id)
        await conn.execute(Q.update_router, row["id"], body.get("name"), body.get("description"),
                           body.get("admin_state_up"))
        if "external_gateway_info" in body:
            if body["external_gateway_info"]:
                await _set_gateway(conn, ctx, row, body["external_gateway_info"])
            else:  # null or {}: Neutron's way to clear it
                await _clear_gateway(conn, row)
        return await conn.fetchrow(Q.get_router, row["id"])


async def delete_router(pool: Pool, ctx: RequestContext, router_id: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, ctx, router_id)
        if await conn.fetchval(Q.router_has_interfaces, row["id"]):
            raise errors.Conflict(f"Router {router_id} still has ports", code="router_in_use")
        await _clear_gateway(conn, row)
        await conn.execute(Q.delete_router, row["id"])


async def _set_gateway(conn: asyncpg.Connection, ctx: RequestContext, row: asyncpg.Record,
                       info: dict[str, Any]) -> None:
    if not info.get("network_id"):
        raise bad_request("external_gateway_info needs a network_id.")
    net = await networks.get_network(conn, ctx, info["network_id"])
    if not net["external"]:
        raise bad_request(f"Network {info['network_id']} is not an external network.")
    enable_snat = info.get("enable_snat", True)
    if row["gateway_network_id"] == net["id"] and "external_fixed_ips" not in info:
        await conn.execute(Q.set_router_gateway, row["id"], net["id"], row["gateway_port_id"], enable_snat)
        return
    await _clear_gateway(conn, row)
    available = await conn.fetch(NQ.network_subnets, net["id"])
    if not available:
        raise bad_request(f"Network {net['id']} has no subnet for the router's gateway address.")
    wanted = ([_external_ip(available, entry, str(net["id"])) for entry in info["external_fixed_ips"]]
              if info.get("external_fixed_ips") else [(available[0], None)])
    await _check_overlap(conn, row["id"], [s for s, _ in wanted])
    locked = await ipam.lock_subnets(conn, [s["id"] for s, _ in wanted])
    port = await ports.make_port(conn, ports.NewPort(
        network=net, project_id="", subnets=[(locked[str(s["id"])], ip) for s, ip in wanted],
        device_id=str(row["id"]), device_owner=ports.ROUTER_GATEWAY))
    await conn.execute(Q.set_router_gateway, row["id"], net["id"], port["id"], enable_snat)


def _external_ip(available: list[asyncpg.Record], entry: dict[str, str],
                 network_id: str) -> tuple[asyncpg.Record, str | None]:
    for s in available:
        if "subnet_id" in entry and str(s["id"]) != parse_uuid(entry["subnet_id"]):
            continue
        if "ip_address" in entry:
            try:
                ipam.parse_address(entry["ip_address"], s["cidr"], "ip_address")
            except errors.InvalidInput:
                continue
        return s, entry.get("ip_address")
    raise bad_request(f"external_fixed_ips entry {entry} matches no subnet of network {network_id}.")


async def _clear_gateway(conn: asyncpg.Connection, row: asyncpg.Record) -> None:
    if row["gateway_network_id"] is None:
        return
    if await conn.fetchval(Q.router_has_floatingips, row["id"]):
        raise errors.Conflict(
            f"Gateway cannot be updated for router {row['id']}, since a gateway to external network "
            f"{row['gateway_network_id']} is required by one or more floating IPs.",
            code="gateway_in_use_by_floatingip")
    await conn.execute(Q.set_router_gateway, row["id"], None, None, row["enable_snat"])
    if row["gateway_port_id"] is not None:
        await conn.execute(NQ.delete_port, row["gateway_port_id"])


async def _check_overlap(conn: asyncpg.Connection, router_id: Any, new: list[asyncpg.Record]) -> None:
    """A router routes between its subnets: two that overlap would make that ambiguous."""
    attached = [(r["subnet_id"], r["cidr"]) for r in await conn.fetch(Q.router_interface_ips, router_id)]
    gateway = await conn.fetchrow(Q.get_router, router_id)
    for ip in gateway["gateway_ips"]:
        sub = await conn.fetchrow(NQ.get_subnet, ip["subnet_id"])
        attached.append((sub["id"], sub["cidr"]))
    for s in new:
        for other_id, other_cidr in attached:
            if other_cidr.version == s["cidr"].version and other_cidr.overlaps(s["cidr"]):
                raise bad_request(f"Cidr {s['cidr']} of subnet {s['id']} overlaps with cidr {other_cidr} of "
                                  f"subnet {other_id}.")


def _interface_request(body: dict[str, Any]) -> tuple[str | None, str | None]:
    subnet_id, port_id = body.get("subnet_id"), body.get("port_id")
    if not subnet_id and not port_id:
        raise bad_request("Either subnet_id or port_id must be specified.")
    return subnet_id, port_id


async def add_interface(pool: Pool, ctx: RequestContext, router_id: str, body: dict[str, Any]) -> Interface:
    subnet_id, port_id = _interface_request(body)
    if subnet_id and port_id:
        raise bad_request("Cannot specify both subnet-id and port-id.")
    async with pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, ctx, router_id)
        if subnet_id:
            return await _add_by_subnet(conn, ctx, row, subnet_id)
        return await _add_by_port(conn, ctx, row, port_id or "")


async def _attached_subnets(conn: asyncpg.Connection, router_id: Any) -> set[str]:
    return {str(r["subnet_id"]) for r in await conn.fetch(Q.router_interface_ips, router_id)}


async def _add_by_subnet(conn: asyncpg.Connection, ctx: RequestContext, row: asyncpg.Record,
                         subnet_id: str) -> Interface:
    subnet = await subnets.get_subnet(conn, ctx, subnet_id)
    if subnet["external"]:
        raise bad_request(f"Subnet {subnet_id} is on an external network: it can be a router's gateway, "
                          "not an interface.")
    if subnet["gateway_ip"] is None:
        raise bad_request("Subnet for router interface must have a gateway IP.")
    if str(subnet["id"]) in await _attached_subnets(conn, row["id"]):
        raise bad_request(f"Router already has a port on subnet {subnet['id']}")
    await _check_overlap(conn, row["id"], [subnet])
    net = await networks.get_network(conn, ctx, str(subnet["network_id"]))
    await ipam.lock_subnets(conn, [subnet["id"]])
    gateway = ipam.host(subnet["gateway_ip"])
    if await conn.fetchval(NQ.ip_taken, subnet["id"], gateway):
        # Another router (or a port that took the address) has it: Neutron answers the same.
        raise errors.Conflict(f"IP address {gateway} already allocated in subnet {subnet['id']}.", code="ip_in_use")
    port = await ports.make_port(conn, ports.NewPort(
        network=net, project_id=row["project_id"], subnets=[], device_id=str(row["id"]),
        device_owner=ports.ROUTER_INTERFACE))
    await conn.execute(NQ.insert_ip, subnet["id"], gateway, port["id"])
    return Interface(str(row["id"]), row["project_id"], str(port["id"]), str(net["id"]), [str(subnet["id"])])


async def _add_by_port(conn: asyncpg.Connection, ctx: RequestContext, row: asyncpg.Record, port_id: str) -> Interface:
    port = await ports.get_port(conn, ctx, port_id)
    in_use = errors.Conflict(f"Unable to complete operation on port {port_id} for network {port['network_id']}. "
                             f"Port already has an attached device {port['device_id']}.", code="port_in_use")
    if port["device_id"]:
        raise in_use
    fixed = await conn.fetch(NQ.port_ips, [port["id"]])
    if not fixed:
        raise bad_request(f"Router port must have at least one fixed IP (port {port_id} has none).")
    attached = await _attached_subnets(conn, row["id"])
    for ip in fixed:
        if str(ip["subnet_id"]) in attached:
            raise bad_request(f"Router already has a port on subnet {ip['subnet_id']}")
    mine = [await conn.fetchrow(NQ.get_subnet, ip["subnet_id"]) for ip in fixed]
    if any(s["external"] for s in mine):
        raise bad_request(f"Port {port_id} is on an external network: it cannot be a router interface.")
    await _check_overlap(conn, row["id"], mine)
    if await conn.fetchrow(Q.claim_port_for_device, port["id"], str(row["id"]), ports.ROUTER_INTERFACE) is None:
        raise in_use
    return Interface(str(row["id"]), row["project_id"], str(port["id"]), str(port["network_id"]),
                     [str(ip["subnet_id"]) for ip in fixed])


async def remove_interface(pool: Pool, ctx: RequestContext, router_id: str, body: dict[str, Any]) -> Interface:
    subnet_id, port_id = _interface_request(body)
    async with pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, ctx, router_id)
        interfaces = await conn.fetch(Q.router_interface_ips, row["id"])
        if port_id:
            found = [i for i in interfaces if str(i["port_id"]) == parse_uuid(port_id)]
            if not found:
                raise errors.NotFound(f"Router {router_id} does not have an interface with id {port_id}",
                                      code="router_interface_not_found")
            if subnet_id and not any(str(i["subnet_id"]) == parse_uuid(subnet_id) for i in found):
                raise errors.InvalidInput(f"Subnet on port {port_id} does not match the requested subnet "
                                          f"{subnet_id}.", code="subnet_mismatch_for_port")
        else:
            hit = [i for i in interfaces if str(i["subnet_id"]) == parse_uuid(subnet_id or "")]
            if not hit:
                raise errors.NotFound(f"Router {router_id} has no interface on subnet {subnet_id}",
                                      code="router_interface_not_found_for_subnet")
            found = [i for i in interfaces if i["port_id"] == hit[0]["port_id"]]
        for i in found:
            if await conn.fetchval(Q.router_floatingips_via_subnet, row["id"], i["subnet_id"]):
                raise errors.Conflict(f"Router interface for subnet {i['subnet_id']} on router {router_id} cannot "
                                      "be deleted, as it is required by one or more floating IPs.",
                                      code="router_interface_in_use_by_floatingip")
        await conn.execute(NQ.delete_port, found[0]["port_id"])
        return Interface(str(row["id"]), row["project_id"], str(found[0]["port_id"]), str(found[0]["network_id"]),
                         [str(i["subnet_id"]) for i in found])
