"""What the firewall renders from a desired state, without a kernel: which ports are
filtered, how a rule reads, and that the text is the same for the same state."""

from __future__ import annotations

from dataclasses import replace
from ipaddress import ip_address, ip_network

import pytest

from nova_async.common import errors
from nova_async.dataplane.desired import Desired, FixedIp, Port, Rule, SecurityGroup
from nova_async.dataplane.firewall_rules import check_table, render, script

NET = "0f0f0f0f-0000-4000-8000-000000000000"
WEB = SecurityGroup("a0000000-0000-4000-8000-000000000001", rules=(
    Rule("r1", "ingress", "IPv4", "tcp", 22, 22),
    Rule("r2", "ingress", "IPv6", "icmp", 128, None),
    Rule("r3", "ingress", "IPv4", "udp", 5000, 5100, remote_ip_prefix=ip_network("192.0.2.0/24")),
    Rule("r4", "ingress", "IPv4", "6", 80, 80, remote_group_id="a0000000-0000-4000-8000-000000000002"),
    Rule("r5", "ingress", "IPv4", "no-such-protocol"),
    Rule("r6", "egress", "IPv4"),
))
DB = SecurityGroup("a0000000-0000-4000-8000-000000000002", stateful=False,
                   rules=(Rule("r7", "egress", "IPv4", "icmp"),))


def port(n: int, *ips: str, groups=(WEB.id,), owner="compute:nova", host="h1", **kw) -> Port:
    return Port(f"b000000{n}-0000-4000-8000-000000000000", NET, f"FA:16:3E:00:00:0{n}", owner, "dev",
                tuple(FixedIp("s", ip_address(a)) for a in ips), groups, binding_host=host, **kw)


def rendered(*ports: Port) -> dict[str, str]:
    want = Desired(ports={p.id: p for p in ports}, security_groups={WEB.id: WEB, DB.id: DB})
    return render(want, host="h1", table="t")


def chain(text: str, name: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(f"\tchain {name} {{")
    return [ln.strip() for ln in lines[start + 1:lines.index("\t}", start)]]


def test_only_guests_with_port_security_on_this_host_are_filtered():
    assert rendered(port(1, "10.0.0.1", owner="network:dhcp"),
                    port(2, "10.0.0.2", port_security_enabled=False),
                    port(3, "10.0.0.3", host="elsewhere")) == {}
    out = rendered(port(1, "10.0.0.1"), port(2, "10.0.0.2", host=""))
    assert '"tapb0000001-00" : jump s_b0000001000040008000000000000000' in out["bridge"]
    assert '"tapb0000002-00" : jump s_b0000002000040008000000000000000' in out["bridge"]


def test_rules_read_as_neutron_means_them():
    member = port(2, "10.0.0.2", "fd00::2", groups=(DB.id,), allowed_address_pairs=(("10.1.0.0/16", None),))
    inet = rendered(port(1, "10.0.0.1"), member)["inet"]
    ingress = chain(inet, "i_b0000001000040008000000000000000")
    assert ingress[:5] == [
        "meta nfproto ipv4 udp sport 67 udp dport 68 return",
        "meta nfproto ipv6 udp sport 547 udp dport 546 return",
        "icmpv6 type { mld-listener-query, nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert } return",
        "ct state established,related return",
        "ct state invalid drop",
    ]
    assert ingress[5:] == [   # sorted; the unknown protocol left out; drop last
        "meta nfproto ipv4 meta l4proto 17 th dport 5000-5100 ip saddr 192.0.2.0/24 return",
        "meta nfproto ipv4 meta l4proto 6 th dport 22 return",
        "meta nfproto ipv4 meta l4proto 6 th dport 80 ip saddr @rg4_a0000000000040008000000000000002 return",
        "meta nfproto ipv6 meta l4proto 58 icmpv6 type 128 return",
        "drop",
    ]
    # The remote group's members: their fixed IPs and allowed pairs, per IP version.
    assert ("set rg4_a0000000000040008000000000000002 { type ipv4_addr; flags interval; "
            "elements = { 10.0.0.2, 10.1.0.0/16 }; }") in inet
    # Which chain: the port's MAC on its bridge, or its fixed IP for traffic the host routes.
    assert chain(inet, "forward")[1:] == [
        'iifname . ether saddr vmap { "brq0f0f0f0f-00" . fa:16:3e:00:00:01 : jump o_b0000001000040008000000000000000, '
        '"brq0f0f0f0f-00" . fa:16:3e:00:00:02 : jump o_b0000002000040008000000000000000 }',
        'oifname . ether daddr vmap { "brq0f0f0f0f-00" . fa:16:3e:00:00:01 : jump i_b0000001000040008000000000000000, '
        '"brq0f0f0f0f-00" . fa:16:3e:00:00:02 : jump i_b0000002000040008000000000000000 }',
        'oifname . ip daddr vmap { "brq0f0f0f0f-00" . 10.0.0.1 : jump i_b0000001000040008000000000000000, '
        '"brq0f0f0f0f-00" . 10.0.0.2 : jump i_b0000002000040008000000000000000 }',
        'oifname . ip6 daddr vmap { "brq0f0f0f0f-00" . fd00::2 : jump i_b0000002000040008000000000000000 }',
    ]
    # A stateless group: no conntrack in its port's chains.
    egress = chain(inet, "o_b0000002000040008000000000000000")
    assert not [ln for ln in egress if ln.startswith("ct ")]
    assert egress[-2:] == ["meta nfproto ipv4 meta l4proto 1 return", "drop"]


def test_anti_spoofing_names_the_ports_addresses():
    p = port(1, "10.0.0.1", "fd00::1", allowed_address_pairs=(("10.9.0.5", "fa:16:3e:99:99:99"),))
    s = chain(rendered(p)["bridge"], "s_b0000001000040008000000000000000")
    assert "ether saddr != { fa:16:3e:00:00:01, fa:16:3e:99:99:99 } drop" in s
    assert "ether type arp arp saddr ip != { 0.0.0.0, 10.0.0.1, 10.9.0.5 } drop" in s
    assert "ether type ip udp sport 67 drop" in s
    assert s.index("ether type ip udp sport 67 drop") < s.index(
        "ip saddr 0.0.0.0 ip daddr 255.255.255.255 udp sport 68 udp dport 67 accept")
    assert s[-1] == "ip6 saddr != { fd00::1 } drop"


def test_the_same_state_renders_the_same_text():
    a, b = port(1, "10.0.0.1"), port(2, "10.0.0.2", groups=(DB.id, WEB.id))
    swapped = replace(b, security_group_ids=(WEB.id, DB.id))
    assert rendered(a, b) == rendered(swapped, a)


def test_names_come_from_ids_only():
    with pytest.raises(errors.InvalidInput):
        rendered(replace(port(1, "10.0.0.1"), id="x; flush ruleset"))
    with pytest.raises(errors.InvalidInput):
        rendered(replace(port(1, "10.0.0.1"), mac_address="fa:16:3e:00:00:01 drop"))
    with pytest.raises(errors.InvalidInput):
        check_table("nova-async; flush ruleset")


def test_a_script_replaces_each_table_in_one_go():
    assert script("t", {"inet": "BODY"}).splitlines() == [
        "table inet t {}", "delete table inet t", "table inet t {", "BODY", "}"]
