"""A small network lab for data-plane tests that run as root: namespaces standing in for
guests and for "the outside", plugged into the bridges the parts made, TCP over python
sockets run in them (there is no ping here), and a scrub that removes everything a test
made — its own namespaces and links, and whatever its parts' Made still lists — whether or
not the test passed. Nothing leaves this machine: the addresses are documentation ranges
on bridges with no NIC."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from ipaddress import ip_address, ip_network

import pytest

from nova_async.common import process
from nova_async.dataplane import desired as d
from nova_async.dataplane.made import Made

CAN_PLUMB = os.geteuid() == 0 and bool(shutil.which("ip")) and bool(shutil.which("nft"))
needs_root = pytest.mark.skipif(not CAN_PLUMB, reason="makes namespaces, veths, bridges and nft tables: "
                                                      "needs root with ip and nft")

LISTEN = """
import socket
s = socket.socket()
s.bind(("0.0.0.0", 0))
s.listen(1)
s.settimeout(60)
print(s.getsockname()[1], flush=True)
c, peer = s.accept()
print(peer[0], flush=True)
c.sendall(b"hello")
c.close()
"""

ECHO = """
import socket
s = socket.socket()
s.bind(("0.0.0.0", 0))
s.listen(1)
s.settimeout(60)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
c.settimeout(60)
while data := c.recv(100):
    c.sendall(data)
"""

CHAT = """
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
print("connected", flush=True)
c.settimeout(float(sys.argv[3]))
for line in sys.stdin:
    try:
        c.sendall(line.encode())
        print("echo", c.recv(100).decode().strip(), flush=True)
    except OSError as e:
        print("lost", type(e).__name__, flush=True)
"""

CONNECT = """
import socket, sys
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3]))
    print("reached", c.recv(5).decode(), c.getsockname()[0])
except OSError as e:
    print("unreachable", type(e).__name__, e)
"""


def uid() -> str:
    return str(uuid.uuid4())


def network(cidr: str, *, external: bool = False, mtu: int = 1500, network_type: str = "local",
            physical_network: str | None = None) -> d.Network:
    net_id = uid()
    cidr_ = ip_network(cidr)
    subnet = d.Subnet(id=uid(), network_id=net_id, cidr=cidr_, ip_version=cidr_.version,
                      gateway_ip=cidr_[1], enable_dhcp=not external)
    return d.Network(id=net_id, mtu=mtu, external=external, network_type=network_type,
                     physical_network=physical_network, subnets=(subnet,))


def mac() -> str:
    return "fa:16:3e:" + ":".join(f"{b:02x}" for b in os.urandom(3))


def port(net: d.Network, address: str, *, owner: str = "compute:nova", device_id: str = "") -> d.Port:
    return d.Port(id=uid(), network_id=net.id, mac_address=mac(), device_owner=owner, device_id=device_id,
                  fixed_ips=(d.FixedIp(subnet_id=net.subnets[0].id, address=ip_address(address)),))


async def sh(*argv: str, check: bool = True) -> str:
    done = await process.run(*argv, timeout=30)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: {done.output}")
    return done.output


async def namespaces() -> set[str]:
    return {line.split()[0] for line in (await sh("ip", "netns", "list")).splitlines() if line.strip()}


def link_exists(name: str) -> bool:
    return os.path.exists(f"/sys/class/net/{name}")


def master_of(name: str) -> str | None:
    path = f"/sys/class/net/{name}/master"
    return os.path.basename(os.path.realpath(path)) if os.path.exists(path) else None


async def links_in(netns: str) -> dict[str, dict]:
    return {link["ifname"]: link for link in json.loads(await sh("ip", "-j", "-n", netns, "addr", "show"))}


async def addresses_in(netns: str, dev: str) -> set[str]:
    link = (await links_in(netns)).get(dev, {})
    return {f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", ()) if a.get("scope") == "global"}


async def nft_in(netns: str) -> str:
    return await sh("ip", "netns", "exec", netns, "nft", "list", "ruleset")


class Lab:
    """What a test makes by hand (namespaces, veths, dummy NICs), removed by `close`."""

    def __init__(self) -> None:
        self.made_namespaces: list[str] = []
        self.made_links: list[str] = []

    async def namespace(self, prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        self.made_namespaces.append(name)
        await sh("ip", "netns", "add", name)
        await sh("ip", "-n", name, "link", "set", "lo", "up")
        return name

    def link_name(self, prefix: str) -> str:
        name = f"{prefix}{uuid.uuid4().hex[:10]}"
        self.made_links.append(name)
        return name

    async def host(self, bridge: str, mac_address: str, address: str, gateway: str | None,
                   prefix: str = "lab") -> str:
        """A namespace with one NIC (eth0) plugged into `bridge`: a guest, or the outside."""
        netns = await self.namespace(prefix)
        tap = self.link_name("lt")
        await sh("ip", "link", "add", "name", tap, "type", "veth", "peer", "name", "eth0",
                 "address", mac_address, "netns", netns)
        await sh("ip", "link", "set", "dev", tap, "master", bridge, "up")
        await sh("ip", "-n", netns, "addr", "add", address, "dev", "eth0")
        await sh("ip", "-n", netns, "link", "set", "dev", "eth0", "up")
        if gateway:
            await sh("ip", "-n", netns, "route", "add", "default", "via", gateway)
        return netns

    async def dummy(self) -> str:
        """A stand-in for a physical NIC: one end of a veth pair whose other end stays down
        (this kernel has no dummy links), so nothing sent into it goes anywhere."""
        name = self.link_name("ld")
        await sh("ip", "link", "add", "name", name, "type", "veth", "peer", "name", f"lp{name[2:]}")
        return name

    async def close(self) -> None:
        for link in self.made_links:
            if link_exists(link):
                await sh("ip", "link", "del", "dev", link, check=False)
        for netns in self.made_namespaces:
            await sh("ip", "netns", "del", netns, check=False)


async def scrub(made: Made) -> None:
    """Remove whatever Made still lists for this test's host (after a failure)."""
    rows = await made.pool.fetch("SELECT kind, name, detail FROM dataplane_objects WHERE host = $1", made.host)
    for row in rows:
        kind, name = row["kind"], row["name"]
        if kind == "router-link" and link_exists(name):
            await sh("ip", "link", "del", "dev", name, check=False)
        elif kind == "external-nic" and master_of(name):
            await sh("ip", "link", "set", "dev", name, "nomaster", check=False)
    for row in rows:
        kind, name = row["kind"], row["name"]
        if kind == "router-namespace":
            await sh("ip", "netns", "del", name, check=False)
        elif kind == "l3-bridge" and link_exists(name):
            await sh("ip", "link", "del", "dev", name, check=False)
        elif kind == "external-nat-table":
            await sh("nft", "delete", "table", *name.split(), check=False)
        await made.forget(kind, name)


@asynccontextmanager
async def listening(netns: str) -> AsyncIterator[tuple[int, asyncio.StreamReader]]:
    """A TCP listener in `netns` on every address: its port, and its output (the address of
    the one peer it accepts)."""
    proc = await asyncio.create_subprocess_exec("ip", "netns", "exec", netns, sys.executable, "-c", LISTEN,
                                                stdout=asyncio.subprocess.PIPE)
    try:
        port_line = await asyncio.wait_for(proc.stdout.readline(), 30)
        yield int(port_line), proc.stdout
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


@asynccontextmanager
async def echoing(netns: str) -> AsyncIterator[int]:
    """A TCP echo server in `netns` for one connection: its port."""
    proc = await asyncio.create_subprocess_exec("ip", "netns", "exec", netns, sys.executable, "-c", ECHO,
                                                stdout=asyncio.subprocess.PIPE)
    try:
        yield int(await asyncio.wait_for(proc.stdout.readline(), 30))
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


class Chat:
    """One TCP connection held open from a namespace: `say` sends a line and returns
    'echo <line>' when it came back, 'lost …' when nothing did within the client's bound."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc

    async def say(self, line: str) -> str:
        self._proc.stdin.write(f"{line}\n".encode())
        await self._proc.stdin.drain()
        return (await asyncio.wait_for(self._proc.stdout.readline(), 30)).decode().strip()


@asynccontextmanager
async def chatting(netns: str, address: str, port_number: int, bound: float = 5) -> AsyncIterator[Chat]:
    proc = await asyncio.create_subprocess_exec("ip", "netns", "exec", netns, sys.executable, "-c", CHAT,
                                                address, str(port_number), str(bound),
                                                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    try:
        assert (await asyncio.wait_for(proc.stdout.readline(), 30)).strip() == b"connected"
        yield Chat(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def connect(netns: str, address: str, port_number: int, timeout: float = 10) -> str:
    """From `netns`, a TCP connection to address:port: 'reached hello <own address>' or
    'unreachable <why>'."""
    return (await sh("ip", "netns", "exec", netns, sys.executable, "-c", CONNECT, address, str(port_number),
                     str(timeout))).strip()


async def peer_seen(output: asyncio.StreamReader) -> str:
    return (await asyncio.wait_for(output.readline(), 30)).decode().strip()
