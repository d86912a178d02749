"""Compute API details OpenStack's own suite (Tempest) checks and clients depend on: what
Nova takes and answers, case by case, through the real HTTP stack (issue 23)."""

from __future__ import annotations

import asyncio
import uuid as uuidlib

import pytest

from tests.harness import running
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, settled, wait_status

cloud = test_server_lifecycle.cloud  # the whole cloud, two simulated hosts


async def boot(h) -> str:
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    server = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    return server["id"]


async def test_actions_whose_value_nova_ignores_take_empty_object_or_null(cloud):
    h = cloud
    # Validation passes for either spelling: a missing server is then a 404, not a 400.
    missing = str(uuidlib.uuid4())
    for name in ("os-stop", "os-start", "pause", "unpause", "suspend", "resume", "lock", "unlock",
                 "confirmResize", "revertResize"):
        for value in ({}, None):
            resp = await h.http.post(f"{V}/servers/{missing}/action", headers=h.alice, json={name: value})
            assert resp.status == 404, (name, value, resp.status, await resp.text())

    server_id = await boot(h)
    for action, status in (("os-stop", "SHUTOFF"), ("os-start", "ACTIVE"), ("pause", "PAUSED"),
                           ("unpause", "ACTIVE")):
        await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={action: {}}), 202)
        await wait_status(h, server_id, status)
        await settled(h, server_id)
    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"lock": {}}), 202)
    assert (await settled(h, server_id))["locked"] is True
    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"unlock": {}}), 202)
    # Before 2.73 Nova reads no lock value at all: a reason is not kept, a bad value not refused.
    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice,
                               json={"lock": {"locked_reason": "early"}}), 202)
    assert (await settled(h, server_id))["locked_reason"] is None
    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"unlock": None}), 202)
    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"lock": "yes"}), 202)
    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"unlock": {}}), 202)
    assert (await settled(h, server_id))["locked"] is False


BASE = {"id", "name", "status", "tenant_id", "user_id", "metadata", "hostId", "image", "flavor", "created",
        "updated", "addresses", "accessIPv4", "accessIPv6", "links", "OS-DCF:diskConfig", "progress"}


async def test_update_and_rebuild_answer_the_fields_nova_does_at_each_microversion(cloud):
    h = cloud
    server_id = await boot(h)
    url = f"{V}/servers/{server_id}"

    async def update(version: str, **fields):
        resp = await h.http.put(url, headers={**h.alice, "OpenStack-API-Version": f"compute {version}"},
                                json={"server": fields})
        return (await ok(resp, 200))["server"]

    old = await update("2.1", name="renamed")
    assert set(old) == BASE, set(old) ^ BASE
    assert set(old["addresses"]["net1"][0]) == {"version", "addr"}
    assert "description" in await update("2.19", description="d")
    assert set(await update("2.74", name="again")) == BASE | {"locked", "description", "tags",
                                                               "trusted_image_certificates", "server_groups",
                                                               "locked_reason"}
    new = await update("2.75", description="all")
    assert new["description"] == "all" and new["OS-EXT-STS:vm_state"] == "active"
    assert {"key_name", "config_drive", "OS-EXT-AZ:availability_zone", "OS-SRV-USG:launched_at",
            "os-extended-volumes:volumes_attached"} <= set(new)
    assert "OS-EXT-IPS:type" in new["addresses"]["net1"][0]

    async def rebuild(version: str):
        resp = await h.http.post(f"{url}/action", json={"rebuild": {"imageRef": h.image}},
                                 headers={**h.alice, "OpenStack-API-Version": f"compute {version}"})
        server = (await ok(resp, 202))["server"]
        await settled(h, server_id)
        return server

    old = await rebuild("2.1")
    assert set(old) - {"adminPass", "progress"} == BASE - {"progress"}, set(old)
    assert set(await rebuild("2.57")) >= {"key_name", "user_data", "description"}
    new = await rebuild("2.75")
    assert {"description", "OS-EXT-STS:task_state", "key_name", "user_data", "security_groups"} <= set(new)
    assert new["os-extended-volumes:volumes_attached"] == []
    assert "OS-EXT-SRV-ATTR:user_data" not in new


@pytest.fixture
async def api(pool, tmp_path):
    """The compute API alone (with identity): for what needs no host."""
    async with running(pool, ["identity", "api"], tmp_path) as h:
        yield h


async def test_aggregate_create_answers_neither_hosts_nor_metadata(api):
    h = api
    created = (await ok(await h.http.post(V + "/os-aggregates", headers=h.admin, json={
        "aggregate": {"name": "rack", "availability_zone": "east"}}), 200))["aggregate"]
    assert "hosts" not in created and "metadata" not in created
    assert (created["name"], created["availability_zone"], created["deleted"]) == ("rack", "east", False)
    shown = (await ok(await h.http.get(f"{V}/os-aggregates/{created['id']}", headers=h.admin), 200))["aggregate"]
    assert (shown["hosts"], shown["metadata"]) == ([], {"availability_zone": "east"})


async def test_server_list_filters_by_flavor_image_fixed_ip_and_project_across_projects(cloud):
    h = cloud
    server_id = await boot(h)
    server = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers=h.alice), 200))["server"]
    [addr] = [a["addr"] for a in server["addresses"]["net1"]]

    async def listed(query: str, headers=None) -> list[str]:
        resp = await h.http.get(f"{V}/servers?{query}", headers=headers or h.alice)
        return [s["id"] for s in (await ok(resp, 200))["servers"]]

    assert await listed(f"flavor={h.flavor}") == [server_id]
    assert await listed("flavor=no-such-flavor") == []
    assert await listed(f"image={h.image}") == [server_id]
    assert await listed(f"image={uuidlib.uuid4()}") == []
    assert await listed(f"ip={addr}") == [server_id]
    assert await listed("ip=10.0") == [server_id]            # a prefix matches, as re.match
    assert await listed("ip=0.0") == []                      # not anchored at the start: no
    assert await listed("ip=192.168.") == []
    assert await listed("ip6=10.0", headers={**h.alice, "OpenStack-API-Version": "compute 2.5"}) == [server_id]
    assert (await h.http.get(f"{V}/servers?ip=(", headers=h.alice)).status == 400
    # tenant_id and project_id narrow an all_tenants list; without all_tenants they are ignored.
    assert await listed("all_tenants=1&tenant_id=proj-a", h.admin) == [server_id]
    assert await listed("all_tenants=1&project_id=proj-a", h.admin) == [server_id]
    assert await listed("all_tenants=1&tenant_id=proj-b", h.admin) == []
    assert await listed("tenant_id=proj-a", h.admin) == []
    assert await listed("all_tenants=1", h.admin) == [server_id]
    page = await ok(await h.http.get(f"{V}/servers/detail?limit=1", headers=h.alice), 200)
    assert page["servers_links"][0]["href"].endswith(f"/compute/v2.1/servers/detail?limit=1&marker={server_id}")


async def test_flavor_list_pages_by_flavor_id_with_limit_and_marker(api):
    h = api
    for flavor_id, ram in (("c", 512), ("a", 2048), ("b", 1024)):
        await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": f"f-{flavor_id}", "id": flavor_id, "ram": ram, "vcpus": 1, "disk": 1}}), 200)

    async def ids(query: str) -> list[str]:
        return [f["id"] for f in (await ok(await h.http.get(f"{V}/flavors?{query}", headers=h.alice), 200))["flavors"]]

    assert await ids("") == ["a", "b", "c"]                  # Nova's default order: flavorid
    assert await ids("limit=2") == ["a", "b"]
    page = await ok(await h.http.get(f"{V}/flavors/detail?limit=2&minRam=1", headers=h.alice), 200)
    [link] = page["flavors_links"]
    assert link["rel"] == "next" and link["href"].endswith("/compute/v2.1/flavors/detail?limit=2&minRam=1&marker=b")
    assert "flavors_links" not in await ok(await h.http.get(f"{V}/flavors?limit=4", headers=h.alice), 200)
    assert await ids("limit=2&marker=b") == ["c"]
    assert await ids("marker=a") == ["b", "c"]
    assert await ids("sort_key=memory_mb&sort_dir=desc") == ["a", "b", "c"]
    assert await ids("sort_key=memory_mb&marker=c") == ["b", "a"]
    for bad in ("marker=nope", "limit=-1", "limit=x", "sort_key=color", "sort_dir=up"):
        resp = await h.http.get(f"{V}/flavors/detail?{bad}", headers=h.alice)
        assert resp.status == 400, (bad, resp.status)
        assert "badRequest" in await resp.json()


async def test_quota_values_may_be_numeric_strings(api):
    h = api
    url = V + "/os-quota-sets/proj-a"
    updated = await ok(await h.http.put(url, headers=h.admin, json={
        "quota_set": {"instances": "10", "cores": 20, "ram": "-1", "force": "True"}}), 200)
    assert (updated["quota_set"]["instances"], updated["quota_set"]["cores"], updated["quota_set"]["ram"]) == (
        10, 20, -1)
    assert (await ok(await h.http.get(url, headers=h.alice), 200))["quota_set"]["instances"] == 10
    for bad in ("-2", "ten", "1.5", "2147483648", ""):
        resp = await h.http.put(url, headers=h.admin, json={"quota_set": {"instances": bad}})
        assert resp.status == 400, (bad, resp.status)


async def test_disk_config_is_taken_on_update_and_rebuild_and_shown(cloud):
    h = cloud
    server_id = await boot(h)
    url = f"{V}/servers/{server_id}"
    assert (await ok(await h.http.get(url, headers=h.alice), 200))["server"]["OS-DCF:diskConfig"] == "MANUAL"
    updated = await ok(await h.http.put(url, headers=h.alice, json={"server": {"OS-DCF:diskConfig": "AUTO"}}), 200)
    assert updated["server"]["OS-DCF:diskConfig"] == "AUTO"
    assert (await ok(await h.http.get(url, headers=h.alice), 200))["server"]["OS-DCF:diskConfig"] == "AUTO"
    assert (await h.http.put(url, headers=h.alice, json={"server": {"OS-DCF:diskConfig": "auto"}})).status == 400
    rebuilt = await ok(await h.http.post(f"{url}/action", headers=h.alice, json={
        "rebuild": {"imageRef": h.image, "OS-DCF:diskConfig": "MANUAL"}}), 202)
    assert rebuilt["server"]["OS-DCF:diskConfig"] == "MANUAL"
    await settled(h, server_id)
    bigger = (await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "m1.bigger", "ram": 2048, "vcpus": 1, "disk": 1}}), 200))["flavor"]["id"]
    await ok(await h.http.post(f"{url}/action", headers=h.alice, json={
        "resize": {"flavorRef": bigger, "OS-DCF:diskConfig": "AUTO"}}), 202)
    assert (await wait_status(h, server_id, "VERIFY_RESIZE"))["OS-DCF:diskConfig"] == "AUTO"

    created = await ok(await h.http.post(V + "/servers", headers=h.alice,
                                         json=boot_body(h, **{"OS-DCF:diskConfig": "AUTO"})), 202)
    assert created["server"]["OS-DCF:diskConfig"] == "AUTO"
    assert (await wait_status(h, created["server"]["id"], "ACTIVE"))["OS-DCF:diskConfig"] == "AUTO"


async def test_an_unknown_status_filter_lists_nothing_before_2_38_and_is_refused_from_it(cloud):
    h = cloud
    server_id = await boot(h)

    async def listed(query: str, version: str):
        return await h.http.get(f"{V}/servers?{query}",
                                headers={**h.alice, "OpenStack-API-Version": f"compute {version}"})

    assert (await ok(await listed("status=bogus", "2.37"), 200))["servers"] == []
    assert (await listed("status=bogus", "2.38")).status == 400
    assert [s["id"] for s in (await ok(await listed("status=active", "2.38"), 200))["servers"]] == [server_id]
    assert [s["id"] for s in (await ok(await listed("status=SHUTOFF&status=ACTIVE", "2.38"), 200))["servers"]] == [
        server_id]
    assert (await ok(await listed("status=SHUTOFF", "2.38"), 200))["servers"] == []
    # A status a task gives (REBOOT: active and rebooting) is known, and matches nothing here.
    assert (await ok(await listed("status=REBOOT", "2.38"), 200))["servers"] == []


async def test_access_ipv6_is_answered_in_its_compressed_form(cloud):
    h = cloud
    server_id = await boot(h)
    url = f"{V}/servers/{server_id}"
    updated = await ok(await h.http.put(url, headers=h.alice, json={"server": {
        "accessIPv6": "2001:0DB8:0000:0000:0000:0000:0000:0001", "accessIPv4": "192.0.2.1"}}), 200)
    assert (updated["server"]["accessIPv6"], updated["server"]["accessIPv4"]) == ("2001:db8::1", "192.0.2.1")
    assert (await ok(await h.http.get(url, headers=h.alice), 200))["server"]["accessIPv6"] == "2001:db8::1"


async def test_compute_answers_carry_x_compute_request_id(api):
    h = api
    for resp in (await h.http.get(V + "/flavors", headers=h.alice),
                 await h.http.get(V + "/servers/nope", headers=h.alice),
                 await h.http.get("/compute/")):
        request_id = resp.headers["x-openstack-request-id"]
        assert request_id.startswith("req-") and resp.headers["X-Compute-Request-Id"] == request_id, resp.status


async def test_the_compute_version_list_has_v2_0_beside_the_current_v2_1(api):
    h = api
    versions = {v["id"]: v for v in (await ok(await h.http.get("/compute/"), 200))["versions"]}
    assert versions["v2.1"]["status"] == "CURRENT" and versions["v2.1"]["version"] == "2.104"
    assert versions["v2.0"]["status"] == "DEPRECATED" and versions["v2.0"]["version"] == ""
    assert versions["v2.0"]["links"][0]["href"].endswith("/compute/v2/")


async def test_flavor_list_is_public_takes_every_oslo_boolean_spelling_and_none(api):
    h = api
    await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "open", "id": "open", "ram": 512, "vcpus": 1, "disk": 1}}), 200)
    await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "closed", "id": "closed", "ram": 512, "vcpus": 1, "disk": 1, "os-flavor-access:is_public": False}}),
        200)

    async def ids(query: str, headers=None) -> set[str]:
        resp = await h.http.get(f"{V}/flavors?{query}", headers=headers or h.admin)
        return {f["id"] for f in (await ok(resp, 200))["flavors"]}

    assert await ids("") == {"open"}
    for word in ("f", "F", "0", "false", "no", "n", "off"):
        assert await ids(f"is_public={word}") == {"closed"}, word
    for word in ("t", "1", "True", "yes", "y", "on"):
        assert await ids(f"is_public={word}") == {"open"}, word
    assert await ids("is_public=none") == await ids("is_public=None") == {"open", "closed"}
    assert await ids("is_public=f", h.alice) == {"open"}       # members see public flavors only
    assert (await h.http.get(f"{V}/flavors?is_public=maybe", headers=h.admin)).status == 400


async def test_metadata_over_its_quota_is_a_403_on_create_as_on_change(cloud):
    h = cloud
    too_many = {f"k{i}": "v" for i in range(129)}            # the default quota is 128
    resp = await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, metadata=too_many))
    assert resp.status == 403, await resp.text()
    assert "metadata items" in (await resp.json())["forbidden"]["message"]
    await ok(await h.http.put(V + "/os-quota-sets/proj-a", headers=h.admin,
                              json={"quota_set": {"metadata_items": 1}}), 200)
    resp = await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, metadata={"a": "1", "b": "2"}))
    assert resp.status == 403
    server_id = await boot(h)
    resp = await h.http.post(f"{V}/servers/{server_id}/metadata", headers=h.alice,
                             json={"metadata": {"a": "1", "b": "2"}})
    assert resp.status == 403


async def test_a_bad_console_token_opens_the_websocket_and_closes_it_with_nothing_sent(api):
    h = api
    for console in ("vnc", "serial"):
        reader, writer = await asyncio.open_connection(h.http.server.host, h.http.server.port)
        try:
            writer.write((f"GET /compute/console/{console}?token=not-a-token HTTP/1.1\r\nHost: x\r\n"
                          "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: binary\r\n"
                          "\r\n").encode())
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 101"), head
            assert await reader.read() == b""                 # no frame, not even a close frame
        finally:
            writer.close()
            await writer.wait_closed()
    # Not a WebSocket request at all: a plain 401.
    resp = await h.http.get("/compute/console/vnc?token=not-a-token")
    assert resp.status == 401 and "unauthorized" in await resp.json()


async def test_the_legacy_v2_0_api_is_v2_1_at_its_base_version(api):
    h = api
    listed = {v["id"]: v for v in (await ok(await h.http.get("/compute/"), 200))["versions"]}
    for version in listed.values():
        self_link = [link for link in version["links"] if link["rel"] == "self"]
        path = "/compute/" + self_link[0]["href"].split("/compute/", 1)[1]
        shown = (await ok(await h.http.get(path), 200))["version"]
        assert shown["id"] == version["id"] and [link for link in shown["links"] if link["rel"] == "self"] == self_link
    # Microversion headers are not read there, and none come back.
    resp = await h.http.get("/compute/v2/flavors", headers={**h.alice, "OpenStack-API-Version": "compute 2.9999"})
    assert resp.status == 200 and "OpenStack-API-Version" not in resp.headers
    assert "X-Compute-Request-Id" in resp.headers


async def test_extensions_list_names_what_tempest_looks_for(api):
    h = api
    listed = (await ok(await h.http.get(V + "/extensions", headers=h.alice), 200))["extensions"]
    assert {"Hosts", "Consoles", "ServerExternalEvents"} <= {e["name"] for e in listed}
    shown = await ok(await h.http.get(V + "/extensions/os-consoles", headers=h.alice), 200)
    assert shown["extension"]["alias"] == "os-consoles"


async def test_security_group_rule_parent_must_be_a_uuid(api):
    h = api
    resp = await h.http.post(V + "/os-security-group-rules", headers=h.alice, json={"security_group_rule": {
        "parent_group_id": "not-a-uuid", "ip_protocol": "tcp", "from_port": 22, "to_port": 22}})
    assert resp.status == 400, await resp.text()


def mv(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


async def test_microversions_2_98_to_2_104_image_properties_hints_and_pinning(cloud):
    h = cloud
    patch = [{"op": "add", "path": "/hw_rng_model", "value": "virtio"}, {"op": "add", "path": "/note", "value": "x"}]
    await ok(await h.http.patch(f"/image/v2/images/{h.image}", json=patch, headers={
        **h.alice, "Content-Type": "application/openstack-images-v2.1-json-patch"}), 200)
    server_id = await boot(h)
    url = f"{V}/servers/{server_id}"
    shown = (await ok(await h.http.get(url, headers={**h.alice, **mv("2.98")}), 200))["server"]
    assert shown["image"]["properties"] == {"hw_rng_model": "virtio"}   # the names Nova knows, no others
    assert "scheduler_hints" not in shown
    assert "properties" not in (await ok(await h.http.get(url, headers={**h.alice, **mv("2.97")}), 200))["server"][
        "image"]
    shown = (await ok(await h.http.get(url, headers={**h.alice, **mv("2.100")}), 200))["server"]
    assert shown["scheduler_hints"] == {}

    async def pin(zone, status=200, version="2.104"):
        resp = await h.http.put(url, headers={**h.alice, **mv(version)}, json={"server": {
            "pinned_availability_zone": zone}})
        return (await ok(resp, status)).get("server")

    assert (await pin(None))["pinned_availability_zone"] is None
    await pin("elsewhere", 409)                      # only the zone it is in now
    assert (await pin("nova"))["pinned_availability_zone"] == "nova"
    assert (await pin("nova"))["pinned_availability_zone"] == "nova"   # again: nothing to do
    await pin(None)
    await pin("nova", 400, version="2.103")          # not a field before 2.104


async def test_2_102_drops_flavor_fields_filters_names_and_refuses_unknown_query_parameters(api):
    h = api
    await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "tiny.one", "id": "t1", "ram": 512, "vcpus": 1, "disk": 1}}), 200)
    await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "big.one", "id": "b1", "ram": 512, "vcpus": 1, "disk": 1}}), 200)
    new = (await ok(await h.http.get(V + "/flavors/t1", headers={**h.alice, **mv("2.102")}), 200))["flavor"]
    assert "rxtx_factor" not in new and "OS-FLV-DISABLED:disabled" not in new
    assert "rxtx_factor" in (await ok(await h.http.get(V + "/flavors/t1", headers=h.alice), 200))["flavor"]
    named = await ok(await h.http.get(V + "/flavors?name=^tiny", headers={**h.alice, **mv("2.102")}), 200)
    assert [f["id"] for f in named["flavors"]] == ["t1"]
    await ok(await h.http.get(V + "/flavors?name=(", headers={**h.alice, **mv("2.102")}), 400)
    await ok(await h.http.post(V + "/flavors", headers={**h.admin, **mv("2.102")}, json={"flavor": {
        "name": "x", "ram": 512, "vcpus": 1, "disk": 1, "rxtx_factor": 1.0}}), 400)

    # Unknown query parameters: a 400 from 2.102 everywhere, from 2.75 on the server list.
    await ok(await h.http.get(V + "/os-availability-zone?bogus=1", headers={**h.alice, **mv("2.101")}), 200)
    refused = await ok(await h.http.get(V + "/os-availability-zone?bogus=1", headers={**h.alice, **mv("2.102")}), 400)
    assert "bogus" in refused["badRequest"]["message"]
    await ok(await h.http.get(V + "/flavors?limit=1&sort_key=name", headers={**h.alice, **mv("2.102")}), 200)
    await ok(await h.http.get(V + "/servers?bogus=1", headers={**h.alice, **mv("2.74")}), 200)
    await ok(await h.http.get(V + "/servers?bogus=1", headers={**h.alice, **mv("2.75")}), 400)
    await ok(await h.http.get(V + "/servers?_=123&name=x&all_tenants=0", headers={**h.alice, **mv("2.75")}), 200)
    # The legacy v2.0 API reads no microversion: nothing is refused there.
    await ok(await h.http.get("/compute/v2/servers?bogus=1", headers={**h.alice, **mv("2.102")}), 200)


async def test_2_97_shares_none_to_attach_without_a_share_service(cloud):
    h = cloud
    server_id = await boot(h)
    url, share = f"{V}/servers/{server_id}/shares", "6fd6fe1e-6f2c-4e7d-9d3f-1a2b3c4d5e6f"
    await ok(await h.http.get(url, headers={**h.alice, **mv("2.96")}), 404)
    assert (await ok(await h.http.get(url, headers={**h.alice, **mv("2.97")}), 200)) == {"shares": []}
    await ok(await h.http.get(url, headers={**h.bob, **mv("2.97")}), 404)   # another project's server
    await ok(await h.http.post(url, headers={**h.alice, **mv("2.97")}, json={"share": {"share_id": share}}), 404)
    await ok(await h.http.post(url, headers={**h.alice, **mv("2.97")}, json={"share": {"share_id": "x"}}), 400)
    await ok(await h.http.get(f"{url}/{share}", headers={**h.alice, **mv("2.97")}), 404)
    await ok(await h.http.delete(f"{url}/{share}", headers={**h.alice, **mv("2.97")}), 404)
    # spice-direct is a type from 2.99: unavailable here (no SPICE), so a 400 either way.
    resp = await h.http.post(f"{V}/servers/{server_id}/remote-consoles", headers={**h.alice, **mv("2.99")},
                             json={"remote_console": {"protocol": "spice", "type": "spice-direct"}})
    assert resp.status == 400 and "Unavailable" in await resp.text()


async def test_external_events_for_a_server_on_a_host_are_accepted(cloud):
    h = cloud
    server_id = await boot(h)
    events = {"events": [{"name": "network-changed", "server_uuid": server_id, "tag": "port"},
                         {"name": "network-vif-plugged", "server_uuid": server_id, "status": "failed"}]}
    answer = await ok(await h.http.post(V + "/os-server-external-events", headers=h.admin, json=events), 200)
    assert [(e["code"], e["status"]) for e in answer["events"]] == [(200, "completed"), (200, "completed")]
    resp = await h.http.post(V + "/os-server-external-events", headers=h.alice, json=events)
    assert resp.status == 403


async def test_an_unknown_path_with_a_query_stays_a_404_at_2_102(api):
    h = api
    resp = await h.http.get(V + "/nowhere?bogus=1", headers={**h.alice, **mv("2.102")})
    assert resp.status == 404
