"""What the router and external-network parts decide from a Desired, before any command
runs: which routers belong on this host, the router's NAT rules, and which way out the
external network takes (host gateway, a NIC, a physical network)."""

from __future__ import annotations

import uuid
from ipaddress import ip_address, ip_network

import pytest

from nova_async.common import errors
from nova_async.config import NetworkSettings
from nova_async.dataplane import desired as d
from nova_async.dataplane.external import layout, nat_table, physical_networks, render_nat
from nova_async.dataplane.routers import plan


def uid() -> str:
    return str(uuid.uuid4())


def network(cidr: str, **kw) -> d.Network:
    net_id, cidr_ = uid(), ip_network(cidr)
    return d.Network(id=net_id, mtu=1500, subnets=(d.Subnet(uid(), net_id, cidr_, cidr_.version, cidr_[1], True),),
                     **{"external": False, **kw})


def port(net: d.Network, address: str, owner: str = "compute:nova", router_id: str = "", host: str = "") -> d.Port:
    return d.Port(uid(), net.id, "fa:16:3e:00:00:01", owner, router_id,
                  (d.FixedIp(net.subnets[0].id, ip_address(address)),), binding_host=host)


@pytest.fixture
def setup():
    ext, inner = network("203.0.113.0/24", external=True), network("10.0.0.0/24")
    rid = uid()
    router = d.Router(rid, gateway_port=port(ext, "203.0.113.10", d.ROUTER_GATEWAY_OWNER, rid),
                      interfaces=(port(inner, "10.0.0.1", d.ROUTER_INTERFACE_OWNER, rid),))
    return ext, inner, router


def desired(ext, inner, router, *fips) -> d.Desired:
    return d.Desired(networks={ext.id: ext, inner.id: inner}, routers={router.id: router},
                     floating_ips={f.id: f for f in fips})


def test_a_router_snats_its_subnets_out_of_the_gateway_and_routes_via_the_external_gateway(setup):
    ext, inner, router = setup
    p = plan(router, desired(ext, inner, router))
    qg = f"qg-{router.gateway_port.id[:11]}"
    assert p.routes == ((4, "203.0.113.1", qg),)
    assert [(leg.inside[:3], leg.addresses) for leg in p.legs] == [("qr-", ("10.0.0.1/24",)),
                                                                    ("qg-", ("203.0.113.10/24",))]
    assert f'oifname "{qg}" ip saddr {{ 10.0.0.0/24 }} snat ip to 203.0.113.10' in p.nat


def test_a_floating_ip_is_translated_both_ways_before_the_general_snat(setup):
    ext, inner, router = setup
    fip = d.FloatingIp(uid(), ip_address("203.0.113.20"), ext.id, router.id, ip_address("10.0.0.5"), uid())
    unassociated = d.FloatingIp(uid(), ip_address("203.0.113.21"), ext.id)
    p = plan(router, desired(ext, inner, router, fip, unassociated))
    assert p.legs[-1].addresses == ("203.0.113.10/24", "203.0.113.20/32")
    assert "ip daddr 203.0.113.20 dnat ip to 10.0.0.5" in p.nat
    assert p.nat.index("snat ip to 203.0.113.20") < p.nat.index("snat ip to 203.0.113.10")
    assert "203.0.113.21" not in p.nat


def test_no_snat_and_no_gateway(setup):
    ext, inner, router = setup
    no_snat = d.Router(router.id, enable_snat=False, gateway_port=router.gateway_port, interfaces=router.interfaces)
    assert "snat ip to" not in plan(no_snat, desired(ext, inner, no_snat)).nat
    bare = d.Router(router.id, interfaces=router.interfaces)
    p = plan(bare, desired(ext, inner, bare))
    assert p.routes == () and [leg.inside[:3] for leg in p.legs] == ["qr-"]
    assert p.nat.strip().endswith("delete table inet router")


def test_routers_down_or_bound_elsewhere_are_not_here(setup):
    ext, inner, router = setup
    down = d.Router(router.id, admin_state_up=False, gateway_port=router.gateway_port)
    assert plan(down, desired(ext, inner, down)) is None
    elsewhere = d.Router(router.id, gateway_port=port(ext, "203.0.113.11", d.ROUTER_GATEWAY_OWNER, router.id, "h2"))
    assert plan(elsewhere, desired(ext, inner, elsewhere), host="h1") is None
    assert plan(elsewhere, desired(ext, inner, elsewhere), host="h2") is not None


def test_the_host_gateway_only_on_a_bridge_without_a_nic():
    ext = network("203.0.113.0/24", external=True)
    want = d.Desired(networks={ext.id: ext})
    lab = layout(want, NetworkSettings(external_host_gateway=True), {})
    assert lab.addresses == {f"{ext.bridge} 203.0.113.1/24": (ext.bridge, "203.0.113.1/24")}
    assert lab.masquerade == ((ip_network("203.0.113.0/24"), ext.bridge),)
    assert f'iifname "{ext.bridge}" ip saddr 203.0.113.0/24 oifname != {{ "{ext.bridge}" }} masquerade' in render_nat("x_nat", lab.masquerade)
    site = layout(want, NetworkSettings(external_host_gateway=True, external_interface="eth1"), {})
    assert site.plugs == {"eth1": ext.bridge} and site.addresses == {} and site.masquerade == ()
    # As the network API makes it with external_interface set: flat on physnet `external`.
    flat_ext = network("203.0.113.0/24", external=True, network_type="flat", physical_network="external")
    settings = NetworkSettings(external_interface="eth1")
    site = layout(d.Desired(networks={ext.id: ext, flat_ext.id: flat_ext}), settings,
                  physical_networks((), "eth1"))
    assert site.plugs == {"eth1": flat_ext.bridge}
    assert set(site.addresses) == {f"{ext.bridge} 203.0.113.1/24"}   # the other one is host-only
    off = layout(want, NetworkSettings(external_host_gateway=False), {})
    assert off.addresses == {} and off.masquerade == () and set(off.bridges) == {ext.bridge}


def test_flat_networks_get_their_physnets_nic():
    flat = network("198.51.100.0/24", network_type="flat", physical_network="physnet1")
    other = network("192.0.2.0/24", network_type="flat", physical_network="physnet9")
    local = network("10.0.0.0/24")
    want = d.Desired(networks={n.id: n for n in (flat, other, local)})
    lab = layout(want, NetworkSettings(external_host_gateway=False), physical_networks(("physnet1:eth1",)))
    assert lab.plugs == {"eth1": flat.bridge} and set(lab.bridges) == {flat.bridge}


@pytest.mark.parametrize("pairs", [("physnet1",), ("physnet1:eth1", "physnet1:eth2"), ("p:-x",), (":eth1",)])
def test_bad_physical_networks_are_refused(pairs):
    with pytest.raises(errors.InvalidInput):
        physical_networks(pairs)


def test_the_nat_table_is_named_from_the_setting():
    assert nat_table("nova_async") == "nova_async_nat"
    with pytest.raises(errors.InvalidInput):
        nat_table("x; flush ruleset")
