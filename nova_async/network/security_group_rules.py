"""Security group rules: checked as Neutron checks them, then kept.

A rule is stored normalised, so that the data plane reads one spelling of each thing:
direction and ethertype in Neutron's case, the protocol as a lower-case name or the
decimal number Neutron has no name for (`any` is NULL), and the remote prefix as a network
(10.0.0.5/24 becomes 10.0.0.0/24). Two rules that allow the same traffic are one rule: the
second is refused with SecurityGroupRuleExists (409), as Neutron does, whichever way the
protocol or an "anywhere" prefix was spelled."""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.network import security_groups as groups

Q = queries("security_groups")

Db = Pool | asyncpg.Connection

# Neutron's protocol names and their IP protocol numbers.
PROTOCOLS = {
    "ah": 51, "dccp": 33, "egp": 8, "esp": 50, "gre": 47, "hopopt": 0, "icmp": 1, "igmp": 2,
    "ipip": 4, "ipv6-encap": 41, "ipv6-frag": 44, "ipv6-icmp": 58, "icmpv6": 58, "ipv6-nonxt": 59,
    "ipv6-opts": 60, "ipv6-route": 43, "ospf": 89, "pgm": 113, "rsvp": 46, "sctp": 132, "tcp": 6,
    "udp": 17, "udplite": 136, "vrrp": 112,
}
WITH_PORTS = {6, 17, 33, 132, 136}       # tcp, udp, dccp, sctp, udplite
ICMP = {1, 58}
ETHERTYPES = {"ipv4": "IPv4", "ipv6": "IPv6"}


@dataclass(frozen=True)
class RuleFilters:
    ids: list[str] | None = None
    group_ids: list[str] | None = None
    directions: list[str] | None = None
    ethertypes: list[str] | None = None
    protocols: list[str] | None = None
    project_ids: list[str] | None = None
    remote_group_ids: list[str] | None = None


@dataclass(frozen=True)
class Rule:
    direction: str
    ethertype: str
    protocol: str | None
    port_range_min: int | None
    port_range_max: int | None
    remote_ip_prefix: str | None
    remote_group_id: str | None
    description: str

    def key(self) -> tuple[Any, ...]:
        """What the rule allows: equal keys, the same rule."""
        prefix = self.remote_ip_prefix   # as given: Neutron tells 10.0.0.1/24 from 10.0.0.0/24
        if prefix is not None and ipaddress.ip_interface(prefix).network.prefixlen == 0:
            prefix = None  # anywhere, spelled out or not
        return (self.direction, self.ethertype, protocol_number(self.protocol), self.port_range_min,
                self.port_range_max, prefix, self.remote_group_id)


def shown_prefix(value: Any) -> str:
    """A stored prefix as Neutron shows it: as given, with its length ("10.0.0.1/32")."""
    return ipaddress.ip_interface(str(value)).with_prefixlen


def normalized(value: Any) -> str:
    """The network a prefix names: Neutron's normalized_cidr ("10.2.3.124/24" → "10.2.3.0/24")."""
    return str(ipaddress.ip_interface(str(value)).network)


def not_found(rule_id: str) -> errors.NotFound:
    return errors.NotFound(f"Security group rule {rule_id} does not exist", code="security_group_rule_not_found")


def protocol_number(protocol: str | None) -> int | None:
    if protocol is None:
        return None
    return PROTOCOLS[protocol] if protocol in PROTOCOLS else int(protocol)


def _protocol(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip().lower()
    if text == "any":
        return None
    if text in PROTOCOLS:
        return text
    if text.isdigit() and 0 <= int(text) <= 255:
        return str(int(text))
    raise errors.InvalidInput(
        f"Security group rule protocol {value} not supported. Only protocol values "
        f"[{', '.join(['any', *sorted(PROTOCOLS)])}] and integer representations [0 to 255] are supported.",
        code="security_group_rule_invalid_protocol")


def _port(value: Any, name: str) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = -1
    if isinstance(value, bool) or not 0 <= number <= 65535:
        raise errors.InvalidInput(f"Invalid value for port {value}.", code="security_group_invalid_port_value")
    return number


def _ports(protocol: str | None, low: int | None, high: int | None) -> tuple[int | None, int | None]:
    """Neutron's port-range rules, in its order: TCP-like protocols need both ends (a single
    port is min == max), ICMP reads them as type and code, no other protocol takes any."""
    if low is None and high is None:
        return None, None
    number = protocol_number(protocol)
    if number is None:
        raise errors.InvalidInput("Must also specify protocol if port range is given.",
                                  code="security_group_protocol_required_with_ports")
    if number in WITH_PORTS:
        if low == 0 or high == 0:
            raise errors.InvalidInput("Invalid value for port 0.", code="security_group_invalid_port_value")
        if low is None or high is None or low > high:
            raise errors.InvalidInput("For TCP/UDP protocols, port_range_min must be <= port_range_max",
                                      code="security_group_invalid_port_range")
        return low, high
    if number in ICMP:
        for value, what, attr in ((low, "type", "port_range_min"), (high, "code", "port_range_max")):
            if value is not None and value > 255:
                raise errors.InvalidInput(f"Invalid value for ICMP {what} ({attr}) {value}. It must be 0 to 255.",
                                          code="security_group_invalid_icmp_value")
        if low is None:
            raise errors.InvalidInput(f"ICMP code (port-range-max) {high} is provided but ICMP type "
                                      "(port-range-min) is missing.", code="security_group_missing_icmp_type")
        return low, high
    raise errors.InvalidInput(f"Invalid protocol {number} for port range, only supported for TCP, UDP, "
                              "UDPLITE, SCTP and DCCP protocols.", code="security_group_invalid_protocol_for_port")


def _prefix(value: str | None, ethertype: str) -> str | None:
    if value is None:
        return None
    try:
        given = ipaddress.ip_interface(value.strip())
    except ValueError:
        raise errors.InvalidInput(f"Invalid input for remote_ip_prefix. Reason: '{value}' is not a valid IP "
                                  "subnet.") from None
    if ETHERTYPES[f"ipv{given.version}"] != ethertype:
        raise errors.InvalidInput(f"Conflicting value ethertype {ethertype} for CIDR {value}",
                                  code="security_group_rule_parameter_conflict")
    return given.with_prefixlen   # as given, host bits and all, as Neutron keeps it


def parse(body: dict[str, Any]) -> Rule:
    """The rule a body describes, normalised; InvalidInput for what Neutron refuses."""
    ethertype = ETHERTYPES.get(str(body.get("ethertype") or "IPv4").lower())
    if ethertype is None:
        raise errors.InvalidInput(f"Security group rule for ethertype '{body['ethertype']}' not supported. "
                                  "Allowed values are ['IPv4', 'IPv6'].",
                                  code="security_group_rule_invalid_ethertype")
    if body.get("remote_ip_prefix") is not None and body.get("remote_group_id") is not None:
        raise errors.InvalidInput("Only remote_ip_prefix or remote_group_id may be provided.",
                                  code="security_group_remote_group_and_remote_ip_prefix")
    if body.get("remote_address_group_id") is not None:
        raise errors.InvalidInput("Address groups are not supported here: remote_address_group_id must be null.")
    protocol = _protocol(body.get("protocol"))
    if ethertype == "IPv6" and protocol == "icmp":
        protocol = "ipv6-icmp"  # Neutron's reading of icmp in an IPv6 rule
    low, high = _ports(protocol, _port(body.get("port_range_min"), "port_range_min"),
                       _port(body.get("port_range_max"), "port_range_max"))
    return Rule(direction=body["direction"], ethertype=ethertype, protocol=protocol, port_range_min=low,
                port_range_max=high, remote_ip_prefix=_prefix(body.get("remote_ip_prefix"), ethertype),
                remote_group_id=body.get("remote_group_id"), description=body.get("description") or "")


def _stored(row: asyncpg.Record) -> Rule:
    return Rule(direction=row["direction"], ethertype=row["ethertype"], protocol=row["protocol"],
                port_range_min=row["port_range_min"], port_range_max=row["port_range_max"],
                remote_ip_prefix=None if row["remote_ip_prefix"] is None else shown_prefix(row["remote_ip_prefix"]),
                remote_group_id=None if row["remote_group_id"] is None else str(row["remote_group_id"]),
                description=row["description"])


async def get_rule(db: Db, ctx: RequestContext, rule_id: str) -> asyncpg.Record:
    canonical = parse_uuid(rule_id)
    row = await db.fetchrow(Q.get_rule, canonical) if canonical else None
    if row is None or not (ctx.is_admin or ctx.project_id in (row["project_id"], row["group_project_id"])):
        raise not_found(rule_id)
    return row


async def list_rules(db: Db, ctx: RequestContext, f: RuleFilters) -> list[asyncpg.Record]:
    def uuids(values: list[str] | None) -> list[str] | None:
        return None if values is None else [i for i in map(parse_uuid, values) if i]
    protocols = None if f.protocols is None else [p for p in (_filter_protocol(v) for v in f.protocols) if p]
    ethertypes = None if f.ethertypes is None else [ETHERTYPES.get(e.lower(), e) for e in f.ethertypes]
    return await db.fetch(Q.list_rules, ctx.is_admin, ctx.project_id, uuids(f.ids), uuids(f.group_ids),
                          f.directions, ethertypes, protocols, f.project_ids, uuids(f.remote_group_ids))


def _filter_protocol(value: str) -> str | None:
    try:
        return _protocol(value)
    except errors.InvalidInput:
        return value


async def create_rule(pool: Pool, ctx: RequestContext, body: dict[str, Any]) -> asyncpg.Record:
    rule = parse(body)
    async with pool.acquire() as conn, conn.transaction():
        group = await groups.get_group(conn, ctx, body["security_group_id"])
        group = await conn.fetchrow(Q.lock_group, group["id"])  # rules of one group: one at a time
        if rule.remote_group_id is not None:
            remote = await groups.get_group(conn, ctx, rule.remote_group_id)
            rule = Rule(**{**rule.__dict__, "remote_group_id": str(remote["id"])})
        for existing in await conn.fetch(Q.group_rules, [group["id"]]):
            if _stored(existing).key() == rule.key():
                raise errors.Conflict(f"Security group rule already exists. Rule id is {existing['id']}.",
                                      code="security_group_rule_exists")
        await groups.check_quota(conn, group["project_id"], "security_group_rule")
        return await conn.fetchrow(
            Q.insert_rule, str(uuid.uuid4()), group["id"], group["project_id"], rule.direction, rule.ethertype,
            rule.protocol, rule.port_range_min, rule.port_range_max, rule.remote_ip_prefix, rule.remote_group_id,
            rule.description)


async def delete_rule(pool: Pool, ctx: RequestContext, rule_id: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        row = await get_rule(conn, ctx, rule_id)
        await conn.execute(Q.delete_rule, row["id"])
