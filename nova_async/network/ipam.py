"""IP address management: what a subnet's gateway and allocation pools are, and which
address a new port gets.

Planning a subnet is pure (the `ipaddress` module does the arithmetic). Handing out an
address happens in the database, inside the caller's transaction and under the subnet's
row lock: the lowest free address of the first pool that has one. The primary key of
`ip_allocations` backs this up, so no two ports ever share an address."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.db.queries import queries

Q = queries("network")

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# A subnet must leave room for a gateway and at least one port.
_MAX_PREFIX = {4: 30, 6: 126}
# plan_subnet's gateway when the request names none: the first host address.
DEFAULT_GATEWAY = object()


@dataclass(frozen=True)
class SubnetPlan:
    cidr: IPNetwork
    gateway: IPAddress | None
    pools: list[tuple[IPAddress, IPAddress]]

    def pools_json(self) -> list[dict[str, str]]:
        return [{"start": str(a), "end": str(b)} for a, b in self.pools]


def host(value: Any) -> str:
    """An address as text, whether asyncpg gave an address or an interface (inet with a mask)."""
    if isinstance(value, (ipaddress.IPv4Interface, ipaddress.IPv6Interface)):
        return str(value.ip)
    return str(value)


def ip(text: str) -> IPAddress:
    """An address this module stored (a pool bound, a host()); already known to be valid."""
    return ipaddress.ip_address(text)


def parse_cidr(text: str, ip_version: int) -> IPNetwork:
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError:
        try:
            loose = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise errors.InvalidInput(f"'{text}' is not a valid CIDR.") from None
        raise errors.InvalidInput(f"'{text}' isn't a recommended CIDR, '{loose}' is recommended.") from None
    if net.version != ip_version:
        raise errors.InvalidInput(f"Invalid input: ip_version {ip_version} does not match the CIDR {text}.")
    if net.prefixlen > _MAX_PREFIX[net.version]:
        raise errors.InvalidInput(f"The CIDR {text} is too small: it leaves no address for a port "
                                  f"(the longest prefix is /{_MAX_PREFIX[net.version]}).")
    return net


def _host_range(net: IPNetwork) -> tuple[IPAddress, IPAddress]:
    """First and last address a port may have (no network address, no IPv4 broadcast)."""
    last = net.broadcast_address - 1 if net.version == 4 else net.broadcast_address
    return net.network_address + 1, last


def parse_address(text: Any, net: IPNetwork, what: str) -> IPAddress:
    """An address that may be given to a host in `net`; InvalidInput naming `what` otherwise."""
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        raise errors.InvalidInput(f"Invalid input: {what} '{text}' is not a valid IP address.") from None
    first, last = _host_range(net)
    if addr.version != net.version or not first <= addr <= last:
        raise errors.InvalidInput(f"Invalid input: {what} {text} is not a usable address of subnet {net}.")
    return addr


def plan_subnet(cidr: str, ip_version: int, gateway: Any = DEFAULT_GATEWAY,
                pools: list[dict[str, str]] | None = None) -> SubnetPlan:
    """Validate and complete a subnet request: default gateway = first host, default pool =
    every other host address."""
    net = parse_cidr(cidr, ip_version)
    first, last = _host_range(net)
    gw = first if gateway is DEFAULT_GATEWAY else None if gateway is None else parse_address(gateway, net, "gateway_ip")
    if pools is None:
        ranges = [(first, last)]
        if gw is not None and first <= gw <= last:
            ranges = [(a, b) for a, b in ((first, gw - 1), (gw + 1, last)) if a <= b]
        return SubnetPlan(net, gw, ranges)

    ranges = []
    for pool in pools:
        start = parse_address(pool["start"], net, "allocation pool start")
        end = parse_address(pool["end"], net, "allocation pool end")
        if start > end:
            raise errors.InvalidInput(f"Invalid allocation pool {start}-{end}: the start is after the end.")
        ranges.append((start, end))
    ranges.sort()
    for (a1, b1), (a2, b2) in zip(ranges, ranges[1:]):
        if a2 <= b1:
            raise errors.InvalidInput(f"Allocation pools {a1}-{b1} and {a2}-{b2} overlap.")
    if gw is not None:
        for a, b in ranges:
            if a <= gw <= b:
                raise errors.InvalidInput(f"Gateway ip {gw} conflicts with allocation pool {a}-{b}.")
    return SubnetPlan(net, gw, ranges)


def check_nameservers(servers: list[str]) -> list[str]:
    out = []
    for s in servers:
        try:
            out.append(str(ipaddress.ip_address(s)))
        except ValueError:
            raise errors.InvalidInput(f"Invalid input: dns_nameservers entry '{s}' is not an IP address.") from None
    if len(set(out)) != len(out):
        raise errors.InvalidInput("Invalid input: dns_nameservers holds a duplicate.")
    return out


def check_host_routes(routes: list[dict[str, str]]) -> list[dict[str, str]]:
    out = []
    for r in routes:
        try:
            dest = ipaddress.ip_network(r["destination"], strict=True)
            hop = ipaddress.ip_address(r["nexthop"])
        except ValueError:
            raise errors.InvalidInput(f"Invalid input: host route {r} is not a valid CIDR and address.") from None
        out.append({"destination": str(dest), "nexthop": str(hop)})
    return out


async def allocate(conn: asyncpg.Connection, subnet: asyncpg.Record, port_id: str,
                   wanted: str | None = None) -> str:
    """Give the port an address of `subnet`: `wanted`, or the lowest free one in its pools.
    The caller must hold the subnet's row lock (FOR UPDATE) in the current transaction."""
    net = subnet["cidr"]
    if wanted is not None:
        addr = parse_address(wanted, net, "fixed ip")
        if subnet["gateway_ip"] is not None and str(addr) == host(subnet["gateway_ip"]):
            raise errors.InvalidInput(f"IP address {addr} is the gateway of subnet {subnet['id']}.")
        if await conn.fetchval(Q.ip_taken, subnet["id"], str(addr)):
            raise errors.Conflict(f"IP address {addr} already allocated in subnet {subnet['id']}.",
                                  code="ip_in_use")
        chosen = str(addr)
    else:
        found = await conn.fetchval(Q.lowest_free_ip, subnet["id"])
        if found is None:
            raise errors.Conflict(f"No more IP addresses available on network {subnet['network_id']} "
                                  f"(subnet {subnet['id']}, {net}).", code="ip_exhausted")
        chosen = host(found)
    await conn.execute(Q.insert_ip, subnet["id"], chosen, port_id)
    return chosen


async def lock_subnets(conn: asyncpg.Connection, subnet_ids: list[Any]) -> dict[str, asyncpg.Record]:
    """Row-lock subnets in id order (the same order everywhere, so no deadlock)."""
    locked = {}
    for subnet_id in sorted({str(s) for s in subnet_ids}):
        row = await conn.fetchrow(Q.lock_subnet, subnet_id)
        if row is None:
            raise errors.Conflict(f"Subnet {subnet_id} was deleted meanwhile; try again.",
                                  code="subnet_not_found")
        locked[subnet_id] = row
    return locked
