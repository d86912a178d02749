"""Security groups from Nova's side, through every role of the cloud: a boot names groups
(by name or id, resolved when it is accepted) and its ports join them; a server shows the
groups on its ports; addSecurityGroup / removeSecurityGroup; a server's os-security-groups;
and the deprecated os-security-groups proxy, gone from microversion 2.36 as in Nova."""

from __future__ import annotations

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, show_server, wait_status

cloud = test_server_lifecycle.cloud  # the whole cloud, two simulated hosts

SG = "/network/v2.0/security-groups"
PROXY = {"OpenStack-API-Version": "compute 2.35"}
NEW = {"OpenStack-API-Version": "compute 2.36"}


async def group(h, headers, name):
    return (await ok(await h.http.post(SG, headers=headers, json={"security_group": {"name": name}}),
                     201))["security_group"]


async def port_groups(h, server_id):
    ports = (await ok(await h.http.get(f"/network/v2.0/ports?device_id={server_id}", headers=h.alice), 200))["ports"]
    assert ports
    return [sorted(p["security_groups"]) for p in ports]


async def boot(h, **extra) -> str:
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, **extra)), 202)
    server = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    return server["id"]


def act(h, server_id, body, headers=None):
    return h.http.post(f"{V}/servers/{server_id}/action", headers=headers or h.alice, json=body)


async def test_boot_with_groups_by_name_or_id_and_change_them(cloud):
    h = cloud
    web = await group(h, h.alice, "web")
    ssh = await group(h, h.alice, "ssh")
    server_id = await boot(h, security_groups=[{"name": "web"}, {"name": ssh["id"]}])
    assert await port_groups(h, server_id) == [sorted([web["id"], ssh["id"]])]
    shown = await show_server(h, server_id)
    assert sorted(g["name"] for g in shown["security_groups"]) == ["ssh", "web"]

    resp = await act(h, server_id, {"addSecurityGroup": {"name": "default"}})
    assert resp.status == 202, await resp.text()
    default = (await ok(await h.http.get(f"{SG}?name=default", headers=h.alice), 200))["security_groups"][0]
    assert await port_groups(h, server_id) == [sorted([web["id"], ssh["id"], default["id"]])]
    resp = await act(h, server_id, {"removeSecurityGroup": {"name": "web"}})
    assert resp.status == 202, await resp.text()
    detail = (await ok(await h.http.get(f"{V}/servers/detail", headers=h.alice), 200))["servers"]
    assert sorted(g["name"] for g in detail[0]["security_groups"]) == ["default", "ssh"]

    # Nova's answers for what cannot be done
    resp = await act(h, server_id, {"addSecurityGroup": {"name": "nope"}})
    assert resp.status == 404, await resp.text()
    assert "itemNotFound" in await resp.json()
    resp = await act(h, server_id, {"removeSecurityGroup": {"name": "web"}})
    assert resp.status == 400 and "badRequest" in await resp.json()
    resp = await act(h, server_id, {"addSecurityGroup": {"name": "ssh"}})
    assert resp.status == 400
    resp = await act(h, server_id, {"addSecurityGroup": {}})
    assert resp.status == 400
    # another project's server does not exist for bob, nor does alice's group
    resp = await act(h, server_id, {"addSecurityGroup": {"name": "default"}}, headers=h.bob)
    assert resp.status == 404
    # a group in use by a port stays
    resp = await h.http.delete(f"{SG}/{ssh['id']}", headers=h.alice)
    assert resp.status == 409 and (await resp.json())["NeutronError"]["type"] == "SecurityGroupInUse"

    resp = await h.http.get(f"{V}/servers/{server_id}/os-security-groups", headers=h.bob)
    assert resp.status == 404
    mine = (await ok(await h.http.get(f"{V}/servers/{server_id}/os-security-groups", headers=h.alice),
                     200))["security_groups"]
    assert [g["name"] for g in mine] == ["default", "ssh"]
    default_rules = mine[0]["rules"]
    assert len(default_rules) == 2  # the ingress ones: from members of the group
    assert all(r["group"] == {"name": "default", "tenant_id": "proj-a"} for r in default_rules)


async def test_a_boot_without_groups_gets_the_default_one_and_unknown_ones_are_refused(cloud):
    h = cloud
    resp = await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, security_groups=[{"name": "nope"}]))
    assert resp.status == 400
    assert "Unable to find security_group with name or id 'nope'" in (await resp.json())["badRequest"]["message"]
    # bob's group is not alice's to name
    bobs = await group(h, h.bob, "bobs")
    resp = await h.http.post(V + "/servers", headers=h.alice,
                             json=boot_body(h, security_groups=[{"name": bobs["id"]}]))
    assert resp.status == 400
    server_id = await boot(h)
    shown = await show_server(h, server_id)
    assert shown["security_groups"] == [{"name": "default"}]
    groups = (await ok(await h.http.get(SG, headers=h.alice), 200))["security_groups"]
    assert [g["name"] for g in groups] == ["default"]
    assert await port_groups(h, server_id) == [[groups[0]["id"]]]


async def test_the_os_security_groups_proxy_up_to_2_35(cloud):
    h = cloud
    made = await ok(await h.http.post(f"{V}/os-security-groups", headers={**h.alice, **PROXY},
                                      json={"security_group": {"name": "old", "description": "novaclient"}}), 200)
    group_id = made["security_group"]["id"]
    assert made["security_group"] == {"id": group_id, "name": "old", "description": "novaclient",
                                      "tenant_id": "proj-a", "rules": []}
    rule = await ok(await h.http.post(f"{V}/os-security-group-rules", headers={**h.alice, **PROXY}, json={
        "security_group_rule": {"parent_group_id": group_id, "ip_protocol": "tcp", "from_port": 22,
                                "to_port": 22, "cidr": "10.0.0.0/8"}}), 200)
    assert rule["security_group_rule"]["ip_range"] == {"cidr": "10.0.0.0/8"}
    assert (rule["security_group_rule"]["from_port"], rule["security_group_rule"]["to_port"]) == (22, 22)
    listed = (await ok(await h.http.get(f"{V}/os-security-groups", headers={**h.alice, **PROXY}),
                       200))["security_groups"]
    assert [g["name"] for g in listed] == ["default", "old"]
    shown = (await ok(await h.http.get(f"{V}/os-security-groups/{group_id}", headers={**h.alice, **PROXY}),
                      200))["security_group"]
    assert [r["id"] for r in shown["rules"]] == [rule["security_group_rule"]["id"]]
    updated = await ok(await h.http.put(f"{V}/os-security-groups/{group_id}", headers={**h.alice, **PROXY},
                                        json={"security_group": {"name": "older", "description": "d"}}), 200)
    assert updated["security_group"]["name"] == "older"
    resp = await h.http.get(f"{V}/os-security-groups/{group_id}", headers={**h.bob, **PROXY})
    assert resp.status == 404
    resp = await h.http.get(f"{V}/os-security-groups", headers={**h.alice, **NEW})
    assert resp.status == 404
    resp = await h.http.delete(f"{V}/os-security-group-rules/{rule['security_group_rule']['id']}",
                               headers={**h.alice, **PROXY})
    assert resp.status == 202
    resp = await h.http.delete(f"{V}/os-security-groups/{group_id}", headers={**h.alice, **PROXY})
    assert resp.status == 202
    resp = await h.http.get(f"{V}/os-security-groups/{group_id}", headers={**h.alice, **PROXY})
    assert resp.status == 404


async def test_a_port_the_user_made_keeps_its_own_groups(cloud):
    h = cloud
    web = await group(h, h.alice, "web")
    port = (await ok(await h.http.post("/network/v2.0/ports", headers=h.alice, json={"port": {
        "network_id": h.net, "security_groups": [web["id"]]}}), 201))["port"]
    server_id = await boot(h, networks=[{"port": port["id"]}], security_groups=[{"name": "default"}])
    assert await port_groups(h, server_id) == [[web["id"]]]
    assert (await show_server(h, server_id))["security_groups"] == [{"name": "web"}]


async def test_a_port_without_port_security_takes_no_group(cloud):
    h = cloud
    port = (await ok(await h.http.post("/network/v2.0/ports", headers=h.alice, json={"port": {
        "network_id": h.net, "port_security_enabled": False}}), 201))["port"]
    server_id = await boot(h, networks=[{"port": port["id"]}])
    assert "security_groups" not in await show_server(h, server_id)
    resp = await act(h, server_id, {"addSecurityGroup": {"name": "default"}})
    assert resp.status == 400, await resp.text()
    assert await port_groups(h, server_id) == [[]]
