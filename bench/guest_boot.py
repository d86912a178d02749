"""Guest boot: what the control plane adds to booting one real guest, over libvirt alone.

For the same demo guest (Debian's kernel and a busybox initramfs, direct kernel boot) each run
times (a) through nova-async's API, POST /servers → ACTIVE and → the first non-empty line of
`os-getConsoleOutput`; and (b) straight through libvirt-python on qemu:///system, defineXML +
create() of a copy of the domain (a) produced — its own name, UUID, disk copies, console log
and serial socket, its NIC a tap on no bridge — and → the first non-empty line of its console log. Both
poll every 0.1 s. (a)'s server is deleted before (b) starts, so the two guests never share
the CPUs.

Starts `nova-async serve --libvirt-uri qemu:///system` with a private database in a temporary
state dir, and prints every run, the medians, and the overhead as a − b and a / b. Numbers
only: nothing is asserted. Needs root (or libvirt access) and the demo guest (built if missing).

    .venv/bin/python bench/guest_boot.py [--runs 3] [--virt-type auto|kvm|qemu] [--log FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import io
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
from datetime import datetime
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import libvirt

from nova_async.compute.console import read_tail, render
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.guest_image import build_or_reuse

URI = "qemu:///system"
V = "/compute/v2.1"
PASSWORD = "bench-secret"
DEMO_IMAGE = "nova-async-demo"
POLL = 0.1
TIMEOUT = 180.0
NOTEWORTHY = ('"level": "warning"', '"level": "error"', '"level": "critical"', "Traceback")


class BenchError(Exception):
    """The bench could not measure (not a slow result: those are only printed)."""


async def start(state: str, virt_type: str,
                log: list[str]) -> tuple[asyncio.subprocess.Process, str, asyncio.Task]:
    """The service, its URL, and the task that keeps reading its log (until it exits)."""
    config = Path(state, "bench.toml")
    # The data plane serves the bench's network (DHCP, firewall) as for any real guest; no
    # external network (nothing here needs one, and none may reach beyond this machine), and
    # nftables tables of its own.
    config.write_text(f'[compute]\nvirt_type = "{virt_type}"\n'
                      f'[network]\nexternal_network = ""\ndataplane_table = "bench_{uuid.uuid4().hex[:10]}"\n')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nova_async", "serve", "--listen", f"127.0.0.1:{port}", "--state-dir", state,
        "--admin-password", PASSWORD, "--libvirt-uri", URI, "--config", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    async def pump(until: str | None) -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            log.append(raw.decode(errors="replace").rstrip())
            if until and until in log[-1]:
                return
        if until:
            raise BenchError("nova-async exited before it was ready:\n" + "\n".join(log[-40:]))

    await pump("nova-async ready")  # the first start runs initdb: ~10 s
    return proc, f"http://127.0.0.1:{port}", asyncio.create_task(pump(None), name="service-log")


class Api:
    def __init__(self, s: aiohttp.ClientSession, url: str) -> None:
        self.s, self.url, self.h = s, url, {"OpenStack-API-Version": "compute 2.96"}

    async def login(self) -> None:  # a Keystone token, as a client would use
        user = {"name": "admin", "domain": {"name": "Default"}, "password": PASSWORD}
        auth = {"auth": {"identity": {"methods": ["password"], "password": {"user": user}},
                         "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}
        async with self.s.post(self.url + "/v3/auth/tokens", json=auth) as r:
            assert r.status == 201, await r.text()
            self.h["X-Auth-Token"] = r.headers["X-Subject-Token"]

    async def call(self, method: str, path: str, status: int | None = None, **kw) -> tuple[int, dict | None]:
        async with self.s.request(method, self.url + path, headers=self.h, **kw) as r:
            text = await r.text()
            assert status is None or r.status == status, f"{method} {path}: {r.status} {text}"
            return r.status, (json.loads(text) if r.content_type == "application/json" else None)

    async def image(self, name: str, data: bytes, fmt: str, **props: str) -> str:
        _, image = await self.call("POST", "/image/v2/images", 201, json={
            "name": name, "disk_format": fmt, "container_format": "bare" if fmt == "raw" else fmt, **props})
        async with self.s.put(f"{self.url}/image/v2/images/{image['id']}/file", data=io.BytesIO(data),
                              headers={**self.h, "Content-Type": "application/octet-stream"}) as r:
            assert r.status == 204, await r.text()
        return image["id"]


async def prepare(api: Api) -> tuple[dict, str, str]:
    """The server body every run boots, its network, and where the image came from."""
    _, listed = await api.call("GET", f"/image/v2/images?name={DEMO_IMAGE}", 200)
    if listed["images"]:
        image, origin = listed["images"][0]["id"], f"registered by the service ({DEMO_IMAGE})"
    else:
        guest = await build_or_reuse()
        kernel = await api.image("bench-kernel", guest.kernel.read_bytes(), "aki")
        ramdisk = await api.image("bench-ramdisk", guest.initrd.read_bytes(), "ari")
        image = await api.image("bench-demo", b"\0" * (1 << 20), "raw", kernel_id=kernel, ramdisk_id=ramdisk,
                                img_config_drive="mandatory")
        origin = "uploaded by the bench (aki + ari + 1 MiB raw root)"
    _, flavor = await api.call("POST", V + "/flavors", 200, json={"flavor": {
        "name": "bench.tiny", "ram": 256, "vcpus": 1, "disk": 1}})
    _, net = await api.call("POST", "/network/v2.0/networks", 201, json={"network": {"name": "benchnet"}})
    await api.call("POST", "/network/v2.0/subnets", 201, json={"subnet": {
        "network_id": net["network"]["id"], "cidr": "10.252.9.0/24", "ip_version": 4}})
    body = {"imageRef": image, "flavorRef": flavor["flavor"]["id"], "networks": [{"uuid": net["network"]["id"]}],
            "user_data": base64.b64encode(b"#!/bin/sh\necho bench\n").decode()}
    return body, net["network"]["id"], origin


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def check_guest(conn: libvirt.virConnect, name: str) -> None:
    """Fail fast when the guest can no longer print: a KVM internal error pauses it for good."""
    try:
        state, reason = conn.lookupByName(name).state()
    except libvirt.libvirtError:
        return  # not defined yet
    if state == libvirt.VIR_DOMAIN_CRASHED or (state == libvirt.VIR_DOMAIN_PAUSED and
                                               reason != libvirt.VIR_DOMAIN_PAUSED_STARTING_UP):
        raise BenchError(f"{name} is {'paused' if state == libvirt.VIR_DOMAIN_PAUSED else 'crashed'} "
                         f"(reason {reason}) before printing a line: see /var/log/libvirt/qemu/{name}.log; "
                         "where KVM fails, try --virt-type qemu")


async def until_first_line(fetch: Callable[[], Awaitable[str]], t0: float,
                           conn: libvirt.virConnect, name: str) -> tuple[float, str]:
    while not (line := first_line(await fetch())):
        await asyncio.to_thread(check_guest, conn, name)
        await asyncio.sleep(POLL)
    return time.perf_counter() - t0, line


async def until_active(api: Api, server_id: str, t0: float) -> float:
    while True:
        _, body = await api.call("GET", f"{V}/servers/{server_id}", 200)
        if body["server"]["status"] == "ACTIVE":
            return time.perf_counter() - t0
        if body["server"]["status"] == "ERROR":
            raise BenchError(f"server {server_id} went to ERROR: {body['server'].get('fault')}")
        await asyncio.sleep(POLL)


async def via_api(api: Api, conn: libvirt.virConnect, body: dict, run: int,
                  server_ids: list[str]) -> tuple[float, float, str]:
    async def console() -> str:  # 404/409 until the guest exists: nothing printed yet
        status, out = await api.call("POST", f"{V}/servers/{server_id}/action", json={"os-getConsoleOutput": {}})
        return out["output"] if status == 200 else ""

    t0 = time.perf_counter()
    _, created = await api.call("POST", V + "/servers", 202, json={"server": {**body, "name": f"bench-{run}"}})
    server_id = created["server"]["id"]
    server_ids.append(server_id)
    async with asyncio.timeout(TIMEOUT):
        active, (line_at, line) = await asyncio.gather(until_active(api, server_id, t0),
                                                       until_first_line(console, t0, conn, domain_name(server_id)))
    return active, line_at, line


async def steps(api: Api, server_id: str) -> str:
    """Where (a)'s time went, from the server's own create action: each step's start and
    length in seconds after the action began (Nova's instance-action events)."""
    _, listed = await api.call("GET", f"{V}/servers/{server_id}/os-instance-actions", 200)
    [create] = [a for a in listed["instanceActions"] if a["action"] == "create"]
    _, shown = await api.call("GET", f"{V}/servers/{server_id}/os-instance-actions/{create['request_id']}", 200)
    action = shown["instanceAction"]
    began = datetime.fromisoformat(action["start_time"])
    parts = []
    for e in sorted(action["events"], key=lambda e: e["start_time"]):
        start = (datetime.fromisoformat(e["start_time"]) - began).total_seconds()
        took = (datetime.fromisoformat(e["finish_time"]) - datetime.fromisoformat(e["start_time"])).total_seconds() \
            if e.get("finish_time") else float("nan")
        parts.append(f"{e['event'].removeprefix('compute_')} +{start:.2f} ({took:.2f})")
    return ", ".join(parts)


async def delete(api: Api, server_id: str) -> None:
    await api.call("DELETE", f"{V}/servers/{server_id}", 204)
    async with asyncio.timeout(TIMEOUT):
        while (await api.call("GET", f"{V}/servers/{server_id}"))[0] != 404:
            await asyncio.sleep(POLL)


def qemu_img(*args: str) -> str:
    return subprocess.run(["qemu-img", *args], check=True, capture_output=True, text=True).stdout


def clone_domain(conn: libvirt.virConnect, server_id: str, work: Path) -> tuple[str, str, int]:
    """A copy of the server's domain XML whose files all live in `work`: copies of its disks, its
    own console log and serial socket, and each NIC (same model and MAC) a tap of its own on
    no bridge (type ethernet), so that the guest sees the same devices. (xml, domain type,
    NICs so moved).

    The server's delete removes its instance directory before (b) starts, so nothing (b)
    defines may point there: libvirt would fail to bind the console socket, QEMU to open a
    disk. Every file (a) had in that directory gets its counterpart in `work`, so (b) starts
    the same devices, just elsewhere; the kernel and initrd stay in the image cache, which
    outlives the server."""
    dom = conn.lookupByName(domain_name(server_id))
    # The persistent definition, as nova-async defined it: no live-only state (aliases, the
    # VNC port libvirt picked, security labels) to carry over.
    root = ET.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
    root.attrib.pop("id", None)
    new_uuid = str(uuid.uuid4())
    root.find("name").text = "bench-direct-" + new_uuid[:8]  # not "instance-…": nova-async ignores it
    root.find("uuid").text = new_uuid
    for entry in root.iterfind("sysinfo/system/entry"):   # Nova's SMBIOS strings name the uuid too
        if entry.get("name") in ("uuid", "serial"):
            entry.text = new_uuid
    for el in root.findall("metadata") + root.findall("title"):
        root.remove(el)
    devices = root.find("devices")
    interfaces = devices.findall("interface")
    for el in interfaces:
        el.set("type", "ethernet")
        for child in el.findall("source"):
            el.remove(child)
        el.find("target").set("dev", "bdtap" + uuid.uuid4().hex[:8])   # libvirt makes it
    for disk in devices.findall("disk"):
        source = disk.find("source")
        path = Path(source.get("file"))
        copy = work / path.name
        if disk.find("driver").get("type") == "qcow2":
            # A fresh overlay on the same base, as nova-async made it (-U: the guest holds the lock).
            info = json.loads(qemu_img("info", "-U", "--output=json", str(path)))
            qemu_img("create", "-q", "-f", "qcow2", "-b", info["full-backing-filename"],
                     "-F", info.get("backing-filename-format", "raw"), str(copy), str(info["virtual-size"]))
        else:
            shutil.copyfile(path, copy)
        source.set("file", str(copy))
        for backing in disk.findall("backingStore"):
            disk.remove(backing)
    instance_dirs = set()
    for log in devices.iter("log"):
        instance_dirs.add(str(Path(log.get("file")).parent))
        log.set("file", str(work / "console.log"))  # virtlogd (root) creates it
    for char in devices.findall("serial") + devices.findall("console"):
        source = char.find("source")
        if char.get("type") == "unix" and source is not None and source.get("mode") == "bind":
            # The console proxy's socket; serial and console name the same one, so they still do.
            source.set("path", str(work / Path(source.get("path")).name))
    xml = ET.tostring(root, encoding="unicode")
    if left := [d for d in instance_dirs if d in xml]:
        raise BenchError(f"(b)'s domain XML still names (a)'s instance directory {left[0]}, which the "
                         "delete removes: clone_domain must give that file a copy in the bench's own dir")
    return xml, root.get("type"), len(interfaces)


async def direct(conn: libvirt.virConnect, xml: str, work: Path) -> tuple[float, float, str]:
    async def console() -> str:
        return render(read_tail(work / "console.log"))

    t0 = time.perf_counter()
    dom = await asyncio.to_thread(conn.defineXML, xml)
    try:
        await asyncio.to_thread(dom.create)
        running = time.perf_counter() - t0
        async with asyncio.timeout(TIMEOUT):
            line_at, line = await until_first_line(console, t0, conn, dom.name())
        return running, line_at, line
    finally:
        await asyncio.to_thread(remove_domain, dom)


def remove_domain(dom: libvirt.virDomain) -> None:
    for step in (dom.destroy, dom.undefine):
        with contextlib.suppress(libvirt.libvirtError):  # not running / already gone
            step()


def row(label: str, a: float, b: float, a2: float, b2: float) -> str:
    return (f"{label:<7}{a:9.2f} {b:9.2f} {a - b:+9.2f} {a / b:7.1f}x   "
            f"{a2:9.2f} {b2:9.2f} {a2 - b2:+9.2f} {a2 / b2:7.1f}x")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--virt-type", choices=("auto", "kvm", "qemu"), default="auto",
                        help="nova-async's compute.virt_type; qemu (TCG) where KVM guests fail")
    parser.add_argument("--log", type=Path, help="write the service's log there (where a boot's time goes)")
    args = parser.parse_args()
    started = time.perf_counter()
    state = tempfile.mkdtemp(prefix="nova-async-bench-")
    os.chmod(state, 0o755)  # QEMU (user libvirt-qemu) must reach the disks under it
    log: list[str] = []
    server_ids: list[str] = []
    bridge, proc = "", None
    conn = await asyncio.to_thread(libvirt.open, URI)
    try:
        # Not an error, but the numbers mean less: other guests share the CPUs with ours.
        if busy := await asyncio.to_thread(conn.listAllDomains, libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
            print(f"note: {len(busy)} other guest(s) running on {URI} during the bench", flush=True)
        proc, url, pumping = await start(state, args.virt_type, log)
        async with aiohttp.ClientSession() as s:
            api = Api(s, url)
            await api.login()
            body, net_id, origin = await prepare(api)
            bridge = "brq" + net_id[:11]
            results, lines, timeline = [], set(), []
            for run in range(1, args.runs + 1):
                a_active, a_line_at, a_line = await via_api(api, conn, body, run, server_ids)
                timeline.append(await steps(api, server_ids[-1]))
                # (b) needs (a)'s disks, which the delete removes: copy them while (a) still runs.
                work = Path(tempfile.mkdtemp(prefix=f"direct-{run}-", dir=state))
                os.chmod(work, 0o755)
                xml, domain_type, nics = await asyncio.to_thread(clone_domain, conn, server_ids[-1], work)
                await delete(api, server_ids[-1])
                b_running, b_line_at, b_line = await direct(conn, xml, work)
                results.append((a_active, b_running, a_line_at, b_line_at))
                lines.update({("a", a_line), ("b", b_line)})
                print(f"run {run}: ACTIVE {a_active:.2f} s, running {b_running:.2f} s", flush=True)
            # The network goes with the bench: its DHCP namespace and dnsmasq with it.
            await api.call("DELETE", f"/network/v2.0/networks/{net_id}", 204)
            for _ in range(300):
                if not Path("/var/run/netns", f"qdhcp-{net_id}").exists():
                    break
                await asyncio.sleep(0.1)
        print(f"guest: image {origin}; 256 MiB, 1 vCPU, domain type {domain_type} on {URI}")
        print(f"(b) is (a)'s domain XML with its {nics} NIC(s) on a tap of their own, on no bridge; "
              f"polling every {POLL:.1f} s on both sides")
        for side, line in sorted(lines):
            print(f"first console line ({side}): {line!r}")
        print(f"\n{'':7}{'-> ACTIVE (a) / running (b), s':^37}   {'-> first console line, s':^37}")
        print(f"{'run':<7}" + f"{'a: API':>9} {'b: virt':>9} {'a - b':>9} {'a / b':>8}   " * 2)
        for i, r in enumerate(results, 1):
            print(row(str(i), *r))
        print(row("median", *(statistics.median(col) for col in zip(*results))))
        print("\n(a)'s steps, seconds after its create action began (length):")
        for i, line in enumerate(timeline, 1):
            print(f"  {i}: {line}")
    finally:
        for server_id in server_ids:  # left behind only when a run failed half-way
            try:
                dom = await asyncio.to_thread(conn.lookupByName, domain_name(server_id))
            except libvirt.libvirtError:
                continue
            await asyncio.to_thread(remove_domain, dom)
        if proc and proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 60)
            except TimeoutError:
                proc.kill()
                await proc.wait()
            await pumping
        await asyncio.to_thread(conn.close)
        if bridge and Path("/sys/class/net", bridge).exists():
            await asyncio.to_thread(subprocess.run, ["ip", "link", "del", "dev", bridge], check=False)
        shutil.rmtree(state, ignore_errors=True)
        if args.log:
            args.log.write_text("\n".join(log) + "\n")
        noteworthy = [line for line in log if any(n in line for n in NOTEWORTHY)]
        print(f"\nservice log: {len(log)} lines, {len(noteworthy)} warnings/errors; "
              f"bench took {time.perf_counter() - started:.0f} s")
        for line in noteworthy[:10]:
            print("  " + line[:300])


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except (BenchError, TimeoutError) as exc:
        sys.exit(f"guest_boot: {exc or 'no console line within ' + str(TIMEOUT) + ' s'}")
