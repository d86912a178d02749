"""Ports: a MAC address and fixed IPs on a network, optionally attached to a device.

`make_port` is the one way a port comes to be, for the API and for instances alike: in the
caller's transaction, with the subnets it draws from already row-locked, so the port and
its addresses appear together or not at all. A port is visible to its own project and to
the owner of its network. A port the API makes joins its security groups in the same
transaction (security_groups.py says which) and takes its allowed address pairs, checked
here for create and update alike (port_update.py has the rules that tie them to port
security)."""

from __future__ import annotations

import ipaddress
import secrets
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.network import ipam, networks, quotas, security_groups

Q = queries("network")

Db = Pool | asyncpg.Connection

# Ports that routers and floating IPs own (Neutron's device_owner values): made and deleted
# with their router or floating IP, never through /ports.
ROUTER_INTERFACE = "network:router_interface"
ROUTER_GATEWAY = "network:router_gateway"
FLOATINGIP = "network:floatingip"
L3_OWNERS = frozenset({ROUTER_INTERFACE, ROUTER_GATEWAY, FLOATINGIP})

# OpenStack's customary prefix; the first octet's "locally administered" bit is set.
MAC_PREFIX = "fa:16:3e"
_MAC_ATTEMPTS = 16


@dataclass(frozen=True)
class PortFilters:
    ids: list[str] | None = None
    network_ids: list[str] | None = None
    device_ids: list[str] | None = None
    device_owners: list[str] | None = None
    names: list[str] | None = None
    macs: list[str] | None = None
    project_ids: list[str] | None = None
    security_group_ids: list[str] | None = None   # in any of these groups
    fixed_ips: list[str] | None = None   # Neutron's `fixed_ips=ip_address=…` (or subnet_id=…)


@dataclass(frozen=True)
class NewPort:
    network: asyncpg.Record
    project_id: str
    subnets: list[tuple[asyncpg.Record, str | None]]  # (locked subnet, wanted address or None)
    name: str = ""
    description: str = ""
    mac_address: str | None = None
    device_id: str = ""
    device_owner: str = ""
    admin_state_up: bool = True
    host: str = ""
    auto_created: bool = False
    device_index: int = 0


def random_mac() -> str:
    return MAC_PREFIX + "".join(f":{b:02x}" for b in secrets.token_bytes(3))


def not_found(port_id: str) -> errors.NotFound:
    return errors.NotFound(f"Port {port_id} could not be found.", code="port_not_found")


def _may_see(row: asyncpg.Record, ctx: RequestContext) -> bool:
    return ctx.is_admin or ctx.project_id in (row["project_id"], row["network_project_id"])


async def make_port(conn: asyncpg.Connection, new: NewPort) -> asyncpg.Record:
    port_id = str(uuid.uuid4())
    # A port is ACTIVE once bound to a host; a router's ports are ACTIVE from the start, as
    # Neutron's reference back end (OVN) reports them, whatever the router's admin state (the
    # switch side of a router port is up; an admin-down router is the router's own state).
    status = "ACTIVE" if new.host or new.device_owner in (ROUTER_INTERFACE, ROUTER_GATEWAY) else "DOWN"
    if len(new.subnets) == 1 and new.subnets[0][1] is None:
        return await _make_port_with_ip(conn, new, port_id, status)
    for _ in range(_MAC_ATTEMPTS):
        mac = new.mac_address or random_mac()
        try:
            row = await conn.fetchrow(
                Q.insert_port, port_id, new.network["id"], new.project_id, new.name, new.description, mac,
                new.device_id, new.device_owner, status, new.admin_state_up, new.host, new.auto_created,
                new.device_index)
        except asyncpg.ForeignKeyViolationError:
            raise networks.not_found(str(new.network["id"])) from None
        if row is not None:
            break
        if new.mac_address:
            raise errors.Conflict(f"Unable to complete operation for network {new.network['id']}. "
                                  f"The mac address {mac} is in use.", code="mac_in_use")
    else:
        raise errors.Conflict("Could not find a free MAC address.", code="mac_generation_failed")
    for subnet, wanted in new.subnets:
        await ipam.allocate(conn, subnet, port_id, wanted)
    return row


async def _make_port_with_ip(conn: asyncpg.Connection, new: NewPort, port_id: str, status: str) -> asyncpg.Record:
    """The common case (one address, the subnet's lowest free one) in one round trip per try;
    the same outcome as the general path below."""
    subnet = new.subnets[0][0]
    for _ in range(_MAC_ATTEMPTS):
        mac = new.mac_address or random_mac()
        try:
            row = await conn.fetchrow(
                Q.insert_port_with_ip, port_id, new.network["id"], new.project_id, new.name, new.description,
                mac, new.device_id, new.device_owner, status, new.admin_state_up, new.host, new.auto_created,
                new.device_index, subnet["id"])
        except asyncpg.ForeignKeyViolationError:
            raise networks.not_found(str(new.network["id"])) from None
        if row is None:
            raise errors.Conflict(f"No more IP addresses available on network {subnet['network_id']} "
                                  f"(subnet {subnet['id']}, {subnet['cidr']}).", code="ip_exhausted")
        if row["id"] is not None:
            return row
        if new.mac_address:
            raise errors.Conflict(f"Unable to complete operation for network {new.network['id']}. "
                                  f"The mac address {mac} is in use.", code="mac_in_use")
    raise errors.Conflict("Could not find a free MAC address.", code="mac_generation_failed")


# Neutron's default `max_allowed_address_pair`.
MAX_ADDRESS_PAIRS = 10


def check_address_pairs(pairs: list[dict[str, str]]) -> list[dict[str, str | None]]:
    """Validated pairs, addresses in canonical form; a pair without a MAC gets the port's
    later (`mac_address` None here)."""
    if len(pairs) > MAX_ADDRESS_PAIRS:
        raise errors.InvalidInput(f"The number of allowed address pair exceeds the maximum {MAX_ADDRESS_PAIRS}.",
                                  code="address_pairs_exhausted")
    out: list[dict[str, str | None]] = []
    for pair in pairs:
        text = pair["ip_address"]
        try:
            value = str(ipaddress.ip_network(text, strict=True) if "/" in text else ipaddress.ip_address(text))
        except ValueError:
            raise errors.InvalidInput(f"Invalid input for allowed_address_pairs: '{text}' is neither a valid IP "
                                      "address nor a CIDR.") from None
        out.append({"ip_address": value, "mac_address": pair["mac_address"].lower() if "mac_address" in pair else None})
    return out


def with_macs(pairs: list[dict[str, str | None]], mac: str) -> list[dict[str, str]]:
    filled = [{"ip_address": p["ip_address"], "mac_address": p["mac_address"] or mac} for p in pairs]
    seen = set()
    for p in filled:
        key = (p["ip_address"], p["mac_address"])
        if key in seen:
            raise errors.InvalidInput(f"Request contains duplicate address pair: mac_address {key[1]} "
                                      f"ip_address {key[0]}.", code="duplicate_address_pair")
        seen.add(key)
    return filled


def subnet_for(subnets: list[asyncpg.Record], entry: dict[str, str], network_id: str) -> asyncpg.Record:
    if "subnet_id" in entry:
        for s in subnets:
            if str(s["id"]) == parse_uuid(entry["subnet_id"]):
                return s
        raise errors.InvalidInput(f"Subnet {entry['subnet_id']} is not on network {network_id}.")
    for s in subnets:
        try:
            ipam.parse_address(entry["ip_address"], s["cidr"], "ip_address")
            return s
        except errors.InvalidInput:
            continue
    raise errors.InvalidInput(f"IP address {entry['ip_address']} is not on any subnet of network {network_id}.")


async def create_ports(pool: Pool, ctx: RequestContext, bodies: list[dict[str, Any]]) -> list[asyncpg.Record]:
    """One port or a bulk list: all made, or none (one transaction). Every subnet the batch
    draws from is row-locked, in id order, before the first port is made."""
    projects = [networks.owner_project(ctx, body) for body in bodies]
    pairs = [check_address_pairs(body.get("allowed_address_pairs") or []) for body in bodies]
    async with pool.acquire() as conn, conn.transaction():
        await quotas.check_batch(conn, "port", projects)
        plans = []
        for body in bodies:
            net = await networks.get_network(conn, ctx, body["network_id"])
            if "allowed_address_pairs" in body and not (ctx.is_admin or net["project_id"] == ctx.project_id):
                raise networks.not_allowed("create_port:allowed_address_pairs")
            available = await conn.fetch(Q.network_subnets, net["id"])
            if "fixed_ips" in body:
                wanted = [(subnet_for(available, e, body["network_id"]), e.get("ip_address"))
                          for e in body["fixed_ips"]]
            else:
                wanted = [(available[0], None)] if available else []
            groups = await security_groups.groups_for_port(conn, ctx, networks.owner_project(ctx, body), body)
            plans.append((body, net, wanted, groups))
        locked = await ipam.lock_subnets(conn, [s["id"] for _, _, wanted, _ in plans for s, _ in wanted])
        made = []
        for (body, net, wanted, groups), project, asked in zip(plans, projects, pairs):
            row = await make_port(conn, NewPort(
                network=net, project_id=project, subnets=[(locked[str(s["id"])], ip) for s, ip in wanted],
                name=body.get("name", ""), description=body.get("description", ""),
                mac_address=body.get("mac_address"), device_id=body.get("device_id", ""),
                device_owner=body.get("device_owner", ""), admin_state_up=body.get("admin_state_up", True),
                host=body.get("binding:host_id", "")))
            enabled = body.get("port_security_enabled", True)
            if asked and not enabled:
                raise errors.Conflict("Port Security must be enabled in order to have allowed address pairs on "
                                      "a port.", code="address_pair_needs_port_security")
            await security_groups.join_port(conn, row["id"], groups, enabled)
            if asked:
                await conn.execute(Q.set_port_address_pairs, row["id"], with_macs(asked, str(row["mac_address"])))
            made.append(row if enabled and not asked else await conn.fetchrow(Q.get_port, row["id"]))
        return made


async def get_port(db: Db, ctx: RequestContext, port_id: str) -> asyncpg.Record:
    canonical = parse_uuid(port_id)
    row = await db.fetchrow(Q.get_port, canonical) if canonical else None
    if row is None or not _may_see(row, ctx):
        raise not_found(port_id)
    return row


async def list_ports(db: Db, ctx: RequestContext, f: PortFilters) -> list[asyncpg.Record]:
    ids = None if f.ids is None else [i for i in map(parse_uuid, f.ids) if i]
    net_ids = None if f.network_ids is None else [i for i in map(parse_uuid, f.network_ids) if i]
    macs = None if f.macs is None else [m.lower() for m in f.macs if _is_mac(m)]
    groups = None if f.security_group_ids is None else [i for i in map(parse_uuid, f.security_group_ids) if i]
    addresses, subnet_ids, substr = _fixed_ip_filter(f.fixed_ips or [])
    return await db.fetch(Q.list_ports, ctx.is_admin, ctx.project_id, ids, net_ids, f.device_ids,
                          f.device_owners, f.names, macs, f.project_ids, groups,
                          addresses, subnet_ids, substr)


_FIXED_IP_KEYS = ("ip_address", "subnet_id", "ip_address_substr")


def _fixed_ip_filter(values: list[str]) -> tuple[list[str] | None, list[str] | None, str | None]:
    """(addresses, subnet ids, address substring) of `fixed_ips=key=value` query values.
    A value that cannot be an address or an id matches nothing, like an unknown id."""
    parts: dict[str, list[str]] = {}
    for value in values:
        key, sep, wanted = value.partition("=")
        if not sep or key not in _FIXED_IP_KEYS:
            raise errors.InvalidInput(f"Invalid fixed_ips filter {value!r}: expected one of "
                                      f"{', '.join(k + '=...' for k in _FIXED_IP_KEYS)}.")
        parts.setdefault(key, []).append(wanted)
    addresses = parts.get("ip_address")
    if addresses is not None:
        addresses = [a for a in addresses if _is_ip(a)]
    subnet_ids = parts.get("subnet_id")
    if subnet_ids is not None:
        subnet_ids = [i for i in map(parse_uuid, subnet_ids) if i]
    substr = parts.get("ip_address_substr")
    return addresses, subnet_ids, None if substr is None else substr[-1]


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _is_mac(text: str) -> bool:
    parts = text.split(":")
    return len(parts) == 6 and all(len(p) == 2 and all(c in "0123456789abcdefABCDEF" for c in p)
                                   for p in parts)


async def fixed_ips(db: Db, ports: list[asyncpg.Record]) -> dict[str, list[dict[str, str]]]:
    """Each port's addresses, fetched in one query for a whole listing."""
    out: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in await db.fetch(Q.port_ips, [p["id"] for p in ports]):
        out[str(r["port_id"])].append({"subnet_id": str(r["subnet_id"]), "ip_address": ipam.host(r["ip_address"])})
    return out


async def delete_port(pool: Pool, ctx: RequestContext, port_id: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        row = await get_port(conn, ctx, port_id)
        if row["device_owner"] in L3_OWNERS:
            raise errors.Conflict(f"Port {port_id} cannot be deleted directly via the port API: has device "
                                  f"owner {row['device_owner']}.", code="service_port_in_use")
        await conn.execute(Q.delete_port, row["id"])
