"""A test-only guest network on this host, for the data plane's tests: a namespace holding a
network's bridge `brq<net[:11]>` (as the host's namespace would), and one namespace per port
standing in for a guest, plugged into the bridge by a veth whose bridge end is the port's
`tap<port[:11]>` and whose guest end carries the port's MAC and IPs. Everything lives in
namespaces this test made (so the host's own rules and other tests never meet it) and is
removed when the `async with` ends, failed test or not.

Reachability is checked with Python sockets run in a guest's namespace (`ip netns exec`):
there is no ping binary here."""

from __future__ import annotations

import asyncio
import os
import shutil
import struct
import sys
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from ipaddress import ip_address

import pytest

from nova_async.dataplane.desired import FixedIp, Port, bridge_name
from nova_async.dataplane.linux import ip, run

# Echoes on TCP ports given as arguments (IPv4 and IPv6 on one socket), and prints each UDP
# datagram arriving on `--udp PORT`; says "ready" once every socket listens.
SERVER = r"""
import socket, sys, threading
def echo(c):
    with c:
        while data := c.recv(4096):
            c.sendall(data)
def accept(s):
    while True:
        c, _ = s.accept()
        threading.Thread(target=echo, args=(c,), daemon=True).start()
def datagrams(s):
    while True:
        data, peer = s.recvfrom(4096)
        print("udp", data.decode(), flush=True)
args = sys.argv[1:]
for i, a in enumerate(args):
    if a == "--udp" or (i and args[i - 1] == "--udp"):
        continue
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", int(a)))
    s.listen(16)
    threading.Thread(target=accept, args=(s,), daemon=True).start()
if "--udp" in args:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", int(args[args.index("--udp") + 1])))
    threading.Thread(target=datagrams, args=(u,), daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""

# One TCP connection attempt: prints open (and the echo came back), refused or timeout.
CONNECT = r"""
import socket, sys
host, port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
s.settimeout(timeout)
if len(sys.argv) > 4:
    s.bind((sys.argv[4], 0))
try:
    s.connect((host, port))
    s.sendall(b"hi")
    print("open" if s.recv(2) == b"hi" else "broken")
except ConnectionRefusedError:
    print("refused")
except TimeoutError:
    print("timeout")
"""

# A connection held open: says "connected", then for each line on stdin sends it and prints
# echo, closed or timeout.
HOLD = r"""
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.settimeout(float(sys.argv[3]))
print("connected", flush=True)
for line in sys.stdin:
    try:
        s.sendall(line.encode())
        print("echo" if s.recv(100) else "closed", flush=True)
    except TimeoutError:
        print("timeout", flush=True)
"""

# One UDP datagram from a chosen source port.
SEND_UDP = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
s.bind(("0.0.0.0", int(sys.argv[3])))
s.sendto(sys.argv[4].encode(), (sys.argv[1], int(sys.argv[2])))
"""

# Prints the marked frames eth0 sees (whoever they were addressed to): ARP asking for
# 10.0.0.250, and IPv4 UDP whose payload starts with "mark:". Says "ready" once listening.
SNIFF = r"""
import socket, struct
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.bind(("eth0", 0))
print("ready", flush=True)
while True:
    f = s.recv(4096)
    kind = struct.unpack("!H", f[12:14])[0]
    if kind == 0x0806 and f[38:42] == bytes([10, 0, 0, 250]):
        print("arp", socket.inet_ntoa(f[28:32]), flush=True)
    elif kind == 0x0800 and f[23] == 17:
        data = f[14 + (f[14] & 15) * 4 + 8:]
        if data.startswith(b"mark:"):
            print("udp", socket.inet_ntoa(f[26:30]), data[5:].decode(), flush=True)
"""

# Sends the frames given in hex on eth0, in order.
SEND_FRAMES = r"""
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
for frame in sys.argv[1:]:
    s.send(bytes.fromhex(frame))
"""

BROADCAST = "ff:ff:ff:ff:ff:ff"


def arp_frame(mac: str, sender: str, target: str) -> bytes:
    """An ARP request from `mac` saying it is `sender`."""
    m = bytes.fromhex(mac.replace(":", ""))
    return (bytes.fromhex(BROADCAST.replace(":", "")) + m + b"\x08\x06"
            + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + m + ip_address(sender).packed
            + bytes(6) + ip_address(target).packed)


def udp_frame(mac: str, dst_mac: str, src: str, dst: str, sport: int, dport: int, data: bytes) -> bytes:
    """An Ethernet frame holding one IPv4 UDP datagram (no UDP checksum, which IPv4 allows)."""
    udp = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                         ip_address(src).packed, ip_address(dst).packed)
    total = sum(struct.unpack("!10H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    header = header[:10] + struct.pack("!H", ~total & 0xFFFF) + header[12:]
    return (bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(mac.replace(":", ""))
            + b"\x08\x00" + header + udp)


# A blocked attempt waits this long before it counts as blocked; an allowed one answers at
# once (same machine, veths) but is given far longer, so load never makes a pass a failure.
BLOCKED_AFTER = 1.5
ALLOWED_WITHIN = 10.0


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: makes network namespaces, veths, a bridge and nftables tables")
    for tool in ("ip", "nft", "sysctl"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs the {tool} command")


@dataclass
class Guest:
    netns: str
    port: Port

    @property
    def v4(self) -> str:
        return next(str(f.address) for f in self.port.fixed_ips if f.address.version == 4)

    @property
    def v6(self) -> str:
        return next(str(f.address) for f in self.port.fixed_ips if f.address.version == 6)


@dataclass
class GuestNet:
    """The world: `netns` holds the bridge (and is where the firewall's tables go)."""
    network_id: str
    netns: str
    stack: AsyncExitStack
    guests: list[Guest] = field(default_factory=list)

    async def plug(self, port: Port, prefixes: dict[int, int] | None = None) -> Guest:
        """A guest namespace for `port`, its eth0 on the bridge through `tap<port[:11]>`."""
        prefixes = prefixes or {4: 24, 6: 64}
        g = Guest(f"{self.netns}-{len(self.guests)}", port)
        await ip("netns", "add", g.netns)
        self.stack.push_async_callback(ip, "netns", "del", g.netns, check=False)
        await ip("-n", self.netns, "link", "add", port.tap, "type", "veth",
                 "peer", "name", "eth0", "netns", g.netns)
        await ip("-n", self.netns, "link", "set", port.tap, "master", bridge_name(self.network_id), "up")
        await ip("-n", g.netns, "link", "set", "eth0", "address", port.mac_address)
        for f in port.fixed_ips:
            extra = ("nodad",) if f.address.version == 6 else ()
            await ip("-n", g.netns, "addr", "add", f"{f.address}/{prefixes[f.address.version]}",
                     "dev", "eth0", *extra)
        await ip("-n", g.netns, "link", "set", "lo", "up")
        await ip("-n", g.netns, "link", "set", "eth0", "up")
        self.guests.append(g)
        return g

    async def serve(self, where: Guest | str, *tcp_ports: int, udp: int | None = None) -> asyncio.subprocess.Process:
        """Echo servers in a guest (or a namespace), ready when this returns; stopped when
        the world ends."""
        argv = [*map(str, tcp_ports), *(("--udp", str(udp)) if udp else ())]
        proc = await self._spawn(where, SERVER, *argv)
        assert await next_line(proc) == "ready"
        return proc

    async def outside(self, address: str, gateway: str) -> str:
        """A namespace beyond a routed link from the bridge's namespace (which forwards), as a
        machine behind the host's uplink would be: `address`/24 there, `gateway`/24 on the
        bridge's side. Returns the namespace's name."""
        out = f"{self.netns}-out"
        await ip("netns", "add", out)
        self.stack.push_async_callback(ip, "netns", "del", out, check=False)
        await ip("-n", self.netns, "link", "add", "up0", "type", "veth", "peer", "name", "eth0", "netns", out)
        await ip("-n", self.netns, "addr", "add", f"{gateway}/24", "dev", "up0")
        await ip("-n", self.netns, "link", "set", "up0", "up")
        await run("sysctl", "-q", "-w", "net.ipv4.ip_forward=1", netns=self.netns)
        await ip("-n", out, "addr", "add", f"{address}/24", "dev", "eth0")
        await ip("-n", out, "link", "set", "eth0", "up")
        await ip("-n", out, "route", "add", "default", "via", gateway)
        return out

    async def connect(self, g: Guest | str, host: str, port: int, *, expect: str, source: str | None = None) -> str:
        """What a TCP connection from `g` to host:port gets; `expect` only picks how long a
        silence lasts before it counts as `timeout` (blocked)."""
        wait = ALLOWED_WITHIN if expect == "open" else BLOCKED_AFTER
        netns = g.netns if isinstance(g, Guest) else g
        done = await run("ip", "netns", "exec", netns, sys.executable, "-c", CONNECT,
                         host, str(port), str(wait), *((source,) if source else ()))
        return done.output.strip()

    async def hold(self, g: Guest, host: str, port: int) -> asyncio.subprocess.Process:
        proc = await self._spawn(g, HOLD, host, str(port), str(BLOCKED_AFTER))
        assert await next_line(proc) == "connected"
        return proc

    async def sniff(self, g: Guest) -> asyncio.subprocess.Process:
        proc = await self._spawn(g, SNIFF)
        assert await next_line(proc) == "ready"
        return proc

    async def send_frames(self, g: Guest, *frames: bytes) -> None:
        await run("ip", "netns", "exec", g.netns, sys.executable, "-c", SEND_FRAMES,
                  *(f.hex() for f in frames))

    async def send_udp(self, g: Guest, host: str, port: int, sport: int, text: str) -> None:
        await run("ip", "netns", "exec", g.netns, sys.executable, "-c", SEND_UDP,
                  host, str(port), str(sport), text)

    async def _spawn(self, where: Guest | str, script: str, *argv: str) -> asyncio.subprocess.Process:
        netns = where.netns if isinstance(where, Guest) else where
        proc = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", netns, sys.executable, "-u", "-c", script, *argv,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)

        async def stop() -> None:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
        self.stack.push_async_callback(stop)
        return proc


async def next_line(proc: asyncio.subprocess.Process) -> str:
    """The helper's next line of output. Bounded, so an answer that never comes fails the
    test instead of hanging it (the bound is no measure of anything)."""
    async with asyncio.timeout(ALLOWED_WITHIN * 3):
        return (await proc.stdout.readline()).decode().strip()


async def say(proc: asyncio.subprocess.Process, line: str) -> str:
    """Send a line to a held connection; its answer (echo, closed, timeout)."""
    proc.stdin.write(line.encode() + b"\n")
    await proc.stdin.drain()
    return await next_line(proc)


class guest_net:
    """`async with guest_net() as net:` — a bridge in a fresh namespace; all of it removed at
    the end (namespaces deleted, which deletes their links and nftables tables with them)."""

    def __init__(self) -> None:
        self.stack = AsyncExitStack()
        self.net = GuestNet(str(uuid.uuid4()), f"fwt-{uuid.uuid4().hex[:10]}", self.stack)

    async def __aenter__(self) -> GuestNet:
        require_root()
        await self.stack.__aenter__()
        try:
            await ip("netns", "add", self.net.netns)
            # Pushed first, so it runs last: after every guest namespace and process is gone.
            self.stack.push_async_callback(ip, "netns", "del", self.net.netns, check=False)
            br = bridge_name(self.net.network_id)
            await ip("-n", self.net.netns, "link", "add", br, "type", "bridge")
            await ip("-n", self.net.netns, "link", "set", br, "up")
        except BaseException:
            await self.stack.aclose()
            raise
        return self.net

    async def __aexit__(self, *exc: object) -> None:
        await self.stack.aclose()


def fixed(*addresses: str) -> tuple[FixedIp, ...]:
    return tuple(FixedIp("subnet-v" + str(ip_address(a).version), ip_address(a)) for a in addresses)
