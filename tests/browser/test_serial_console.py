"""The serial console of a real TCG guest in the page: `nova-async serve --libvirt-uri
qemu:///system`, the demo guest (its images registered by the fresh serve), and the
server's Console tab opened while it still builds. The tab connects when the server turns
ACTIVE (a serial port keeps no history) and xterm.js shows what the guest prints on it,
up to the demo guest's own `nova-async-guest: ready` line; the graphical console's noVNC
page loads in its frame beside it; the Log tab reads the same lines back."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest
from playwright.async_api import expect

from nova_async import config
from nova_async.compute.guest_image import READY_LINE, build_or_reuse
from nova_async.compute.host_setup import setup_host
from tests.browser.conftest import log_in
from tests.e2e.conftest import serve

QEMU = Path("/usr/bin/qemu-system-x86_64")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.long,
    pytest.mark.skipif(not QEMU.exists(), reason="QEMU is not installed (make test installs it)"),
]
V = "/compute/v2.1"


async def test_serial_console_of_a_real_guest_in_xterm(browser, screens, database, work_dir):
    await setup_host(Path(config.default_state_dir()))
    await build_or_reuse()
    # A short state dir: the serial socket's path (…/instances/<uuid>/console.sock) must fit
    # in a unix socket address (107 bytes), or libvirt keeps a pty the proxy cannot reach.
    async with serve(work_dir / "ser", "--database", database, "--libvirt-uri", "qemu:///system") as served, \
            aiohttp.ClientSession() as http:
        headers = {"X-Auth-Token": await served.token(http)}

        async def call(method: str, path: str, status: int, **kw):
            async with http.request(method, served.url + path, headers=headers, **kw) as resp:
                assert resp.status == status, await resp.text()
                return await resp.json()

        flavor = (await call("POST", V + "/flavors", 200, json={"flavor": {
            "name": "tcg.tiny", "ram": 256, "vcpus": 1, "disk": 1}}))["flavor"]["id"]
        image = next(i["id"] for i in (await call("GET", "/image/v2/images", 200))["images"]
                     if i["name"] == "nova-async-demo")

        context = await browser.new_context(viewport={"width": 1280, "height": 1000})
        page = await context.new_page()
        await log_in(page, served.url, "admin", served.password, "admin")
        server = (await call("POST", V + "/servers", 202, json={"server": {
            "name": "tcg-console", "imageRef": image, "flavorRef": flavor, "networks": "none"}}))["server"]["id"]
        try:
            await page.goto(f"{served.url}/dashboard/#/servers/{server}/console")
            terminal = page.locator(".terminal-host .xterm-rows")
            await expect(terminal).to_contain_text(READY_LINE, timeout=240_000)
            await expect(terminal).to_contain_text("nova-async-guest: config_drive=")
            await expect(page.get_by_text(re.compile("^Connected:"))).to_be_visible()
            frame = page.frame_locator("iframe.console")
            await expect(frame.locator("body")).not_to_be_empty()
            await screens.shot(page, "server-console")
            # The Log tab: the same lines, read back through os-getConsoleOutput.
            await page.get_by_role("tab", name="Log").click()
            await expect(page.get_by_label("Console log")).to_contain_text(READY_LINE)
            await screens.shot(page, "server-log")
        finally:
            await context.close()
            async with http.delete(f"{served.url}{V}/servers/{server}", headers=headers):
                pass
