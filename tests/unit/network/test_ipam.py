"""Subnet planning on its own: defaults, and every way a request can be wrong."""

from __future__ import annotations

import ipaddress

import pytest

from nova_async.common import errors
from nova_async.network.ipam import DEFAULT_GATEWAY, check_host_routes, check_nameservers, host, plan_subnet


def pools(plan):
    return plan.pools_json()


def test_defaults_take_the_first_host_as_gateway_and_the_rest_as_pool():
    plan = plan_subnet("10.0.0.0/24", 4)
    assert str(plan.gateway) == "10.0.0.1"
    assert pools(plan) == [{"start": "10.0.0.2", "end": "10.0.0.254"}]


def test_a_gateway_in_the_middle_splits_the_pool():
    plan = plan_subnet("10.0.0.0/28", 4, "10.0.0.7")
    assert pools(plan) == [{"start": "10.0.0.1", "end": "10.0.0.6"}, {"start": "10.0.0.8", "end": "10.0.0.14"}]


def test_no_gateway_leaves_every_host_to_the_pool():
    plan = plan_subnet("10.0.0.0/30", 4, None)
    assert plan.gateway is None
    assert pools(plan) == [{"start": "10.0.0.1", "end": "10.0.0.2"}]


def test_given_pools_are_sorted():
    plan = plan_subnet("10.0.0.0/24", 4, DEFAULT_GATEWAY, [{"start": "10.0.0.50", "end": "10.0.0.60"},
                                                          {"start": "10.0.0.10", "end": "10.0.0.20"}])
    assert [p["start"] for p in pools(plan)] == ["10.0.0.10", "10.0.0.50"]


def test_ipv6():
    plan = plan_subnet("2001:db8::/64", 6)
    assert str(plan.gateway) == "2001:db8::1"
    assert pools(plan) == [{"start": "2001:db8::2", "end": "2001:db8::ffff:ffff:ffff:ffff"}]


@pytest.mark.parametrize("cidr, version, gateway, pool_list, words", [
    ("10.0.0.0/24", 6, DEFAULT_GATEWAY, None, "does not match"),
    ("10.0.0.1/24", 4, DEFAULT_GATEWAY, None, "10.0.0.0/24"),
    ("10.0.0.0/31", 4, DEFAULT_GATEWAY, None, "too small"),
    ("2001:db8::/127", 6, DEFAULT_GATEWAY, None, "too small"),
    ("999.0.0.0/8", 4, DEFAULT_GATEWAY, None, "not a valid CIDR"),
    ("10.0.0.0/24", 4, "10.0.0.255", None, "gateway_ip"),
    ("10.0.0.0/24", 4, "10.0.0.0", None, "gateway_ip"),
    ("10.0.0.0/24", 4, "2001:db8::1", None, "gateway_ip"),
    ("10.0.0.0/24", 4, DEFAULT_GATEWAY, [{"start": "10.0.0.1", "end": "10.0.0.5"}], "conflicts"),
    ("10.0.0.0/24", 4, DEFAULT_GATEWAY, [{"start": "10.0.0.9", "end": "10.0.1.5"}], "10.0.1.5"),
    ("10.0.0.0/24", 4, DEFAULT_GATEWAY, [{"start": "x", "end": "10.0.0.5"}], "not a valid IP"),
])
def test_bad_plans(cidr, version, gateway, pool_list, words):
    with pytest.raises(errors.InvalidInput, match=words):
        plan_subnet(cidr, version, gateway, pool_list)


def test_nameservers_and_routes():
    assert check_nameservers(["8.8.8.8", "2001:4860:4860::8888"]) == ["8.8.8.8", "2001:4860:4860::8888"]
    with pytest.raises(errors.InvalidInput, match="duplicate"):
        check_nameservers(["8.8.8.8", "8.8.8.8"])
    assert check_host_routes([{"destination": "10.1.0.0/16", "nexthop": "10.0.0.9"}]) == [
        {"destination": "10.1.0.0/16", "nexthop": "10.0.0.9"}]
    with pytest.raises(errors.InvalidInput, match="host route"):
        check_host_routes([{"destination": "10.1.0.1/16", "nexthop": "10.0.0.9"}])


def test_host_strips_a_mask():
    assert host(ipaddress.ip_interface("10.0.0.1/24")) == "10.0.0.1"
    assert host(ipaddress.ip_address("10.0.0.1")) == "10.0.0.1"
