"""Security groups rendered as nftables rule sets: the pure half of the firewall (firewall.py
applies what this renders). A function of the `Desired` value alone, deterministic to the
character (everything sorted), so "nothing changed" is a string comparison and costs no nft.

Two tables, because of what this kernel offers (measured: no conntrack in the bridge family;
br_netfilter hands bridged IPv4/IPv6 to the `inet` hooks, with conntrack, but there the in/out
interface is the BRIDGE, not the port):

- `inet`: the security group rules, stateful. A port is recognised by its MAC on its
  network's bridge: `iifname . ether saddr` picks the port's egress chain, `oifname . ether
  daddr` (or, for traffic the host routes, `oifname . ip daddr`) its ingress chain. Both
  are looked at for guest-to-guest traffic on one bridge (A's egress, then B's ingress), so
  an allowing rule `return`s rather than accepts, and a port chain ends in `drop`. Egress is also looked at on the `input` hook (a guest talking to an
  address of the host's own on the bridge), as Neutron does.
- `bridge`: anti-spoofing, stateless, per tap (there `iifname` IS the port): the source MAC,
  the source IPs, ARP, and no DHCP server or router advertisement from a guest. That is also
  what makes the MAC in the `inet` table a trustworthy name for a port.

A port whose groups are stateless (`stateful=false`) gets its chains without the conntrack
lines: every packet, replies included, must match a rule of its own direction, as with
Neutron's stateless groups. Its flows are still tracked (no `notrack`: a stateful peer's
chains rely on conntrack); this port's chains just never ask.

Limits, said plainly: ingress rules apply to unicast frames (a broadcast or multicast frame
has no port's MAC as its destination, and the `inet` hook sees it once per bridge, not once
per port); IPv6 link-local sources are allowed from any guest (fe80::/10, not only the
EUI-64 address of its MAC: guests with stable-privacy link-local addresses keep working)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import collapse_addresses, ip_network

import structlog

from nova_async.common import errors
from nova_async.dataplane.desired import Desired, IpNetwork, Port, Rule, SecurityGroup, bridge_name
from nova_async.dataplane.linux import check_name

log = structlog.get_logger("dataplane")

# IANA protocol numbers for the names Neutron's API accepts.
PROTOCOLS = {
    "hopopt": 0, "icmp": 1, "igmp": 2, "ipip": 4, "tcp": 6, "egp": 8, "udp": 17, "dccp": 33,
    "ipv6-encap": 41, "ipv6-route": 43, "ipv6-frag": 44, "rsvp": 46, "gre": 47, "esp": 50,
    "ah": 51, "icmpv6": 58, "ipv6-icmp": 58, "ipv6-nonxt": 59, "ipv6-opts": 60, "ospf": 89,
    "vrrp": 112, "pgm": 113, "sctp": 132, "udplite": 136,
}
_PORTED = {6, 17, 33, 132, 136}     # a destination port at offset 2 of the transport header
_ICMP = {1: "icmp", 58: "icmpv6"}   # port_range_min/max are the ICMP type and code
_FAMILY = {"IPv4": ("ipv4", "ip", 4), "IPv6": ("ipv6", "ip6", 6)}

_ID = re.compile(r"[0-9A-Fa-f-]{1,64}")
_MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")

# Always allowed, whatever the groups say (Neutron does the same): DHCP and DHCPv6 between
# the guest and its server, neighbour discovery, multicast listener messages, router
# advertisements to the guest and solicitations from it. ARP is not IP: it never gets here.
_ALWAYS_IN = (
    "meta nfproto ipv4 udp sport 67 udp dport 68 return",
    "meta nfproto ipv6 udp sport 547 udp dport 546 return",
    "icmpv6 type { mld-listener-query, nd-router-advert, nd-neighbor-solicit, "
    "nd-neighbor-advert } return",
)
_ALWAYS_OUT = (
    "meta nfproto ipv4 udp sport 68 udp dport 67 return",
    "meta nfproto ipv6 udp sport 546 udp dport 547 return",
    "icmpv6 type { mld-listener-report, mld-listener-done, nd-router-solicit, "
    "nd-neighbor-solicit, nd-neighbor-advert, mld2-listener-report } return",
)
_STATEFUL = (
    "ct state established,related return",
    "ct state invalid drop",
)


def check_table(name: str) -> str:
    """The `[network] dataplane_table` setting, usable as an nft table name."""
    if not isinstance(name, str) or not _TABLE.fullmatch(name):
        raise errors.InvalidInput(f"{name!r} is not a usable nftables table name "
                                  "(letters, digits and _; a letter first)")
    return name


def ident(uuid: str) -> str:
    """An id as part of a chain or set name: hex only, so it cannot end the name early."""
    if not isinstance(uuid, str) or not _ID.fullmatch(uuid):
        raise errors.InvalidInput(f"{uuid!r} is not an id")
    return uuid.replace("-", "").lower()


def mac(value: str) -> str:
    value = value.lower() if isinstance(value, str) else ""
    if not _MAC.fullmatch(value):
        raise errors.InvalidInput(f"{value!r} is not a MAC address")
    return value


def is_guest(port: Port) -> bool:
    """The ports the firewall filters: guests' (device_owner compute:*) with port security.
    DHCP servers, routers and floating IPs are the cloud's own ports (`network:*`)."""
    return port.port_security_enabled and port.device_owner.startswith("compute:")


@dataclass(frozen=True)
class _Guest:
    port: Port
    macs: tuple[str, ...]               # its own first, then its allowed pairs' others
    sources: tuple[IpNetwork, ...]      # fixed IPs and allowed pairs' addresses, collapsed
    stateful: bool

    @property
    def name(self) -> str:
        return ident(self.port.id)


def render(want: Desired, *, host: str, table: str) -> dict[str, str]:
    """{family: the table's body} for the guests bound to `host` (or not bound yet); empty
    when there are none, which means: no tables at all."""
    guests = [_guest(p, want.security_groups) for _, p in sorted(want.ports.items())
              if is_guest(p) and p.binding_host in ("", host)]
    if not guests:
        return {}
    return {"inet": _inet(want, guests), "bridge": _bridge(guests)}


def script(table: str, bodies: dict[str, str]) -> str:
    """One `nft -f` transaction that deletes each family's table and makes it again with its
    body (`table … {}` first, so the delete never fails on a table that is not there)."""
    lines = []
    for family, body in sorted(bodies.items()):
        lines += [f"table {family} {table} {{}}", f"delete table {family} {table}",
                  f"table {family} {table} {{", body, "}"]
    return "".join(line + "\n" for line in lines)


def _guest(port: Port, groups: dict[str, SecurityGroup]) -> _Guest:
    own = mac(port.mac_address)
    macs = [own]
    for _, pair_mac in port.allowed_address_pairs:
        if pair_mac:
            try:
                m = mac(pair_mac)
            except errors.InvalidInput:
                log.warning("firewall_pair_skipped", port_id=port.id, mac_address=pair_mac)
                continue
            if m not in macs:
                macs.append(m)
    # Neutron refuses stateful and stateless groups on one port; if both come anyway, the
    # port is stateful (the safer reading: replies need no rule of their own).
    mine = [groups[g] for g in port.security_group_ids if g in groups]
    stateful = not mine or any(g.stateful for g in mine)
    return _Guest(port, tuple(macs), _addresses([port]), stateful)


def _addresses(ports: Iterable[Port]) -> tuple[IpNetwork, ...]:
    """The ports' fixed IPs and allowed address pairs (an IP or a CIDR), merged."""
    nets: list[IpNetwork] = []
    for port in ports:
        nets += [ip_network(f.address) for f in port.fixed_ips]
        for pair_ip, _ in port.allowed_address_pairs:
            try:
                nets.append(ip_network(pair_ip, strict=False))
            except ValueError:
                log.warning("firewall_pair_skipped", port_id=port.id, ip_address=pair_ip)
    v4 = collapse_addresses(n for n in nets if n.version == 4)
    v6 = collapse_addresses(n for n in nets if n.version == 6)
    return (*v4, *v6)


def _net(n: IpNetwork) -> str:
    return str(n.network_address) if n.prefixlen == n.max_prefixlen else str(n)


def _elements(items: Iterable[str]) -> str:
    return "{ " + ", ".join(items) + " }"


# ---- inet: the security group rules ------------------------------------------------------

def _inet(want: Desired, guests: list[_Guest]) -> str:
    by_mac_out: dict[tuple[str, str], str] = {}
    # A MAC names one port on its bridge: its own MAC first, then allowed pairs' MACs no
    # other port already holds (ports in id order, so the choice is the same every pass).
    for pass_pairs in (False, True):
        for g in guests:
            for m in (g.macs[1:] if pass_pairs else g.macs[:1]):
                by_mac_out.setdefault((bridge_name(g.port.network_id), m), g.name)
    chains: list[str] = []
    remote: set[tuple[str, int]] = set()
    for g in guests:
        rules = [r for gid in sorted(set(g.port.security_group_ids))
                 for r in (want.security_groups[gid].rules if gid in want.security_groups else ())]
        for direction, prefix, always in (("ingress", "i", _ALWAYS_IN), ("egress", "o", _ALWAYS_OUT)):
            lines = sorted({line for r in rules if r.direction == direction
                            for line in [_rule(r, remote)] if line})
            body = [*always, *(_STATEFUL if g.stateful else ()), *lines, "drop"]
            chains.append(_chain(f"{prefix}_{g.name}", body))
    sets = [_set(gid, version, want) for gid, version in sorted(remote)]
    out = _elements(f'"{check_name(br)}" . {m} : jump o_{name}'
                    for (br, m), name in sorted(by_mac_out.items()))
    into = _elements(f'"{check_name(br)}" . {m} : jump i_{name}'
                     for (br, m), name in sorted(by_mac_out.items()))
    # Traffic the host ROUTES to a guest (a guest on a network whose gateway is the host)
    # has no guest MAC yet on the forward hook: its fixed IPs on its bridge name it. A
    # bridged frame matches both maps; going through the port's chain twice changes nothing.
    by_ip: dict[tuple[int, str, str], str] = {}
    for g in guests:
        for f in g.port.fixed_ips:
            by_ip.setdefault((f.address.version, bridge_name(g.port.network_id), str(f.address)), g.name)
    routed = [f"oifname . {'ip' if version == 4 else 'ip6'} daddr vmap "
              + _elements(f'"{check_name(br)}" . {a} : jump i_{name}'
                          for (v, br, a), name in sorted(by_ip.items()) if v == version)
              for version in (4, 6) if any(v == version for v, _, _ in by_ip)]
    base = [
        _chain("forward", ["type filter hook forward priority filter; policy accept;",
                           f"iifname . ether saddr vmap {out}",
                           f"oifname . ether daddr vmap {into}", *routed]),
        _chain("input", ["type filter hook input priority filter; policy accept;",
                         f"iifname . ether saddr vmap {out}"]),
    ]
    return "\n".join([*sets, *base, *chains])


def _chain(name: str, lines: Iterable[str]) -> str:
    return "\n".join([f"\tchain {name} {{", *(f"\t\t{line}" for line in lines), "\t}"])


def _set(gid: str, version: int, want: Desired) -> str:
    """The addresses of the ports in group `gid` (on any host: a remote group's members are
    wherever they run), for rules naming it as their remote group."""
    members = [p for _, p in sorted(want.ports.items()) if gid in p.security_group_ids]
    nets = [_net(n) for n in _addresses(members) if n.version == version]
    kind = "ipv4_addr" if version == 4 else "ipv6_addr"
    elements = f" elements = {_elements(nets)};" if nets else ""
    return f"\tset rg{version}_{ident(gid)} {{ type {kind}; flags interval;{elements} }}"


def _protocol(rule: Rule) -> int | None | bool:
    """The rule's protocol number, None for any, False when it cannot be expressed."""
    p = rule.protocol
    if p is None or str(p).lower() in ("", "any"):
        return None
    p = str(p).lower()
    number = int(p) if p.isdigit() else PROTOCOLS.get(p)
    if number is None or not 0 <= number <= 255:
        return False
    if number == 1 and rule.ethertype == "IPv6":
        number = 58   # Neutron reads icmp with IPv6 as ICMPv6
    return number


def _rule(rule: Rule, remote: set[tuple[str, int]]) -> str | None:
    """One allowing rule as an nft rule, or None (logged) when it cannot be expressed."""
    family = _FAMILY.get(rule.ethertype)
    proto = _protocol(rule)
    if family is None or proto is False:
        log.warning("firewall_rule_skipped", rule_id=rule.id, protocol=rule.protocol,
                    ethertype=rule.ethertype)
        return None
    nfproto, ip, version = family
    parts = [f"meta nfproto {nfproto}"]
    lo, hi = rule.port_range_min, rule.port_range_max
    if proto is not None:
        parts.append(f"meta l4proto {proto}")
        if proto in _PORTED and lo is not None:
            hi = lo if hi is None else hi
            if not 0 <= lo <= hi <= 65535:
                log.warning("firewall_rule_skipped", rule_id=rule.id, port_range=(lo, hi))
                return None
            parts.append(f"th dport {lo}" if lo == hi else f"th dport {lo}-{hi}")
        elif proto in _ICMP and lo is not None:
            if not 0 <= lo <= 255 or (hi is not None and not 0 <= hi <= 255):
                log.warning("firewall_rule_skipped", rule_id=rule.id, icmp=(lo, hi))
                return None
            parts.append(f"{_ICMP[proto]} type {lo}")
            if hi is not None:
                parts.append(f"{_ICMP[proto]} code {hi}")
    peer = "saddr" if rule.direction == "ingress" else "daddr"
    if rule.remote_ip_prefix is not None:
        prefix = rule.remote_ip_prefix
        if prefix.version != version:
            return None   # an IPv6 prefix on an IPv4 rule matches no packet
        if prefix.prefixlen:
            parts.append(f"{ip} {peer} {_net(prefix)}")
    elif rule.remote_group_id is not None:
        remote.add((rule.remote_group_id, version))
        parts.append(f"{ip} {peer} @rg{version}_{ident(rule.remote_group_id)}")
    return " ".join([*parts, "return"])


# ---- bridge: anti-spoofing, per tap ------------------------------------------------------

def _bridge(guests: list[_Guest]) -> str:
    named: dict[str, str] = {}
    for g in guests:   # two ids sharing their first 11 characters would share a tap name
        named.setdefault(check_name(g.port.tap), g.name)
    taps = _elements(f'"{tap}" : jump s_{name}' for tap, name in sorted(named.items()))
    base = _chain("prerouting", ["type filter hook prerouting priority filter; policy accept;",
                                 f"iifname vmap {taps}"])
    return "\n".join([base, *(_chain(f"s_{g.name}", _spoof(g)) for g in guests)])


def _spoof(g: _Guest) -> list[str]:
    macs = _elements(g.macs)
    v4 = [_net(n) for n in g.sources if n.version == 4]
    v6 = [_net(n) for n in g.sources if n.version == 6]
    lines = [
        f"ether saddr != {macs} drop",
        # A VLAN tag would hide the frame's addresses from every check below.
        "ether type { 8021q, 8021ad } drop",
        f"ether type arp arp saddr ether != {macs} drop",
        # 0.0.0.0 is an address probe (RFC 5227): it claims nothing.
        f"ether type arp arp saddr ip != {_elements(['0.0.0.0', *v4])} drop",
        # A guest is no DHCP server and no router.
        "ether type ip udp sport 67 drop",
        "ether type ip6 udp sport 547 drop",
        "ether type ip6 icmpv6 type nd-router-advert drop",
        # Asking for an address before having one.
        "ip saddr 0.0.0.0 ip daddr 255.255.255.255 udp sport 68 udp dport 67 accept",
        f"ip saddr != {_elements(v4)} drop" if v4 else "ether type ip drop",
        "ip6 saddr fe80::/10 accept",
        # Duplicate address detection: a solicitation (and its listener report) from ::.
        "ip6 saddr :: icmpv6 type { nd-neighbor-solicit, mld2-listener-report } accept",
        f"ip6 saddr != {_elements(v6)} drop" if v6 else "ether type ip6 drop",
    ]
    return lines
