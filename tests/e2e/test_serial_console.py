"""Remote consoles of a real TCG guest, as a user reaches them: `openstack console url show
--serial` answers a ws:// URL; a WebSocket client (aiohttp's) connects through the proxy
on the API port, types into the guest's serial console and reads the guest's tty echoing
it back (what was typed also lands in the console log); the same URL a second time is
refused. `openstack console url show` (noVNC) answers the noVNC page, which is served, and
whose WebSocket path relays the guest's VNC server: its RFB greeting comes through. Then
the guest's diagnostics, from libvirt, as an admin sees them.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest

from nova_async import config
from nova_async.compute.guest_image import build_or_reuse
from nova_async.compute.host_setup import setup_host
from tests.e2e.conftest import serve
from tests.e2e.driver import BIN, V, Api, os_env, run_ok
from tests.e2e.test_tcg_guest_via_api import QEMU, URI, _remove_leftovers

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not QEMU.exists(), reason="QEMU is not installed (make test installs it)"),
    pytest.mark.skipif(not (BIN / "openstack").exists(), reason="the OpenStack clients are installed by `make test`"),
]


async def openstack(served, *args: str) -> str:
    return (await run_ok(BIN / "openstack", *args, env=os_env(served, OS_IDENTITY_API_VERSION="3"))).strip()


async def type_until_echoed(ws: aiohttp.ClientWebSocketResponse, text: str, timeout: float = 120) -> bytes:
    """Type `text` and Enter until the guest's tty echoes it (input sent while the guest
    is still booting can be lost); everything read on the way is returned."""
    seen = b""
    async with asyncio.timeout(timeout):
        while text.encode() not in seen:
            await ws.send_bytes(text.encode() + b"\r")
            try:
                async with asyncio.timeout(5):
                    while text.encode() not in seen:
                        msg = await ws.receive()
                        assert msg.type is aiohttp.WSMsgType.BINARY, msg
                        seen += msg.data
            except TimeoutError:
                continue
    return seen


async def test_serial_and_vnc_consoles_of_a_real_guest(database, work_dir):
    await setup_host(Path(config.default_state_dir()))
    guest = await build_or_reuse()
    state_dir = work_dir / "consoles"
    server_ids: list[str] = []
    bridges: list[str] = []
    try:
        async with serve(state_dir, "--database", database, "--libvirt-uri", URI) as served, \
                aiohttp.ClientSession() as session:
            api = await Api.admin(session, served)
            root = await api.demo_images(guest)
            flavor = (await api.call("POST", V + "/flavors", 200, json={"flavor": {
                "name": "tcg.console", "ram": 256, "vcpus": 1, "disk": 1}}))["flavor"]["id"]
            net = (await api.call("POST", "/network/v2.0/networks", 201,
                                  json={"network": {"name": "consolenet"}}))["network"]["id"]
            bridges.append("brq" + net[:11])
            await api.call("POST", "/network/v2.0/subnets", 201, json={"subnet": {
                "network_id": net, "cidr": "10.251.9.0/24", "ip_version": 4}})
            created = await api.call("POST", V + "/servers", 202, json={"server": {
                "name": "console-vm", "imageRef": root, "flavorRef": flavor, "networks": [{"uuid": net}]}})
            server_id = created["server"]["id"]
            server_ids.append(server_id)
            await api.status(server_id, "ACTIVE")

            # Serial: the URL from the CLI, a WebSocket through the proxy, both ways.
            url = await openstack(served, "console", "url", "show", "--serial", "-f", "value", "-c", "url",
                                  "console-vm")
            assert url.startswith("ws://127.0.0.1:") and "/compute/console/serial?token=" in url
            marker = f"typed-{secrets.token_hex(4)}"
            async with session.ws_connect(url) as ws:
                seen = await type_until_echoed(ws, marker)
            print(f"\nthrough the serial console proxy:\n{seen.decode(errors='replace')[-500:]}")
            await api.console_until(server_id, [marker])   # the log kept what the tty echoed
            # A token opens one connection: a spent one is dropped once the WebSocket is open.
            async with session.ws_connect(url) as spent:
                refused = await spent.receive(timeout=30)
            assert refused.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR), refused

            # noVNC: the page is served, and its WebSocket path relays the guest's VNC server.
            page = await openstack(served, "console", "url", "show", "-f", "value", "-c", "url", "console-vm")
            assert "/compute/console/novnc/vnc_lite.html?path=" in page
            if Path("/usr/share/novnc/vnc_lite.html").exists():
                async with session.get(page) as r:
                    assert r.status == 200 and "<title>noVNC</title>" in await r.text()
            path = parse_qs(urlsplit(page).query)["path"][0]
            async with session.ws_connect(f"ws://{urlsplit(page).netloc}/{path}", protocols=("binary",)) as ws:
                assert ws.protocol == "binary"
                greeting = await asyncio.wait_for(ws.receive(), 30)
                assert greeting.type is aiohttp.WSMsgType.BINARY and greeting.data.startswith(b"RFB 003.00"), greeting

            # Diagnostics of the running guest, Nova's 2.48 shape.
            d = await api.call("GET", f"{V}/servers/{server_id}/diagnostics", 200)
            assert (d["state"], d["driver"], d["hypervisor"], d["config_drive"]) == ("running", "libvirt",
                                                                                     "qemu", True)
            assert d["memory_details"]["maximum"] == 256 and d["num_cpus"] == 1 and d["cpu_details"][0]["time"] > 0
            assert d["num_disks"] == 2 and sum(k["read_bytes"] for k in d["disk_details"]) > 0
            assert d["num_nics"] == 1 and isinstance(d["uptime"], int)

            await api.call("DELETE", f"{V}/servers/{server_id}", 204)
            await api.status(server_id, "GONE")
    finally:
        await _remove_leftovers(server_ids, bridges)
        shutil.rmtree(state_dir, ignore_errors=True)
