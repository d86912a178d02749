"""A real TCG guest on qemu:///system boots the demo image, reads its config drive, and powers
off by itself when it gets the ACPI power button.

No nova-async process is involved: this proves the pieces compute will stand on (host
setup, the cached guest image, the config drive) against the real hypervisor. Needs root
and QEMU; `make test` installs QEMU, so in CI it runs. The kernel is downloaded once into
the machine-wide cache (/var/cache/nova-async/guest-image as root) and reused afterwards.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import tempfile
import time
import uuid as uuidlib
import xml.etree.ElementTree as ET
from pathlib import Path

import libvirt
import pytest

from nova_async import config
from nova_async.compute.config_drive import DriveContent, Nic, build_config_drive
from nova_async.compute.guest_image import build_or_reuse
from nova_async.compute.host_setup import setup_host
from tests.waiting import until

QEMU = Path("/usr/bin/qemu-system-x86_64")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not QEMU.exists(), reason="QEMU is not installed (make test installs it)"),
]

MAC = "52:54:00:5a:17:01"
USER_DATA = b"#!/bin/sh\necho \"it's $(whoami)\" <b>&amp; `id` ${HOME}\nlast line; no newline"


def domain_xml(name: str, uuid: str, domain_type: str, image, iso: Path, console: Path) -> str:
    dom = ET.Element("domain", type=domain_type)
    ET.SubElement(dom, "name").text = name
    ET.SubElement(dom, "uuid").text = uuid
    ET.SubElement(dom, "memory", unit="MiB").text = "256"
    ET.SubElement(dom, "vcpu").text = "1"
    os_ = ET.SubElement(dom, "os")
    ET.SubElement(os_, "type", arch="x86_64", machine="pc").text = "hvm"
    ET.SubElement(os_, "kernel").text = str(image.kernel)
    ET.SubElement(os_, "initrd").text = str(image.initrd)
    ET.SubElement(os_, "cmdline").text = image.cmdline
    ET.SubElement(ET.SubElement(dom, "features"), "acpi")
    for event in ("on_poweroff", "on_reboot", "on_crash"):
        ET.SubElement(dom, event).text = "destroy"
    devices = ET.SubElement(dom, "devices")
    disk = ET.SubElement(devices, "disk", type="file", device="cdrom")
    ET.SubElement(disk, "driver", name="qemu", type="raw")
    ET.SubElement(disk, "source", file=str(iso))
    ET.SubElement(disk, "target", dev="hdc", bus="ide")
    ET.SubElement(disk, "readonly")
    nic = ET.SubElement(devices, "interface", type="user")
    ET.SubElement(nic, "mac", address=MAC)
    ET.SubElement(nic, "model", type="virtio")
    serial = ET.SubElement(devices, "serial", type="file")
    ET.SubElement(serial, "source", path=str(console))
    ET.SubElement(serial, "target", port="0")
    ET.SubElement(devices, "memballoon", model="none")
    return ET.tostring(dom, encoding="unicode")


async def wait_for_lines(console: Path, done, timeout: float) -> list[str]:
    """Lines of the guest's serial log once `done(lines)` holds."""
    def lines() -> list[str]:
        return console.read_text(errors="replace").replace("\r", "").splitlines() if console.exists() else []

    return await until(lines, done, what="the guest's console", timeout=timeout, interval=0.1,
                       show=lambda seen: "\n" + "\n".join(seen[-40:]))


async def wait_shut_off(dom, timeout: float) -> None:
    await until(lambda: asyncio.to_thread(dom.isActive), lambda active: not active,
                what="the guest powered off after the ACPI power button", timeout=timeout, interval=0.1)


async def test_demo_guest_reads_config_drive_and_powers_off_on_acpi():
    host = await setup_host(Path(config.default_state_dir()))
    image = await build_or_reuse()

    uuid = str(uuidlib.uuid4())
    # libvirt runs QEMU as libvirt-qemu: the directory must be reachable by it.
    scratch = Path(tempfile.mkdtemp(prefix="nova-async-demo-guest-"))
    os.chmod(scratch, 0o755)
    iso, console = scratch / "disk.config", scratch / "console.log"
    await build_config_drive(DriveContent(
        uuid=uuid, name="demo \"guest\" $(reboot)", project_id="demo", user_data=USER_DATA,
        nics=(Nic(port_id=str(uuidlib.uuid4()), mac=MAC, ip_address="10.0.2.15",
                  netmask="255.255.255.0", network_id="net1", gateway="10.0.2.2"),)), iso)

    conn = await asyncio.to_thread(libvirt.open, "qemu:///system")
    dom = None
    try:
        xml = domain_xml(f"nova-async-demo-{uuid[:8]}", uuid, host.domain_type, image, iso, console)
        dom = await asyncio.to_thread(conn.defineXML, xml)
        started = time.monotonic()
        await asyncio.to_thread(dom.create)
        lines = await wait_for_lines(console, lambda ls: "nova-async-guest: ready" in ls, 120)
        booted = time.monotonic() - started
        ours = [line for line in lines if line.startswith("nova-async-guest: ")]

        assert f"nova-async-guest: uuid={uuid}" in ours, ours
        assert "nova-async-guest: ip=10.0.2.15" in ours, ours
        assert f"nova-async-guest: configured 10.0.2.15/24 on eth0 ({MAC})" in ours, ours
        assert f"nova-async-guest: user_data_base64={base64.b64encode(USER_DATA).decode()}" in ours, ours
        readable = [line.removeprefix("nova-async-guest: user_data=") for line in ours
                    if line.startswith("nova-async-guest: user_data=")]
        assert readable == USER_DATA.decode().split("\n"), ours

        await asyncio.to_thread(dom.shutdownFlags, libvirt.VIR_DOMAIN_SHUTDOWN_ACPI_POWER_BTN)
        await wait_shut_off(dom, 60)
        lines = console.read_text(errors="replace").replace("\r", "").splitlines()
        assert "nova-async-guest: power button pressed, powering off" in lines, lines[-20:]
        print(f"\ndemo guest ({host.domain_type}, {image.kernel.name}) ready {booted:.1f} s after create()")
    finally:
        if dom is not None:
            if await asyncio.to_thread(dom.isActive):
                await asyncio.to_thread(dom.destroy)
            await asyncio.to_thread(dom.undefine)
        await asyncio.to_thread(conn.close)
        shutil.rmtree(scratch, ignore_errors=True)
