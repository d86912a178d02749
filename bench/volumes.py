"""Volume round trip: create + attach + detach + delete, C at a time, through the HTTP API,
beside the floor of the same work done directly.

Ours: starts `nova-async serve --simulate-hosts H --auth noauth` (libvirt's test driver, the
default file backend, a private database in a temporary state dir), boots C servers, lifts
the project's volume quotas, and then, C at a time, for R rounds, each worker runs the
sequence a user (or Nova for a user) runs against Cinder's v3 and Nova's APIs:

    POST /volume/v3/{project}/volumes                  → wait for "available"
    POST /compute/v2.1/servers/{id}/os-volume_attachments → wait for "in-use"
    DELETE …/os-volume_attachments/{volume id}         → wait for "available"
    DELETE /volume/v3/{project}/volumes/{id}           → wait for 404

Waiting is polling the volume every POLL_S, as clients do (the openstack CLI's --wait
polls every few seconds); the poll adds up to POLL_S to each of the four waits.

The floor: the same size and concurrency without the service: `qemu-img create -f raw`,
the disk attached to and detached from a running domain on test:///default, the file
removed. libvirt 9.0's test driver has no hotplug (attachDeviceFlags answers "not
supported"), so there, as on our simulated hosts, a disk is attached by redefining the
domain with it and restarting it; where the driver has hotplug, attachDeviceFlags and
detachDeviceFlags are used. No real QEMU domain: a virtio disk's hot-unplug waits for the
guest's kernel to answer the ACPI eject, so it measures a guest's boot and hotplug driver,
not the control plane (tests/e2e/test_qemu_volume_hotplug.py covers QEMU for correctness).
Tried here on one demo guest: its first hot-unplug was not answered within 120 s under the
shared box's load (C's e2e test saw 28 s), so such a column would time the guest's boot.

Upstream Cinder is pip-installable, but a comparable run needs cinder-api,
cinder-scheduler and cinder-volume with their own database and message queue, a Keystone,
and a Nova that calls it over HTTP: a deployment, not a bench. Its own Rally figures are
not comparable (real LVM/iSCSI, real guests), so none is printed. Nothing is asserted.

    .venv/bin/python bench/volumes.py [--concurrency 20] [--rounds 3] [--hosts 4] [--size 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET

import aiohttp
import libvirt

from boot_rate import HEADERS, boot_one, pct, prepare, serving, watch

POLL_S = 0.05
PHASES = ("create", "attach", "detach", "delete")


class Failed(Exception):
    pass


# --- ours, through the HTTP API -----------------------------------------------------------

async def wait_status(s: aiohttp.ClientSession, url: str, volume: str, want: str, limit: float = 120) -> None:
    """Until the volume shows `want` ("gone": until it is 404)."""
    async with asyncio.timeout(limit):
        while True:
            async with s.get(f"{url}/volumes/{volume}", headers=HEADERS) as r:
                if r.status == 404:
                    if want == "gone":
                        return
                    raise Failed(f"volume {volume} vanished waiting for {want}")
                status = (await r.json())["volume"]["status"]
            if status == want:
                return
            if status.startswith("error"):
                raise Failed(f"volume {volume} went to {status} waiting for {want}")
            await asyncio.sleep(POLL_S)


async def round_trip(s: aiohttp.ClientSession, url: str, volumes: str, server: str, size: int,
                     i: int) -> dict[str, float]:
    times: dict[str, float] = {}
    t0 = t = time.perf_counter()
    async with s.post(f"{volumes}/volumes", headers=HEADERS,
                      json={"volume": {"size": size, "name": f"bench-{i}"}}) as r:
        if r.status != 202:
            raise Failed(f"volume create: {r.status} {await r.text()}")
        volume = (await r.json())["volume"]["id"]
    await wait_status(s, volumes, volume, "available")
    times["create"], t = time.perf_counter() - t, time.perf_counter()
    attachments = f"{url}/compute/v2.1/servers/{server}/os-volume_attachments"
    async with s.post(attachments, headers=HEADERS, json={"volumeAttachment": {"volumeId": volume}}) as r:
        if r.status != 200:
            raise Failed(f"attach: {r.status} {await r.text()}")
    await wait_status(s, volumes, volume, "in-use")
    times["attach"], t = time.perf_counter() - t, time.perf_counter()
    async with s.delete(f"{attachments}/{volume}", headers=HEADERS) as r:
        if r.status != 202:
            raise Failed(f"detach: {r.status} {await r.text()}")
    await wait_status(s, volumes, volume, "available")
    times["detach"], t = time.perf_counter() - t, time.perf_counter()
    async with s.delete(f"{volumes}/volumes/{volume}", headers=HEADERS) as r:
        if r.status != 202:
            raise Failed(f"volume delete: {r.status} {await r.text()}")
    await wait_status(s, volumes, volume, "gone")
    times["delete"] = time.perf_counter() - t
    times["total"] = time.perf_counter() - t0
    return times


async def ours(concurrency: int, rounds: int, hosts: int, size: int) -> tuple[list[dict[str, float]], int]:
    state = tempfile.mkdtemp(prefix="nova-async-bench-")
    os.chmod(state, 0o755)
    try:
        async with serving(state, hosts) as (_proc, url), \
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            volumes = f"{url}/volume/v3/{HEADERS['X-Auth-Project-Id']}"
            async with s.put(f"{volumes}/os-quota-sets/{HEADERS['X-Auth-Project-Id']}", headers=HEADERS, json={
                    "quota_set": {"volumes": -1, "gigabytes": -1, "snapshots": -1}}) as r:
                if r.status != 200:
                    raise SystemExit(f"lifting volume quotas: {r.status} {await r.text()}")
            base = await prepare(s, url)
            done: dict[str, tuple[float, str]] = {}
            async with asyncio.timeout(600), asyncio.TaskGroup() as tg:
                tg.create_task(watch(s, url, concurrency, done), name="watch")
                posted = await asyncio.gather(*(boot_one(s, url, base, i) for i in range(concurrency)))
            servers = [sid for sid, _, _ in posted if done[sid][1] == "ACTIVE"]
            if len(servers) < concurrency:
                raise SystemExit(f"only {len(servers)} of {concurrency} servers became ACTIVE")
            samples: list[dict[str, float]] = []
            errors = 0
            for n in range(rounds):
                results = await asyncio.gather(
                    *(round_trip(s, url, volumes, server, size, n * concurrency + i)
                      for i, server in enumerate(servers)), return_exceptions=True)
                for result in results:
                    if isinstance(result, BaseException):
                        errors += 1
                        print(f"error: {result}", file=sys.stderr)
                    else:
                        samples.append(result)
            return samples, errors
    finally:
        shutil.rmtree(state, ignore_errors=True)


# --- the floor: qemu-img and libvirt, directly --------------------------------------------

def floor_domain_xml(name: str) -> str:
    return (f"<domain type='test'><name>{name}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu>"
            "<os><type arch='x86_64'>hvm</type></os><devices/></domain>")


def disk_element(path: str, serial: str) -> str:
    return (f"<disk type='file' device='disk'><driver name='qemu' type='raw' cache='none'/>"
            f"<source file='{path}'/><target dev='vdb' bus='virtio'/><serial>{serial}</serial></disk>")


def redefine(conn: libvirt.virConnect, dom: libvirt.virDomain, disk: str | None) -> None:
    """The test driver's way to change a running domain's disks: define it anew (with
    `disk`, or without any vdb) and restart it."""
    root = ET.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
    devices = root.find("devices")
    for old in devices.findall("disk"):
        devices.remove(old)
    if disk:
        devices.append(ET.fromstring(disk))
    conn.defineXML(ET.tostring(root, encoding="unicode"))
    dom.destroy()
    dom.create()


def attach(conn: libvirt.virConnect, dom: libvirt.virDomain, disk: str) -> None:
    try:
        dom.attachDeviceFlags(disk, libvirt.VIR_DOMAIN_AFFECT_LIVE | libvirt.VIR_DOMAIN_AFFECT_CONFIG)
    except libvirt.libvirtError as exc:
        if exc.get_error_code() != libvirt.VIR_ERR_NO_SUPPORT:
            raise
        redefine(conn, dom, disk)


def detach(conn: libvirt.virConnect, dom: libvirt.virDomain, disk: str) -> None:
    try:
        dom.detachDeviceFlags(disk, libvirt.VIR_DOMAIN_AFFECT_LIVE | libvirt.VIR_DOMAIN_AFFECT_CONFIG)
    except libvirt.libvirtError as exc:
        if exc.get_error_code() != libvirt.VIR_ERR_NO_SUPPORT:
            raise
        redefine(conn, dom, None)


async def floor_trip(conn: libvirt.virConnect, dom: libvirt.virDomain, directory: str,
                     size: int) -> dict[str, float]:
    times: dict[str, float] = {}
    volume = str(uuid.uuid4())
    path = os.path.join(directory, f"volume-{volume}")
    disk = disk_element(path, volume)
    t0 = t = time.perf_counter()
    proc = await asyncio.create_subprocess_exec("qemu-img", "create", "-q", "-f", "raw", path, f"{size}G")
    if await proc.wait() != 0:
        raise Failed("qemu-img create failed")
    times["create"], t = time.perf_counter() - t, time.perf_counter()
    await asyncio.to_thread(attach, conn, dom, disk)
    times["attach"], t = time.perf_counter() - t, time.perf_counter()
    await asyncio.to_thread(detach, conn, dom, disk)
    times["detach"], t = time.perf_counter() - t, time.perf_counter()
    await asyncio.to_thread(os.unlink, path)
    times["delete"] = time.perf_counter() - t
    times["total"] = time.perf_counter() - t0
    return times


async def floor(concurrency: int, rounds: int, size: int) -> list[dict[str, float]]:
    directory = tempfile.mkdtemp(prefix="nova-async-bench-floor-")
    libvirt.registerErrorHandler(lambda *_: None, None)  # "not supported" is expected, and handled
    conn = libvirt.open("test:///default")   # a private, in-process test driver
    try:
        domains = []
        for i in range(concurrency):
            dom = conn.defineXML(floor_domain_xml(f"floor-{i}"))
            dom.create()
            domains.append(dom)
        samples: list[dict[str, float]] = []
        for _ in range(rounds):
            samples += await asyncio.gather(*(floor_trip(conn, dom, directory, size) for dom in domains))
        return samples
    finally:
        conn.close()
        shutil.rmtree(directory, ignore_errors=True)


# --- the report ---------------------------------------------------------------------------

def summary(samples: list[dict[str, float]], key: str) -> tuple[float, float]:
    values = [sample[key] for sample in samples]
    if not values:
        return float("nan"), float("nan")
    return statistics.median(values), pct(values, .95)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--size", type=int, default=1, help="GiB")
    args = parser.parse_args()
    print("floor: qemu-img + test:///default …", file=sys.stderr)
    bare = await floor(args.concurrency, args.rounds, args.size)
    print("ours: nova-async serve …", file=sys.stderr)
    served, errors = await ours(args.concurrency, args.rounds, args.hosts, args.size)
    print(f"concurrency={args.concurrency} rounds={args.rounds} size={args.size}G "
          f"samples: ours {len(served)} (errors {errors}), floor {len(bare)}; poll every {POLL_S * 1000:.0f} ms")
    print(f"{'(ms)':22}{'ours p50':>10}{'ours p95':>10}{'floor p50':>11}{'floor p95':>11}{'p50 ratio':>11}")
    for key in (*PHASES, "total"):
        o50, o95 = summary(served, key)
        f50, f95 = summary(bare, key)
        ratio = f"{o50 / f50:10.1f}x" if f50 > 0 else ""
        print(f"{key:22}{o50 * 1000:10.1f}{o95 * 1000:10.1f}{f50 * 1000:11.1f}{f95 * 1000:11.1f} {ratio}")


if __name__ == "__main__":
    asyncio.run(main())
