"""The stock Debian 12 cloud image booted through the real service under TCG: a fresh
database registers it (`debian-cloud`, AMI-style), a server is booted from it with a keypair
and a config drive (forced by `[compute] force_config_drive`: our guests have no metadata
service yet), and its console is read until cloud-init says it finished, after printing the
SSH host keys, with sshd started and the keypair installed for the image's login user.

What a stock image needs from us is exactly what Nova gives it: SMBIOS strings saying
OpenStack Nova, a config-2 drive with the key, and a flavor as big as the image asks
(min_ram 256 MiB: the kernel, systemd and cloud-init's Python; min_disk 1 GiB). No traffic
is sent to the guest yet; whatever the server left is destroyed and undefined.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import aiohttp
import libvirt
import pytest

from nova_async import __version__, config
from nova_async.compute import cloud_image
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.host_setup import setup_host
from tests.e2e.conftest import serve
from tests.e2e.driver import V, Api
from tests.e2e.test_tcg_guest_via_api import _remove_leftovers
from tests.waiting import until

QEMU = Path("/usr/bin/qemu-system-x86_64")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not QEMU.exists(), reason="QEMU is not installed (make test installs it)"),
    pytest.mark.skipif(not shutil.which("mmdebstrap"), reason="mmdebstrap is not installed (make test installs it)"),
]

URI = "qemu:///system"
# Under TCG on two busy cores the guest takes about two minutes to cloud-init's last line.
BOOT_WAIT = 900
COLOUR = re.compile(r"\x1b?\[[0-9;]*m")


async def _keypair(tmp: Path, comment: str) -> str:
    key = tmp / "id_ed25519"
    proc = await asyncio.create_subprocess_exec("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
                                                "-f", str(key))
    assert await proc.wait() == 0
    return (tmp / "id_ed25519.pub").read_text().strip()


def _smbios(xml: str) -> dict[str, str]:
    return {e.get("name"): e.text for e in ET.fromstring(xml).findall("sysinfo/system/entry")}


async def _domain_xml(server_id: str) -> str:
    conn = await asyncio.to_thread(libvirt.open, URI)
    try:
        dom = await asyncio.to_thread(conn.lookupByName, domain_name(server_id))
        return await asyncio.to_thread(dom.XMLDesc, 0)
    finally:
        await asyncio.to_thread(conn.close)


async def test_debian_cloud_image_boots_to_cloud_init_finished_with_our_keypair(database, work_dir, tmp_path):
    await setup_host(Path(config.default_state_dir()))
    await cloud_image.build_or_reuse()   # the service registers what the cache holds
    state_dir = work_dir / f"cloud-guest-{uuid.uuid4().hex[:8]}"
    settings = tmp_path / "nova-async.toml"
    settings.write_text("[compute]\nforce_config_drive = true\n")
    comment = f"nova-async-e2e-{uuid.uuid4().hex[:8]}"
    public_key = await _keypair(tmp_path, comment)
    server_ids: list[str] = []
    bridges: list[str] = []
    try:
        async with serve(state_dir, "--database", database, "--libvirt-uri", URI, "--config", str(settings)) \
                as served, aiohttp.ClientSession() as session:
            api = await Api.admin(session, served)
            [image] = (await api.call("GET", "/image/v2/images?name=debian-cloud", 200))["images"]
            assert (image["os_distro"], image["os_version"], image["default_user"]) == ("debian", "12", "debian")
            await api.call("POST", V + "/os-keypairs", 201, json={"keypair": {"name": "laptop",
                                                                             "public_key": public_key}})
            flavor = (await api.call("POST", V + "/flavors", 200, json={"flavor": {
                "name": "cloud.small", "ram": image["min_ram"], "vcpus": 1,
                "disk": image["min_disk"]}}))["flavor"]["id"]
            net = (await api.call("POST", "/network/v2.0/networks", 201,
                                  json={"network": {"name": "cloudnet"}}))["network"]["id"]
            bridges.append("brq" + net[:11])
            await api.call("POST", "/network/v2.0/subnets", 201, json={"subnet": {
                "network_id": net, "cidr": "10.251.9.0/24", "ip_version": 4}})

            started = time.monotonic()
            created = await api.call("POST", V + "/servers", 202, json={"server": {
                "name": "debian", "imageRef": image["id"], "flavorRef": flavor, "key_name": "laptop",
                "networks": [{"uuid": net}]}})
            server_id = created["server"]["id"]
            server_ids.append(server_id)
            server = await api.status(server_id, "ACTIVE")
            active = time.monotonic() - started
            # The drive was forced, not asked for: the server says it has one, as Nova's does.
            assert server["config_drive"] == "True"
            # What cloud-init's ds-identify reads to know it runs on OpenStack.
            assert _smbios(await _domain_xml(server_id)) == {
                "manufacturer": "OpenStack Foundation", "product": "OpenStack Nova", "version": __version__,
                "serial": server_id, "uuid": server_id, "family": "Virtual Machine"}

            def finished(text: str) -> bool:
                return any(cloud_image.FINISHED_MARK in line and " finished at " in line
                           for line in text.splitlines())

            console = await until(lambda: api.console(server_id), finished, what="cloud-init finished",
                                  timeout=BOOT_WAIT, interval=1.0, show=lambda text: text[-3000:])
            ready = time.monotonic() - started
            [done] = [line for line in console.splitlines() if " finished at " in line]
            assert "DataSourceConfigDrive" in done, done
            # Its NIC came up with the address the drive's network_data gave (cloud-init's
            # ifupdown config, rendered on Debian): the table it prints once networking is up.
            [addr] = server["addresses"]["cloudnet"]
            up = re.compile(rf"ci-info: \|\s*\S+\s*\|\s*True\s*\|\s*{re.escape(addr['addr'])}\s*\|")
            assert up.search(console), "\n".join(line for line in console.splitlines() if "ci-info" in line)
            # sshd runs with the host keys cloud-init made, and printed between these marks.
            # (systemd colours unit names; the console output API drops the ESC of each code)
            assert "Started ssh.service - OpenBSD Secure Shell server" in COLOUR.sub("", console), console[-3000:]
            keys = console[console.index(cloud_image.KEYS_MARK):console.index("-----END SSH HOST KEY KEYS-----")]
            assert "ssh-ed25519 " in keys
            # The keypair reached the image's login user (cloud-init's table of its keys).
            assert "Authorized keys from /home/debian/.ssh/authorized_keys for user debian" in console
            assert comment in console
            print(f"\ndebian-cloud under TCG: ACTIVE after {active:.1f} s, cloud-init finished "
                  f"{ready:.1f} s after create\n{done.strip()}")

            await api.call("DELETE", f"{V}/servers/{server_id}", 204)
            await api.status(server_id, "GONE")
    finally:
        await _remove_leftovers(server_ids, bridges)
        shutil.rmtree(state_dir, ignore_errors=True)
