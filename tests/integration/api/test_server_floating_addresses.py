"""A floating IP associated with a server's port shows in the server's addresses as Nova
shows it (type floating, the port's MAC, after the fixed address), in /ips too, and on the
event stream as a `server` event; disassociating or deleting it takes it away again, and
another project sees none of it."""

from __future__ import annotations

from nova_async.network import instance_addresses
from tests.integration.api import test_floating_ip_proxy
from tests.integration.api.test_floating_ip_proxy import FIPS, OLD, _routed_server
from tests.integration.test_event_stream import insert_servers, open_stream
from tests.integration.test_server_lifecycle import V, ok, wait_status

cloud = test_floating_ip_proxy.cloud
NEUTRON_FIPS = "/network/v2.0/floatingips"


async def _server(h, server_id: str, headers=None) -> dict:
    return (await ok(await h.http.get(f"{V}/servers/{server_id}", headers=headers or h.alice), 200))["server"]


async def _port_of(h, server_id: str) -> dict:
    found = await ok(await h.http.get("/network/v2.0/ports", params={"device_id": server_id}, headers=h.alice), 200)
    return found["ports"][0]


async def _new_fip(h) -> dict:
    public = (await ok(await h.http.get("/network/v2.0/networks", params={"name": "public"}, headers=h.alice),
                       200))["networks"][0]
    return (await ok(await h.http.post(NEUTRON_FIPS, headers=h.alice, json={
        "floatingip": {"floating_network_id": public["id"]}}), 201))["floatingip"]


async def _associate(h, fip_id: str, port_id: str | None) -> dict:
    return (await ok(await h.http.put(f"{NEUTRON_FIPS}/{fip_id}", headers=h.alice, json={
        "floatingip": {"port_id": port_id}}), 200))["floatingip"]


async def test_an_associated_floating_ip_shows_in_addresses_and_ips_until_disassociated(cloud):
    h = cloud
    server = await _routed_server(h)
    port = await _port_of(h, server["id"])
    fixed = server["addresses"]["net1"][0]
    fip = await _new_fip(h)

    await _associate(h, fip["id"], port["id"])
    floating = {"version": 4, "addr": fip["floating_ip_address"], "OS-EXT-IPS:type": "floating",
                "OS-EXT-IPS-MAC:mac_addr": port["mac_address"]}
    assert (await _server(h, server["id"]))["addresses"] == {"net1": [fixed, floating]}
    detail = (await ok(await h.http.get(f"{V}/servers/detail", headers=h.alice), 200))["servers"]
    assert [s["addresses"] for s in detail if s["id"] == server["id"]] == [{"net1": [fixed, floating]}]
    # /ips agrees, with version and address only, as Nova's
    plain = [{"version": 4, "addr": fixed["addr"]}, {"version": 4, "addr": fip["floating_ip_address"]}]
    assert await ok(await h.http.get(f"{V}/servers/{server['id']}/ips", headers=h.alice), 200) == \
        {"addresses": {"net1": plain}}
    assert await ok(await h.http.get(f"{V}/servers/{server['id']}/ips/net1", headers=h.alice), 200) == \
        {"net1": plain}
    # associating it again changes nothing
    await _associate(h, fip["id"], port["id"])
    assert (await _server(h, server["id"]))["addresses"] == {"net1": [fixed, floating]}
    # another project sees neither the server nor its addresses
    await ok(await h.http.get(f"{V}/servers/{server['id']}", headers=h.bob), 404)
    await ok(await h.http.get(f"{V}/servers/{server['id']}/ips", headers=h.bob), 404)
    assert (await ok(await h.http.get(f"{V}/servers/detail", headers=h.bob), 200))["servers"] == []

    await _associate(h, fip["id"], None)
    assert (await _server(h, server["id"]))["addresses"] == {"net1": [fixed]}
    assert await ok(await h.http.get(f"{V}/servers/{server['id']}/ips", headers=h.alice), 200) == \
        {"addresses": {"net1": [{"version": 4, "addr": fixed["addr"]}]}}


async def test_a_deleted_floating_ip_leaves_the_addresses(cloud):
    h = cloud
    server = await _routed_server(h)
    port = await _port_of(h, server["id"])
    fip = await _new_fip(h)
    await _associate(h, fip["id"], port["id"])
    assert len((await _server(h, server["id"]))["addresses"]["net1"]) == 2

    await ok(await h.http.delete(f"{NEUTRON_FIPS}/{fip['id']}", headers=h.alice), 204)
    addresses = (await _server(h, server["id"]))["addresses"]["net1"]
    assert [a["OS-EXT-IPS:type"] for a in addresses] == ["fixed"]


async def test_compute_add_and_remove_floating_ip_show_in_addresses(cloud):
    h = cloud
    server = await _routed_server(h)
    fip = (await ok(await h.http.post(FIPS, headers=h.alice, json={}), 200))["floating_ip"]
    await ok(await h.http.post(f"{V}/servers/{server['id']}/action", headers={**h.alice, **OLD},
                               json={"addFloatingIp": {"address": fip["ip"]}}), 202)
    addresses = (await _server(h, server["id"]))["addresses"]["net1"]
    assert [(a["addr"], a["OS-EXT-IPS:type"]) for a in addresses][1:] == [(fip["ip"], "floating")]
    await ok(await h.http.post(f"{V}/servers/{server['id']}/action", headers={**h.alice, **OLD},
                               json={"removeFloatingIp": {"address": fip["ip"]}}), 202)
    addresses = (await _server(h, server["id"]))["addresses"]["net1"]
    assert [a["OS-EXT-IPS:type"] for a in addresses] == ["fixed"]


async def test_the_event_stream_shows_the_floating_ip_come_and_go(cloud):
    h = cloud
    server = await _routed_server(h)
    port = await _port_of(h, server["id"])
    fip = await _new_fip(h)
    address = fip["floating_ip_address"]

    def floating(data: dict) -> list[str]:
        return [a["addr"] for a in data.get("addresses", {}).get("net1", []) if a["OS-EXT-IPS:type"] == "floating"]

    mine = await open_stream(h, h.alice, f"?server={server['id']}")
    bobs = await open_stream(h, h.bob)
    try:
        await _associate(h, fip["id"], port["id"])
        _, _, data = await mine.until(lambda _id, kind, d: kind == "server" and floating(d) == [address])
        assert data["id"] == server["id"]
        await _associate(h, fip["id"], None)
        await mine.until(lambda _id, kind, d: kind == "server" and floating(d) == [])
        # bob's stream has had nothing of alice's: the next thing it gets is his own server
        [theirs] = await insert_servers(h.cell1, 1, "proj-b")
        _, _, data = await bobs.next()
        assert data["id"] == theirs and data["tenant_id"] == "proj-b"
    finally:
        await mine.close()
        await bobs.close()


async def test_a_server_booted_on_a_port_with_a_floating_ip_shows_it_from_the_start(cloud):
    h = cloud
    await _routed_server(h)   # makes the router that joins net1 to public
    port = (await ok(await h.http.post("/network/v2.0/ports", headers=h.alice, json={
        "port": {"network_id": h.net}}), 201))["port"]
    fip = await _new_fip(h)
    await _associate(h, fip["id"], port["id"])
    body = {"server": {"name": "on-port", "imageRef": h.image, "flavorRef": h.flavor,
                       "networks": [{"port": port["id"]}]}}
    sid = (await ok(await h.http.post(f"{V}/servers", headers=h.alice, json=body), 202))["server"]["id"]
    server = await wait_status(h, sid, "ACTIVE")
    assert [(a["addr"], a["OS-EXT-IPS:type"], a["OS-EXT-IPS-MAC:mac_addr"]) for a in server["addresses"]["net1"]] == \
        [(port["fixed_ips"][0]["ip_address"], "fixed", port["mac_address"]),
         (fip["floating_ip_address"], "floating", port["mac_address"])]


async def test_addresses_a_crash_left_behind_are_made_right_by_the_reconcile_pass(cloud):
    """A crash between the association's commit and the refresh leaves the server's addresses
    behind the network tables; the pass the network role runs at start (and each time the
    database is back) catches up, both ways."""
    h = cloud
    server = await _routed_server(h)
    port = await _port_of(h, server["id"])
    fip = await _new_fip(h)
    # as if the process died right after committing: the network tables alone know
    await h.pool.execute("UPDATE floatingips SET port_id = $2, fixed_ip_address = $3 WHERE id = $1",
                         fip["id"], port["id"], port["fixed_ips"][0]["ip_address"])
    assert len((await _server(h, server["id"]))["addresses"]["net1"]) == 1
    await instance_addresses.reconcile(h.pool, h.deps.cells)
    assert [a["addr"] for a in (await _server(h, server["id"]))["addresses"]["net1"]][1:] == \
        [fip["floating_ip_address"]]
    await h.pool.execute("UPDATE floatingips SET port_id = NULL WHERE id = $1", fip["id"])
    await instance_addresses.reconcile(h.pool, h.deps.cells)
    assert len((await _server(h, server["id"]))["addresses"]["net1"]) == 1
