"""A real TCG guest booted through the API: `nova-async serve --libvirt-uri qemu:///system`,
the demo guest uploaded to the image service as kernel (aki), ramdisk (ari) and a root disk
naming both, a server booted with user data, and its console read back through
`os-getConsoleOutput` until the guest reports the identity and user data it found on its
config drive. Then every power action, each ending in the state Nova shows (soft reboot
goes through the guest's ACPI shutdown; the console shows it booted again), a shutdown the
guest does on its own (SHUTOFF through libvirt's lifecycle events), and delete: nothing may
be left on the host: no domain, no instance directory, no tap, no bridge, no allocation.

No traffic is sent to the guest. Whatever the server left (when the test fails half-way)
is destroyed and undefined.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import time
from pathlib import Path

import aiohttp
import libvirt
import pytest

from nova_async import config
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.guest_image import build_or_reuse
from nova_async.compute.host_setup import setup_host
from tests.e2e.conftest import serve
from tests.e2e.driver import V, Api
from tests.waiting import until

QEMU = Path("/usr/bin/qemu-system-x86_64")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not QEMU.exists(), reason="QEMU is not installed (make test installs it)"),
]

URI = "qemu:///system"
USER_DATA = "#!/bin/sh\necho \"it's $(id -u)\" <b>&amp; `uname` ${HOME} 'q' \\ ünï ✓\nlast; no newline"


async def _libvirt(fn, *args):
    return await asyncio.to_thread(fn, *args)


async def _remove_leftovers(server_ids: list[str], bridges: list[str]) -> None:
    conn = await _libvirt(libvirt.open, URI)
    try:
        for server_id in server_ids:
            try:
                dom = await _libvirt(conn.lookupByName, domain_name(server_id))
            except libvirt.libvirtError:
                continue
            if await _libvirt(dom.isActive):
                await _libvirt(dom.destroy)
            await _libvirt(dom.undefine)
    finally:
        await _libvirt(conn.close)
    for bridge in bridges:
        if Path("/sys/class/net", bridge).exists():
            proc = await asyncio.create_subprocess_exec("ip", "link", "del", "dev", bridge)
            await proc.wait()


async def _domain_names() -> list[str]:
    conn = await _libvirt(libvirt.open, URI)
    try:
        return [d.name() for d in await _libvirt(conn.listAllDomains)]
    finally:
        await _libvirt(conn.close)


async def test_tcg_guest_boots_through_the_api_and_shows_its_console(database, work_dir):
    await setup_host(Path(config.default_state_dir()))
    guest = await build_or_reuse()
    state_dir = work_dir / "tcg-guest"
    server_ids: list[str] = []
    bridges: list[str] = []
    try:
        async with serve(state_dir, "--database", database, "--libvirt-uri", URI) as served, \
                aiohttp.ClientSession() as session:
            api = await Api.admin(session, served)
            root = await api.demo_images(guest)
            flavor = (await api.call("POST", V + "/flavors", 200, json={"flavor": {
                "name": "tcg.tiny", "ram": 256, "vcpus": 1, "disk": 1}}))["flavor"]["id"]
            net = (await api.call("POST", "/network/v2.0/networks", 201,
                                  json={"network": {"name": "tcgnet"}}))["network"]["id"]
            bridges.append("brq" + net[:11])
            await api.call("POST", "/network/v2.0/subnets", 201, json={"subnet": {
                "network_id": net, "cidr": "10.251.7.0/24", "ip_version": 4}})

            started = time.monotonic()
            created = await api.call("POST", V + "/servers", 202, json={"server": {
                "name": "tcg \"guest\" $(reboot)", "imageRef": root, "flavorRef": flavor,
                "networks": [{"uuid": net}],
                "user_data": base64.b64encode(USER_DATA.encode()).decode()}})
            server_id = created["server"]["id"]
            server_ids.append(server_id)
            server = await api.status(server_id, "ACTIVE")
            active = time.monotonic() - started
            [addr] = server["addresses"]["tcgnet"]
            mac, ip = addr["OS-EXT-IPS-MAC:mac_addr"], addr["addr"]

            wanted = [f"nova-async-guest: uuid={server_id}", f"nova-async-guest: ip={ip}",
                      f"nova-async-guest: configured {ip}/24 on eth0 ({mac})", "nova-async-guest: ready"]
            lines = await api.console_until(server_id, wanted)
            ready = time.monotonic() - started
            ours = [line for line in lines if line.startswith("nova-async-guest: ")]
            assert "nova-async-guest: config_drive=/dev/sr0" in ours, ours
            readable = [line.removeprefix("nova-async-guest: user_data=") for line in ours
                        if line.startswith("nova-async-guest: user_data=")]
            assert readable == USER_DATA.split("\n"), ours
            print(f"\nTCG guest via the API: ACTIVE after {active:.1f} s, console ready after "
                  f"{ready:.1f} s\n" + "\n".join(ours))

            # The tail as Nova cuts it (the empty line after the last newline is one), and
            # Nova's validation of length.
            assert (await api.console(server_id, length=2)) == "nova-async-guest: ready\n"
            assert (await api.console(server_id, length="3")).splitlines() == [
                f"nova-async-guest: user_data={USER_DATA.split(chr(10))[-1]}", "nova-async-guest: ready"]
            assert (await api.console(server_id, length=-1)) == (await api.console(server_id))
            for bad in (-2, "-3", "x", 1.5):
                await api.call("POST", f"{V}/servers/{server_id}/action", 400,
                               json={"os-getConsoleOutput": {"length": bad}})

            instance_dir = served.state_dir / "instances" / server_id
            [port] = (await api.call("GET", f"/network/v2.0/ports?device_id={server_id}", 200))["ports"]
            tap = Path("/sys/class/net", ("tap" + port["id"])[:14])
            # libvirt plugged the guest's tap into the network's bridge.
            assert (tap / "master").resolve().name == bridges[0]
            assert instance_dir.is_dir()

            async def act(body: dict, *statuses: str) -> None:
                await api.call("POST", f"{V}/servers/{server_id}/action", 202, json=body)
                await api.status(server_id, *statuses)

            def boots(console: str) -> int:   # how often the console says the guest came up
                return console.count("nova-async-guest: ready")

            async def boots_again(before: int) -> None:
                await until(lambda: api.console_polled(server_id), lambda out: boots(out) > before,
                            what="the guest up again", timeout=120, interval=0.25, show=lambda out: out[-2000:])

            for reboot_type in ("SOFT", "HARD"):   # SOFT: ACPI, the guest powers off, then boots
                before = boots(await api.console(server_id))
                await act({"reboot": {"type": reboot_type}}, "ACTIVE")
                await boots_again(before)
            await act({"pause": None}, "PAUSED")
            await api.call("POST", f"{V}/servers/{server_id}/action", 409, json={"pause": None})
            await act({"unpause": None}, "ACTIVE")
            await act({"suspend": None}, "SUSPENDED")
            await act({"resume": None}, "ACTIVE")
            await act({"os-stop": None}, "SHUTOFF")
            await api.call("POST", f"{V}/servers/{server_id}/action", 409, json={"os-stop": None})
            before = boots(await api.console(server_id))
            await act({"os-start": None}, "ACTIVE")
            await boots_again(before)   # its ACPI handler is up
            # The guest shuts down by itself (its ACPI button pressed outside nova-async):
            # the lifecycle event makes it SHUTOFF with no action asked for.
            conn = await _libvirt(libvirt.open, URI)
            try:
                dom = await _libvirt(conn.lookupByName, domain_name(server_id))
                await _libvirt(dom.shutdown)
            finally:
                await _libvirt(conn.close)
            server = await api.status(server_id, "SHUTOFF", timeout=60)
            assert server["OS-EXT-STS:power_state"] == 4 and server["OS-EXT-STS:task_state"] is None
            await act({"os-start": None}, "ACTIVE")

            await api.call("DELETE", f"{V}/servers/{server_id}", 204)
            await api.status(server_id, "GONE")
            await api.call("POST", f"{V}/servers/{server_id}/action", 404,
                           json={"os-getConsoleOutput": {}})

            assert domain_name(server_id) not in await _domain_names()
            assert not instance_dir.exists()
            assert not tap.exists()
            # The bridge stays while its network has DHCP on this host (the data plane's
            # namespace is plugged into it); deleting the network takes both away.
            assert Path("/sys/class/net", bridges[0]).exists()
            await api.call("DELETE", f"/network/v2.0/networks/{net}", 204)
            await until(lambda: Path("/var/run/netns", f"qdhcp-{net}").exists()
                        or Path("/sys/class/net", bridges[0]).exists(), lambda left: not left,
                        what="the network's DHCP namespace and bridge gone")
            assert (await api.call("GET", f"/placement/allocations/{server_id}", 200))["allocations"] == {}
    finally:
        await _remove_leftovers(server_ids, bridges)
        shutil.rmtree(state_dir, ignore_errors=True)
