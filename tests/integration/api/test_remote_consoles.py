"""Remote console URLs, their single-use tokens at the proxy, and server diagnostics, on
libvirt's test driver (real guests: tests/e2e/test_serial_console.py)."""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs, unquote, urlsplit

import aiohttp
import pytest

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud


def mv(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


async def active_server(h) -> str:
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    server_id = created["server"]["id"]
    await wait_status(h, server_id, "ACTIVE")
    return server_id


async def remote_console(h, server_id: str, protocol: str, type_: str, *, headers=None, version="2.6"):
    return await h.http.post(f"{V}/servers/{server_id}/remote-consoles", headers={**(headers or h.alice),
                             **mv(version)}, json={"remote_console": {"protocol": protocol, "type": type_}})


def token_of(url: str) -> str:
    query = parse_qs(urlsplit(url).query)
    if "path" in query:   # noVNC: the WebSocket path (with its token) is itself in the query
        query = parse_qs(urlsplit(unquote(query["path"][0])).query)
    return query["token"][0]


async def test_serial_and_novnc_urls_in_both_api_shapes(cloud):
    h = cloud
    server_id = await active_server(h)
    serial = await ok(await remote_console(h, server_id, "serial", "serial"), 200)
    assert serial["remote_console"]["protocol"] == "serial" and serial["remote_console"]["type"] == "serial"
    url = urlsplit(serial["remote_console"]["url"])
    assert (url.scheme, url.path) == ("ws", "/compute/console/serial")

    vnc = (await ok(await remote_console(h, server_id, "vnc", "novnc", version="2.96"), 200))["remote_console"]
    assert (vnc["protocol"], vnc["type"]) == ("vnc", "novnc")
    page = urlsplit(vnc["url"])
    assert (page.scheme, page.path) == ("http", "/compute/console/novnc/vnc_lite.html")
    # noVNC opens ws://<the page's host:port>/<path>: a path relative to the root.
    assert unquote(parse_qs(page.query)["path"][0]).startswith("compute/console/vnc?token=")

    # Before 2.6 the same come from server actions; from 2.6 those are gone.
    act = f"{V}/servers/{server_id}/action"
    legacy = await ok(await h.http.post(act, headers=h.alice, json={"os-getVNCConsole": {"type": "novnc"}}), 200)
    assert legacy["console"]["type"] == "novnc" and "vnc_lite.html" in legacy["console"]["url"]
    legacy = await ok(await h.http.post(act, headers=h.alice, json={"os-getSerialConsole": {"type": "serial"}}), 200)
    assert legacy["console"]["type"] == "serial" and legacy["console"]["url"].startswith("ws://")
    assert (await h.http.post(act, headers={**h.alice, **mv("2.6")},
                              json={"os-getVNCConsole": {"type": "novnc"}})).status == 404
    assert (await remote_console(h, server_id, "vnc", "novnc", version="2.5")).status == 404

    # Every URL has its own token, and the database keeps only a digest of it.
    tokens = {token_of(u) for u in (serial["remote_console"]["url"], vnc["url"], legacy["console"]["url"])}
    assert len(tokens) == 3
    stored = {r["token_hash"] for r in await h.cell1.fetch("SELECT token_hash FROM console_auth_tokens")}
    assert len(stored) == 4 and not tokens & stored


@pytest.mark.parametrize(("version", "protocol", "type_", "status"), [
    ("2.6", "vnc", "serial", 400),          # a type of another protocol
    ("2.6", "serial", "novnc", 400),
    ("2.6", "telnet", "serial", 400),       # not a protocol at all
    ("2.6", "vnc", "html5", 400),
    ("2.6", "spice", "spice-html5", 400),   # Nova's vocabulary, not enabled here
    ("2.6", "rdp", "rdp-html5", 400),
    ("2.6", "vnc", "xvpvnc", 400),
    ("2.6", "mks", "webmks", 400),          # a schema error before 2.8 ...
    ("2.8", "mks", "webmks", 400),          # ... and unavailable after
])
async def test_console_types_nova_refuses(cloud, version, protocol, type_, status):
    h = cloud
    server_id = await active_server(h)
    resp = await remote_console(h, server_id, protocol, type_, version=version)
    assert resp.status == status, await resp.text()
    assert "badRequest" in await resp.json()


async def test_who_and_when_a_console_can_be_opened(cloud):
    h = cloud
    server_id = await active_server(h)
    assert (await remote_console(h, server_id, "serial", "serial", headers=h.bob)).status == 404
    assert (await remote_console(h, "6f0d4c51-0000-4000-8000-000000000000", "serial", "serial")).status == 404
    assert (await remote_console(h, "vm1", "serial", "serial")).status == 404
    resp = await h.http.post(f"{V}/servers/{server_id}/remote-consoles", headers={**h.alice, **mv("2.6")},
                             json={"remote_console": {"protocol": "serial"}})
    assert resp.status == 400
    # An admin may open any project's console.
    assert (await remote_console(h, server_id, "serial", "serial", headers=h.admin)).status == 200

    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"os-stop": None}), 202)
    await wait_status(h, server_id, "SHUTOFF")
    for protocol, type_ in (("serial", "serial"), ("vnc", "novnc")):
        resp = await remote_console(h, server_id, protocol, type_)
        assert resp.status == 409 and "conflictingRequest" in await resp.json()


DROPPED = "dropped"   # the WebSocket opened, then the connection closed with nothing sent: a token refused


async def proxy_status(h, path: str, token: str, **headers: str) -> int | str:
    """The HTTP status of a refusal before the upgrade, DROPPED for one after it, 101 for a
    console that opened."""
    try:
        ws = await h.http.ws_connect(f"/compute/console/{path}?token={token}", headers=headers)
    except aiohttp.WSServerHandshakeError as exc:
        return exc.status
    msg = await ws.receive(timeout=30)
    await ws.close()
    if msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
        return DROPPED
    return 101


async def test_the_proxy_spends_a_token_once_and_only_for_its_console(cloud):
    h = cloud
    server_id = await active_server(h)

    async def token(protocol: str, type_: str) -> str:
        body = await ok(await remote_console(h, server_id, protocol, type_), 200)
        return token_of(body["remote_console"]["url"])

    assert await proxy_status(h, "serial", "not-a-token") == DROPPED
    assert await proxy_status(h, "serial", "") == DROPPED
    # A noVNC token does not open the serial console (nor is it spent trying).
    vnc = await token("vnc", "novnc")
    assert await proxy_status(h, "serial", vnc) == DROPPED
    # A page of another site cannot use a user's URL.
    assert await proxy_status(h, "vnc", vnc, Origin="http://evil.example") == 403

    # Accepted, and then the compute host is asked for the guest's console: libvirt's test
    # driver runs no guest, so there is none (400, Nova's "unavailable console type").
    serial = await token("serial", "serial")
    assert await proxy_status(h, "serial", serial) == 400
    assert await proxy_status(h, "serial", serial) == DROPPED      # spent
    assert await proxy_status(h, "vnc", vnc) == 400
    assert await proxy_status(h, "vnc", vnc) == DROPPED

    # A token nobody used in its lifetime has expired.
    stale = await token("serial", "serial")
    await h.cell1.execute("UPDATE console_auth_tokens SET expires_at = now() - interval '1 second'")
    assert await proxy_status(h, "serial", stale) == DROPPED

    # A deleted server's tokens open nothing.
    late = await token("serial", "serial")
    await ok(await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice), 204)
    await wait_status(h, server_id, "GONE")
    assert await proxy_status(h, "serial", late) == DROPPED


async def raw_get(h, target: str) -> tuple[int, bytes]:
    """A GET of `target` exactly as written (clients normalise dot segments away)."""
    reader, writer = await asyncio.open_connection(h.http.server.host, h.http.server.port)
    try:
        writer.write(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        reply = await reader.read()
    finally:
        writer.close()
        await writer.wait_closed()
    return int(reply.split(b" ", 2)[1]), reply


async def test_novnc_files_are_served_without_escaping_their_directory(cloud):
    h = cloud
    for path in ("../../../etc/passwd", "%2e%2e/%2e%2e/%2e%2e/etc/passwd", "app/..%2f..%2f..%2fetc/passwd",
                 "%2fetc/passwd", "", "app/"):
        status, reply = await raw_get(h, f"/compute/console/novnc/{path}")
        assert status in (401, 404) and b"root:" not in reply, (path, reply[:300])
    resp = await h.http.get("/compute/console/novnc/vnc_lite.html")
    if resp.status == 200:   # Debian's novnc package is installed (make deps does)
        assert "RFB" in await resp.text() and resp.content_type == "text/html"


async def test_diagnostics_for_admins_in_both_shapes(cloud):
    h = cloud
    server_id = await active_server(h)
    url = f"{V}/servers/{server_id}/diagnostics"
    assert (await h.http.get(url, headers=h.alice)).status == 403
    assert (await h.http.get(url, headers=h.bob)).status == 404
    assert (await h.http.get(f"{V}/servers/vm1/diagnostics", headers=h.admin)).status == 404

    d = await ok(await h.http.get(url, headers={**h.admin, **mv("2.48")}), 200)
    assert set(d) == {"state", "driver", "hypervisor", "hypervisor_os", "uptime", "config_drive", "num_cpus",
                      "num_nics", "num_disks", "memory_details", "cpu_details", "nic_details", "disk_details"}
    assert (d["state"], d["driver"], d["hypervisor"], d["hypervisor_os"]) == ("running", "libvirt", "test",
                                                                             "linux")
    assert d["memory_details"]["maximum"] == 1024            # the flavor's RAM, MiB
    assert d["num_cpus"] == len(d["cpu_details"]) == 1
    assert set(d["cpu_details"][0]) == {"id", "time", "utilisation"}
    admin_view = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.admin, **mv("2.96")}),
                           200))["server"]
    [addr] = admin_view["addresses"]["net1"]
    assert [n["mac_address"] for n in d["nic_details"]] == [addr["OS-EXT-IPS-MAC:mac_addr"]]
    assert d["num_disks"] == len(d["disk_details"]) and d["num_nics"] == 1
    assert set(d["nic_details"][0]) >= {"rx_octets", "rx_packets", "tx_octets", "tx_drop", "rx_rate"}

    flat = await ok(await h.http.get(url, headers={**h.admin, **mv("2.47")}), 200)
    assert flat["memory"] == 1024 * 1024 and "cpu0_time" in flat
    assert any(key.endswith("_rx_packets") for key in flat), flat

    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"os-stop": None}), 202)
    await wait_status(h, server_id, "SHUTOFF")
    resp = await h.http.get(url, headers={**h.admin, **mv("2.48")})
    assert resp.status == 409, await resp.text()
