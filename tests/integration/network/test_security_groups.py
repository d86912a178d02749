"""Security groups and rules as the OpenStack clients drive Neutron: the project's default
group and its rules, Neutron's checks and status codes, quotas, ports in groups, and the
projects kept apart."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.harness import running

SG = "/network/v2.0/security-groups"
RULE = "/network/v2.0/security-group-rules"
NET = "/network/v2.0/networks"
SUBNET = "/network/v2.0/subnets"
PORT = "/network/v2.0/ports"


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["network"], tmp_path) as harness:
        yield harness


async def post(h, url, headers, body, status=201):
    resp = await h.http.post(url, json=body, headers=headers)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def get(h, url, headers, status=200):
    resp = await h.http.get(url, headers=headers)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def fault(resp, status, kind):
    assert resp.status == status, await resp.text()
    error = (await resp.json())["NeutronError"]
    assert error["type"] == kind, error
    return error


async def default_group(h, headers):
    groups = (await get(h, f"{SG}?name=default", headers))["security_groups"]
    assert len(groups) == 1
    return groups[0]


async def make_group(h, headers, name="web", **extra):
    return (await post(h, SG, headers, {"security_group": {"name": name, "description": name, **extra}}))[
        "security_group"]


async def make_rule(h, headers, group_id, status=201, **rule):
    body = {"security_group_rule": {"security_group_id": group_id, "direction": "ingress", **rule}}
    return await post(h, RULE, headers, body, status)


async def test_first_listing_shows_the_default_group_with_neutrons_default_rules(h):
    groups = (await get(h, SG, h.alice))["security_groups"]
    assert [g["name"] for g in groups] == ["default"]
    group = groups[0]
    assert group["project_id"] == group["tenant_id"] == "proj-a"
    assert group["stateful"] is True and group["tags"] == [] and group["revision_number"] >= 1
    assert group["created_at"] and group["updated_at"]
    rules = {(r["direction"], r["ethertype"], r["remote_group_id"], r["remote_ip_prefix"], r["protocol"])
             for r in group["security_group_rules"]}
    assert rules == {("egress", "IPv4", None, None, None), ("egress", "IPv6", None, None, None),
                     ("ingress", "IPv4", group["id"], None, None), ("ingress", "IPv6", group["id"], None, None)}
    # listed again: still one default group
    assert [g["id"] for g in (await get(h, SG, h.alice))["security_groups"]] == [group["id"]]
    listed = (await get(h, f"{RULE}?security_group_id={group['id']}", h.alice))["security_group_rules"]
    assert len(listed) == 4


async def test_default_group_is_made_once_when_first_requests_race(h):
    answers = await asyncio.gather(*(h.http.get(SG, headers=h.bob) for _ in range(8)))
    ids = {tuple(g["id"] for g in (await r.json())["security_groups"]) for r in answers}
    assert len(ids) == 1
    assert await h.pool.fetchval("SELECT count(*) FROM security_groups WHERE project_id = 'proj-b'") == 1


async def test_group_lifecycle(h):
    group = await make_group(h, h.alice, "web")
    assert group["name"] == "web" and group["description"] == "web"
    # Neutron's two egress rules come with every new group
    assert sorted((r["direction"], r["ethertype"], r["protocol"], r["remote_ip_prefix"], r["remote_group_id"])
                  for r in group["security_group_rules"]) == [("egress", "IPv4", None, None, None),
                                                             ("egress", "IPv6", None, None, None)]
    shown = (await get(h, f"{SG}/{group['id']}?fields=id&fields=name", h.alice))["security_group"]
    assert shown == {"id": group["id"], "name": "web"}
    resp = await h.http.put(f"{SG}/{group['id']}", json={"security_group": {"name": "www", "description": "d"}},
                            headers=h.alice)
    assert resp.status == 200
    assert (await resp.json())["security_group"]["name"] == "www"
    names = {g["name"] for g in (await get(h, SG, h.alice))["security_groups"]}
    assert names == {"default", "www"}
    resp = await h.http.delete(f"{SG}/{group['id']}", headers=h.alice)
    assert resp.status == 204
    await fault(await h.http.get(f"{SG}/{group['id']}", headers=h.alice), 404, "SecurityGroupNotFound")
    await fault(await h.http.delete(f"{SG}/{group['id']}", headers=h.alice), 404, "SecurityGroupNotFound")
    await fault(await h.http.get(f"{SG}/not-a-uuid", headers=h.alice), 404, "SecurityGroupNotFound")


async def test_default_group_is_guarded_as_neutron_guards_it(h):
    default = await default_group(h, h.alice)
    await fault(await h.http.post(SG, json={"security_group": {"name": "default"}}, headers=h.alice),
                409, "SecurityGroupDefaultAlreadyExists")
    await fault(await h.http.put(f"{SG}/{default['id']}", json={"security_group": {"name": "x"}}, headers=h.alice),
                409, "SecurityGroupCannotUpdateDefault")
    await fault(await h.http.delete(f"{SG}/{default['id']}", headers=h.alice),
                409, "SecurityGroupCannotRemoveDefault")
    resp = await h.http.post(SG, json={"security_group": {"name": "x", "colour": "red"}}, headers=h.alice)
    await fault(resp, 400, "HTTPBadRequest")
    # an admin may remove it (while no port is in it); the project's next need makes a new one
    assert (await h.http.delete(f"{SG}/{default['id']}", headers=h.admin)).status == 204
    assert (await default_group(h, h.alice))["id"] != default["id"]


async def test_rules_are_checked_and_normalised_as_neutron_does(h):
    group = await make_group(h, h.alice)
    gid = group["id"]
    ssh = (await make_rule(h, h.alice, gid, protocol="tcp", port_range_min=22, port_range_max=22,
                           remote_ip_prefix="0.0.0.0/0"))["security_group_rule"]
    assert (ssh["protocol"], ssh["port_range_min"], ssh["port_range_max"], ssh["ethertype"]) == ("tcp", 22, 22, "IPv4")
    assert ssh["remote_ip_prefix"] == "0.0.0.0/0" and ssh["security_group_id"] == gid
    # the same rule again, however spelled: 409 naming the first
    error = (await make_rule(h, h.alice, gid, 409, protocol="6", port_range_min="22", port_range_max=22))["NeutronError"]
    assert error["type"] == "SecurityGroupRuleExists" and ssh["id"] in error["message"]
    net = (await make_rule(h, h.alice, gid, remote_ip_prefix="10.1.2.3/24", protocol="udp",
                           port_range_min=53, port_range_max=53))["security_group_rule"]
    # Kept as given, host bits and all; normalized_cidr is its network (Neutron's fields).
    assert (net["remote_ip_prefix"], net["normalized_cidr"]) == ("10.1.2.3/24", "10.1.2.0/24")
    icmp = (await make_rule(h, h.alice, gid, protocol="icmp", port_range_min=8, port_range_max=0))["security_group_rule"]
    assert (icmp["port_range_min"], icmp["port_range_max"]) == (8, 0)
    v6 = (await make_rule(h, h.alice, gid, ethertype="IPv6", protocol="ipv6-icmp",
                          remote_ip_prefix="2001:db8::1/64"))["security_group_rule"]
    assert (v6["remote_ip_prefix"], v6["normalized_cidr"]) == ("2001:db8::1/64", "2001:db8::/64")
    anything = (await make_rule(h, h.alice, gid, protocol="any", direction="egress",
                                remote_group_id=gid))["security_group_rule"]
    assert anything["protocol"] is None and anything["remote_group_id"] == gid

    bad = [
        ({"protocol": "tcp", "port_range_min": 30, "port_range_max": 20}, 400, "SecurityGroupInvalidPortRange"),
        # a TCP-like range needs both ends (Neutron takes no single-ended range)
        ({"protocol": "tcp", "port_range_max": 6}, 400, "SecurityGroupInvalidPortRange"),
        ({"protocol": "udp", "port_range_min": 53}, 400, "SecurityGroupInvalidPortRange"),
        ({"protocol": "tcp", "port_range_min": -16, "port_range_max": 80}, 400, "SecurityGroupInvalidPortValue"),
        ({"port_range_min": 22, "port_range_max": 22}, 400, "SecurityGroupProtocolRequiredWithPorts"),
        ({"protocol": "gre", "port_range_min": 1, "port_range_max": 2}, 400, "SecurityGroupInvalidProtocolForPort"),
        ({"protocol": "tcp", "port_range_min": 0, "port_range_max": 10}, 400, "SecurityGroupInvalidPortValue"),
        ({"protocol": "tcp", "port_range_min": 1, "port_range_max": 70000}, 400, "SecurityGroupInvalidPortValue"),
        ({"protocol": "tcp", "port_range_min": "ssh", "port_range_max": 22}, 400, "SecurityGroupInvalidPortValue"),
        ({"protocol": "icmp", "port_range_max": 0}, 400, "SecurityGroupMissingIcmpType"),
        ({"protocol": "icmp", "port_range_min": 256}, 400, "SecurityGroupInvalidIcmpValue"),
        ({"protocol": "bogus"}, 400, "SecurityGroupRuleInvalidProtocol"),
        ({"protocol": "256"}, 400, "SecurityGroupRuleInvalidProtocol"),
        ({"ethertype": "IPv5"}, 400, "SecurityGroupRuleInvalidEtherType"),
        ({"remote_ip_prefix": "::/0"}, 400, "SecurityGroupRuleParameterConflict"),
        ({"remote_ip_prefix": "10.0.0.0/33"}, 400, "HTTPBadRequest"),
        ({"remote_ip_prefix": "10.0.0.0/8", "remote_group_id": gid}, 400,
         "SecurityGroupRemoteGroupAndRemoteIpPrefix"),
        ({"remote_group_id": str(uuid.uuid4())}, 404, "SecurityGroupNotFound"),
        ({"direction": "sideways"}, 400, "HTTPBadRequest"),
        ({"security_group_id": str(uuid.uuid4())}, 404, "SecurityGroupNotFound"),
    ]
    for rule, status, kind in bad:
        body = {"security_group_rule": {"security_group_id": gid, "direction": "ingress", **rule}}
        await fault(await h.http.post(RULE, json=body, headers=h.alice), status, kind)
    # the messages say which value was wrong, in Neutron's words
    for rule, words in [
        ({"protocol": "tcp", "port_range_min": 80, "port_range_max": 65536}, "Invalid value for port 65536"),
        ({"protocol": "tcp", "port_range_max": 6}, "port_range_min must be <= port_range_max"),
        ({"protocol": "icmp", "port_range_min": 1, "port_range_max": 256}, "Invalid value for ICMP code"),
        ({"protocol": "icmp", "port_range_min": 300, "port_range_max": 1}, "Invalid value for ICMP type"),
        ({"protocol": "icmp", "port_range_max": 6}, "ICMP type (port-range-min) is missing"),
    ]:
        body = {"security_group_rule": {"security_group_id": gid, "direction": "ingress", **rule}}
        resp = await h.http.post(RULE, json=body, headers=h.alice)
        assert resp.status == 400 and words in (await resp.json())["NeutronError"]["message"]

    shown = (await get(h, f"{RULE}/{ssh['id']}", h.alice))["security_group_rule"]
    assert shown == ssh
    tcp = (await get(h, f"{RULE}?security_group_id={gid}&protocol=tcp", h.alice))["security_group_rules"]
    assert [r["id"] for r in tcp] == [ssh["id"]]
    egress = (await get(h, f"{RULE}?security_group_id={gid}&direction=egress&fields=id", h.alice))
    assert len(egress["security_group_rules"]) == 3 and {"id": anything["id"]} in egress["security_group_rules"]
    assert set(egress["security_group_rules"][0]) == {"id"}
    assert len((await get(h, f"{SG}/{gid}", h.alice))["security_group"]["security_group_rules"]) == 7
    resp = await h.http.delete(f"{RULE}/{ssh['id']}", headers=h.alice)
    assert resp.status == 204
    await fault(await h.http.get(f"{RULE}/{ssh['id']}", headers=h.alice), 404, "SecurityGroupRuleNotFound")
    await fault(await h.http.delete(f"{RULE}/{ssh['id']}", headers=h.alice), 404, "SecurityGroupRuleNotFound")


async def test_projects_never_see_each_others_groups(h):
    mine = await make_group(h, h.alice, "secret")
    rule = (await make_rule(h, h.alice, mine["id"], protocol="tcp", port_range_min=80,
                            port_range_max=80))["security_group_rule"]
    assert {g["name"] for g in (await get(h, SG, h.bob))["security_groups"]} == {"default"}
    assert (await get(h, f"{SG}?project_id=proj-a", h.bob))["security_groups"] == []
    await fault(await h.http.get(f"{SG}/{mine['id']}", headers=h.bob), 404, "SecurityGroupNotFound")
    await fault(await h.http.delete(f"{SG}/{mine['id']}", headers=h.bob), 404, "SecurityGroupNotFound")
    await fault(await h.http.put(f"{SG}/{mine['id']}", json={"security_group": {"name": "x"}}, headers=h.bob),
                404, "SecurityGroupNotFound")
    await fault(await h.http.get(f"{RULE}/{rule['id']}", headers=h.bob), 404, "SecurityGroupRuleNotFound")
    await fault(await h.http.delete(f"{RULE}/{rule['id']}", headers=h.bob), 404, "SecurityGroupRuleNotFound")
    assert all(r["project_id"] == "proj-b" for r in (await get(h, RULE, h.bob))["security_group_rules"])
    bobs = await default_group(h, h.bob)
    await make_rule(h, h.bob, mine["id"], 404)
    await make_rule(h, h.bob, bobs["id"], 404, remote_group_id=mine["id"])
    # an admin sees every project's groups
    everyone = {g["project_id"] for g in (await get(h, SG, h.admin))["security_groups"]}
    assert {"proj-a", "proj-b"} <= everyone


async def test_quotas_are_counted_and_enforced(h):
    quota = (await get(h, "/network/v2.0/quotas/proj-a/details", h.alice))["quota"]
    assert quota["security_group"]["limit"] == 10 and quota["security_group_rule"]["limit"] == 100
    for i in range(9):  # the default group counts as the tenth
        await make_group(h, h.alice, f"g{i}")
    await fault(await h.http.post(SG, json={"security_group": {"name": "one-too-many"}}, headers=h.alice),
                409, "OverQuota")
    quota = (await get(h, "/network/v2.0/quotas/proj-a/details", h.alice))["quota"]
    # the default group's 4 rules, and the 2 egress rules of each of the 9 others
    assert quota["security_group"]["used"] == 10 and quota["security_group_rule"]["used"] == 22
    default = await default_group(h, h.alice)
    for port in range(1, 79):  # 22 + 78 = 100
        await make_rule(h, h.alice, default["id"], protocol="tcp", port_range_min=port, port_range_max=port)
    await fault(await h.http.post(RULE, json={"security_group_rule": {
        "security_group_id": default["id"], "direction": "ingress", "protocol": "udp"}}, headers=h.alice),
        409, "OverQuota")
    # another project has its own count
    await make_group(h, h.bob, "fine")


async def test_ports_are_in_groups_and_a_group_in_use_stays(h):
    net = (await post(h, NET, h.alice, {"network": {"name": "n"}}))["network"]
    await post(h, SUBNET, h.alice, {"subnet": {"network_id": net["id"], "cidr": "10.0.0.0/24", "ip_version": 4}})
    port = (await post(h, PORT, h.alice, {"port": {"network_id": net["id"]}}))["port"]
    default = await default_group(h, h.alice)
    assert port["security_groups"] == [default["id"]] and port["port_security_enabled"] is True
    web = await make_group(h, h.alice, "web")
    port2 = (await post(h, PORT, h.alice, {"port": {"network_id": net["id"], "security_groups": [web["id"]]}}))["port"]
    assert port2["security_groups"] == [web["id"]]
    shown = (await get(h, f"{PORT}/{port2['id']}", h.alice))["port"]
    assert shown["security_groups"] == [web["id"]]
    listed = {p["id"]: p["security_groups"] for p in (await get(h, PORT, h.alice))["ports"]}
    assert listed == {port["id"]: [default["id"]], port2["id"]: [web["id"]]}
    in_web = (await get(h, f"{PORT}?security_groups={web['id']}", h.alice))["ports"]
    assert [p["id"] for p in in_web] == [port2["id"]]
    bare = (await post(h, PORT, h.alice, {"port": {"network_id": net["id"], "port_security_enabled": False}}))["port"]
    assert bare["security_groups"] == [] and bare["port_security_enabled"] is False
    resp = await h.http.post(PORT, json={"port": {"network_id": net["id"], "port_security_enabled": False,
                                                  "security_groups": [web["id"]]}}, headers=h.alice)
    await fault(resp, 400, "PortSecurityAndIPRequiredForSecurityGroups")
    resp = await h.http.post(PORT, json={"port": {"network_id": net["id"], "security_groups": [str(uuid.uuid4())]}},
                             headers=h.alice)
    await fault(resp, 404, "SecurityGroupNotFound")
    await fault(await h.http.delete(f"{SG}/{web['id']}", headers=h.alice), 409, "SecurityGroupInUse")
    assert (await h.http.delete(f"{PORT}/{port2['id']}", headers=h.alice)).status == 204
    assert (await h.http.delete(f"{SG}/{web['id']}", headers=h.alice)).status == 204
    # a router's or DHCP server's port is in no group unless asked
    dhcp = (await post(h, PORT, h.admin, {"port": {"network_id": net["id"], "device_owner": "network:dhcp"}}))["port"]
    assert dhcp["security_groups"] == []


async def test_instance_ports_join_the_asked_groups_or_the_default_one_once(h):
    from nova_async.network.client import NetworkClient
    from nova_async.network.messages import RequestedNetwork

    net = (await post(h, NET, h.alice, {"network": {"name": "n"}}))["network"]
    await post(h, SUBNET, h.alice, {"subnet": {"network_id": net["id"], "cidr": "10.0.0.0/24", "ip_version": 4}})
    web = await make_group(h, h.alice, "web")
    client = NetworkClient(h.bus)
    asked, plain, fixed = (str(uuid.uuid4()) for _ in range(3))
    # the common path (a whole network), the general one (a fixed address), and a retry of each
    for _ in range(2):
        await client.allocate(asked, "proj-a", "host-1", [RequestedNetwork(network_id=net["id"])], [web["id"]])
        await client.allocate(plain, "proj-a", "host-1", [RequestedNetwork(network_id=net["id"])])
        await client.allocate(fixed, "proj-a", "host-1",
                              [RequestedNetwork(network_id=net["id"], fixed_ip="10.0.0.99")], [web["id"]])
    default = await default_group(h, h.alice)
    for device, wanted in ((asked, [web["id"]]), (plain, [default["id"]]), (fixed, [web["id"]])):
        [port] = (await get(h, f"{PORT}?device_id={device}", h.alice))["ports"]
        assert port["security_groups"] == wanted


async def test_creators_at_once_never_pass_the_quota(h):
    answers = await asyncio.gather(*(h.http.post(SG, json={"security_group": {"name": f"g{i}"}}, headers=h.bob)
                                     for i in range(14)))
    statuses = sorted(r.status for r in answers)
    assert statuses == [201] * 9 + [409] * 5  # the default group is the tenth
    assert await h.pool.fetchval("SELECT count(*) FROM security_groups WHERE project_id = 'proj-b'") == 10



async def test_a_bare_address_gets_its_length(h):
    group = (await post(h, SG, h.alice, {"security_group": {"name": "bare"}}, 201))["security_group"]
    rule = (await make_rule(h, h.alice, group["id"], protocol="tcp", port_range_min=80, port_range_max=80,
                            remote_ip_prefix="192.0.2.7"))["security_group_rule"]
    assert (rule["remote_ip_prefix"], rule["normalized_cidr"]) == ("192.0.2.7/32", "192.0.2.7/32")
