"""`os-getConsoleOutput` on the compute host: the tail of what the guest printed.

A real guest's serial console is copied by virtlogd into `<instance dir>/console.log`
(see domain_xml.py), so reading it is a file read on the host that runs the guest: no
libvirt stream, no pty to attach to, and it still answers after the guest powered off.

What comes back is bounded twice, as in Nova: at most the last MAX_BYTES of the file
(Nova's libvirt driver keeps 100 KiB), then the last `lines` lines of that. Guests print
whatever they like, so the bytes are decoded leniently and the control characters Nova's
API strips (everything below 0x20 except tab and newline, NUL and CR included) are
removed: the text is safe to put in JSON and to print on a terminal.

The remote consoles (`GetConsoleEndpoint`) are live: the console proxy relays bytes to the
serial port's unix socket or to the VNC port that libvirt picked when the guest started.
Both are read from the running domain's XML, so nothing about them is stored anywhere.
"""

from __future__ import annotations

import asyncio
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import libvirt

from nova_async.common import errors
from nova_async.compute import disks
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.host import Host
from nova_async.compute.hypervisor import GuestGone
from nova_async.compute.messages import (
    ConsoleEndpoint,
    ConsoleKind,
    ConsoleOutput,
    GetConsoleEndpoint,
    GetConsoleOutput,
)

MAX_BYTES = 100 * 1024
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f]")


def read_tail(path: Path, max_bytes: int = MAX_BYTES) -> bytes:
    """The last `max_bytes` of the file, starting at a line boundary; b"" if there is no file."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            start = max(0, size - max_bytes)
            f.seek(start)
            data = f.read(max_bytes)
    except FileNotFoundError:
        return b""
    if start:
        # The cut fell inside a line (perhaps inside a UTF-8 sequence): start at the next one.
        newline = data.find(b"\n")
        if newline >= 0:
            data = data[newline + 1:]
    return data


def last_lines(data: bytes, lines: int | None) -> bytes:
    """The last `lines` of `data` split at newlines, as Nova tails a console log: a log that
    ends with a newline has an empty last line, which counts. None: everything."""
    if lines is None:
        return data
    if lines <= 0:
        return b""
    pos = len(data)
    for _ in range(lines):
        pos = data.rfind(b"\n", 0, pos)
        if pos < 0:
            return data
    return data[pos + 1:]


def render(data: bytes, lines: int | None = None) -> str:
    return _UNPRINTABLE.sub("", last_lines(data, lines).decode(errors="replace"))


async def console_output(host: Host, msg: GetConsoleOutput) -> ConsoleOutput:
    if not host.real_guests:
        return ConsoleOutput(output="")  # libvirt's test driver runs no guest that could print
    instance_uuid = msg.instance_uuid
    if await host.hypervisor.is_running(domain_name(instance_uuid)) is None:
        # Nova's ConsoleNotAvailable: the API answers 404.
        raise errors.NotFound(f"Guest of instance {instance_uuid} does not have a console available.")
    data = await asyncio.to_thread(read_tail, disks.console_log(host.instances_root, instance_uuid))
    return ConsoleOutput(output=render(data, msg.lines))


def endpoint_in(xml: str, kind: ConsoleKind) -> ConsoleEndpoint | None:
    """Where a running domain's `kind` console listens, per its live XML; None: it has none
    the proxy can reach (a pty, a VNC server that is not listening)."""
    devices = ET.fromstring(xml).find("devices")
    if devices is None:
        return None
    if kind is ConsoleKind.SERIAL:
        for serial in devices.findall("serial"):
            source = serial.find("source")
            if source is None or source.get("mode") != "bind":
                continue
            if serial.get("type") == "unix" and source.get("path"):
                return ConsoleEndpoint(path=source.get("path", ""))
            if serial.get("type") == "tcp" and (source.get("service") or "").isdigit():
                return ConsoleEndpoint(host=source.get("host") or "127.0.0.1", port=int(source.get("service", "")))
        return None
    for graphics in devices.findall("graphics"):
        if graphics.get("type") != "vnc":
            continue
        if graphics.get("socket"):
            return ConsoleEndpoint(path=graphics.get("socket", ""))
        port = graphics.get("port") or ""
        if port.isdigit() and int(port) > 0:   # -1 until the guest runs
            return ConsoleEndpoint(host=graphics.get("listen") or "127.0.0.1", port=int(port))
    return None


def _live_console(dom: libvirt.virDomain) -> tuple[bool, str]:
    return bool(dom.isActive()), dom.XMLDesc(0)


async def console_endpoint(host: Host, msg: GetConsoleEndpoint) -> ConsoleEndpoint:
    instance_uuid = msg.instance_uuid
    try:
        running, xml = await host.hypervisor.inspect(domain_name(instance_uuid), "read the guest's consoles",
                                                     _live_console)
    except GuestGone:
        raise errors.NotFound(f"Guest of instance {instance_uuid} does not have a console available.") from None
    if not running:
        raise errors.Conflict(f"Instance {instance_uuid} is not running: its console is not available.")
    found = endpoint_in(xml, msg.kind)
    if found is None:
        # Nova's ConsoleTypeUnavailable (400): libvirt's test driver runs no guest, and a
        # guest whose socket path was too long kept a pty.
        raise errors.InvalidInput(f"Unavailable console type {msg.kind}.")
    return found
