"""Bridges and DHCP: each network with an IPv4 subnet that has DHCP on gets, on this host, its
bridge `brq<net>`, a namespace `qdhcp-<net>` plugged into it by a veth (`tap<port>` on the
bridge, `ns-<port>` inside, holding the DHCP port's addresses and 169.254.169.254/32, where
the metadata service listens), and a dnsmasq serving exactly the network's compute ports.

IPv4 only: DHCPv6 and router advertisements are not served (an IPv6 subnet's ports get
their address from the config drive, as before).

dnsmasq is our child (asyncio subprocess, `--keep-in-foreground`, entered into the namespace
by `ip netns exec`, which execs it: its pid is the one we hold). It serves no DNS
(`--port=0`) and reads nothing but its command line and two files we write under the state
directory: hosts (`<mac>,<ip>,<hostname>`) and options (router, DNS servers, MTU, classless
static routes). A change of those is a SIGHUP, sent only when their contents changed; a
change of its command line (a subnet added, say) is a restart, and so is a lease the hosts no
longer back (a port gone, whose address the next port may get): a SIGHUP does not make
dnsmasq forget a lease, so it is stopped, the lease taken out of its file, and started
again. Its exit is seen at once (a pidfd in the event loop) and asks for a pass, which
starts it again.

dnsmasq drops to user nobody and re-reads the files as nobody: the state directory must be
reachable by others (o+x on every parent), as it already is for the private PostgreSQL.

Recovery (a pass at start): a dnsmasq from before a crash is no child of ours, so it cannot be
supervised; it is stopped and a new one started (leases survive in the lease file, and no
client notices a pause of milliseconds). Before killing a recorded pid we check that it is
still a dnsmasq started with our pid file: a pid reused by another program is left alone."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import re
import shutil
import signal
import stat
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path

import structlog

from nova_async.dataplane import linux
from nova_async.dataplane.desired import DHCP_OWNER, Desired, FixedIp, Network, Port, Subnet, short
from nova_async.dataplane.linux import HostNetworkError
from nova_async.dataplane.reconcile import PartDeps
from nova_async.db.embedded import exited
from nova_async.network.messages import Vif

log = structlog.get_logger("dataplane.dhcp")

LEASE_SECONDS = 86400
STOP_GRACE = 5.0
SYS_NET = Path("/sys/class/net")
METADATA_ADDRESS = "169.254.169.254"
_MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
_ID = re.compile(r"[0-9a-f-]{36}")

# What this part records in dataplane_objects (made.py).
BRIDGE, NAMESPACE, LINK, DNSMASQ, FILES = "dhcp-bridge", "dhcp-namespace", "dhcp-link", "dhcp-dnsmasq", "dhcp-files"


def namespace(network_id: str) -> str:
    return f"qdhcp-{network_id}"


def ns_device(port_id: str) -> str:
    return f"ns-{short(port_id)}"


def dhcp_subnets(net: Network) -> list[Subnet]:
    return [s for s in net.subnets if s.enable_dhcp and s.ip_version == 4]


@dataclass
class Running:
    proc: asyncio.subprocess.Process
    argv: tuple[str, ...]
    pidfd: int | None
    # Set when its pidfd says it exited, which may come before asyncio's child watcher
    # has reaped it (and set proc.returncode).
    ended: bool = False

    def alive(self) -> bool:
        return not self.ended and self.proc.returncode is None

    def unwatch(self) -> None:
        if self.pidfd is not None:
            asyncio.get_running_loop().remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = None


class DhcpPart:
    name = "dhcp"

    def __init__(self, deps: PartDeps) -> None:
        self.deps = deps
        self.made = deps.made
        self.root = deps.state_dir / "dhcp"
        self._running: dict[str, Running] = {}   # network id → our dnsmasq
        self._closing = False

    # -- the pass ------------------------------------------------------------------------

    async def apply(self, want: Desired) -> None:
        needed = {nid: net for nid, net in want.networks.items() if dhcp_subnets(net)}
        mine = f"dhcp-{self.deps.host}"
        problems: list[str] = []
        # Gone first: a replaced DHCP port's names are free again before they are made.
        await self._remove_unwanted(want, needed, problems)
        for port in want.ports.values():
            if port.device_owner == DHCP_OWNER and port.device_id == mine and port.network_id not in needed:
                # DHCP turned off on the network: the network service deletes our port.
                ensured = self.deps.network.ensure_dhcp_port(port.network_id, self.deps.host)
                await self._attempt(problems, port.network_id, ensured)
        if needed:
            self._check_reachable()
        for nid, net in needed.items():
            await self._attempt(problems, nid, self._serve(net, want))
        if problems:
            raise HostNetworkError("DHCP: " + "; ".join(problems))

    @staticmethod
    async def _attempt(problems: list[str], network_id: str, step: Awaitable[object]) -> None:
        """Run one network's step; a failure is noted and the other networks still served."""
        try:
            await step
        except Exception as exc:
            log.warning("DHCP for a network failed; the next pass tries again", network_id=network_id,
                        error=getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")
            problems.append(f"network {network_id}: {getattr(exc, 'message', None) or exc}")

    async def _serve(self, net: Network, want: Desired) -> None:
        port = self._dhcp_port(net, want)
        if port is None:
            vif = await self.deps.network.ensure_dhcp_port(net.id, self.deps.host)
            if vif is None:
                return  # the network went meanwhile; the next pass cleans up
            port = _port_of(vif)
        await self._bridge(net)
        ns = namespace(net.id)
        await self._namespace(ns, net.id)
        await self._veth(net, port, ns)
        changed = await self._write_files(net, port, want)
        await self._dnsmasq(net, port, ns, changed)

    def _dhcp_port(self, net: Network, want: Desired) -> Port | None:
        """Our DHCP port as the snapshot has it, if it has an address on every DHCP subnet."""
        mine = f"dhcp-{self.deps.host}"
        wanted = {s.id for s in dhcp_subnets(net)}
        for port in want.ports_on(net.id, DHCP_OWNER):
            if port.device_id == mine and {ip.subnet_id for ip in port.fixed_ips} == wanted:
                return port
        return None

    # -- host objects --------------------------------------------------------------------

    async def _bridge(self, net: Network) -> None:
        """The network's bridge, as compute's plumbing makes it (compute adds guests' taps to
        it, and removes it only when nothing is plugged in)."""
        name = linux.check_name(net.bridge)
        await self.made.record(BRIDGE, name, {"network_id": net.id})
        if not (SYS_NET / name / "bridge").is_dir():
            if (SYS_NET / name).exists():
                raise HostNetworkError(f"{name} exists and is not a bridge")
            added = await linux.ip("link", "add", "name", name, "type", "bridge", check=False)
            if added.returncode != 0 and not (SYS_NET / name / "bridge").is_dir():
                raise HostNetworkError(f"cannot create bridge {name}: {added.output.strip()[-300:]}")
            log.info("bridge created", bridge=name)
        await linux.ip("link", "set", "dev", name, "up")

    async def _namespace(self, ns: str, network_id: str) -> None:
        linux.check_name(ns, netns=True)
        await self.made.record(NAMESPACE, ns, {"network_id": network_id})
        if ns not in await linux.namespaces():
            await linux.ip("netns", "add", ns)
            log.info("namespace created", namespace=ns)
        await linux.ip("link", "set", "dev", "lo", "up", netns=ns)

    async def _veth(self, net: Network, port: Port, ns: str) -> None:
        tap, inner = linux.check_name(port.tap), linux.check_name(ns_device(port.id))
        mtu = str(net.mtu)
        await self.made.record(LINK, tap, {"network_id": net.id, "port_id": port.id, "namespace": ns})
        if not (SYS_NET / tap).exists():
            # A peer left alone in the namespace (by whatever removed its other end) is redone.
            await linux.ip("link", "del", "dev", inner, netns=ns, check=False)
            await linux.ip("link", "add", "name", tap, "type", "veth", "peer", "name", inner, "netns", ns)
        await linux.ip("link", "set", "dev", tap, "mtu", mtu, "master", net.bridge, "up")
        await linux.ip("link", "set", "dev", inner, "address", _mac(port.mac_address), "mtu", mtu, "up", netns=ns)
        wanted = {f"{METADATA_ADDRESS}/32"}
        for subnet in dhcp_subnets(net):
            for ip in port.fixed_ips:
                if ip.subnet_id == subnet.id:
                    wanted.add(f"{ip.address}/{subnet.cidr.prefixlen}")
        shown = await linux.ip("-j", "addr", "show", "dev", inner, netns=ns)
        have = set()
        for link in json.loads(shown.output or "[]"):
            for a in link.get("addr_info", []):
                if a.get("family") == "inet":
                    have.add(f"{a['local']}/{a['prefixlen']}")
        for addr in sorted(have - wanted):
            await linux.ip("addr", "del", addr, "dev", inner, netns=ns)
        for addr in sorted(wanted - have):
            await linux.ip("addr", "add", addr, "dev", inner, netns=ns)

    # -- dnsmasq's files -----------------------------------------------------------------

    def _dir(self, network_id: str) -> Path:
        if not _ID.fullmatch(network_id):
            raise HostNetworkError(f"{network_id!r} is not a network id")
        return self.root / network_id

    def _check_reachable(self) -> None:
        """dnsmasq re-reads its files as nobody: every directory above them must let it in."""
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        for d in [self.root, *self.root.parents]:
            if not os.stat(d).st_mode & stat.S_IXOTH:
                raise HostNetworkError(f"dnsmasq (user nobody) cannot reach its files under {self.root}: "
                                       f"{d} is not searchable by others (chmod o+x {d})")

    async def _write_files(self, net: Network, port: Port, want: Desired) -> bool:
        """hosts and opts under the network's directory; True when either changed."""
        d = self._dir(net.id)
        await self.made.record(FILES, net.id, {"path": str(d)})
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o755)
        hosts = _write(d / "hosts", hosts_file(net, want))
        opts = _write(d / "opts", opts_file(net, port, self.deps.settings.dns_servers))
        return hosts or opts

    # -- dnsmasq -------------------------------------------------------------------------

    def _argv(self, net: Network, port: Port, ns: str) -> tuple[str, ...]:
        d = self._dir(net.id)
        argv = ["ip", "netns", "exec", ns, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
                "--no-hosts", "--no-resolv", "--port=0", "--bind-interfaces",
                f"--interface={ns_device(port.id)}", "--except-interface=lo", "--no-ping", "--log-facility=-",
                f"--pid-file={d / 'pid'}", f"--dhcp-leasefile={d / 'leases'}",
                f"--dhcp-hostsfile={d / 'hosts'}", f"--dhcp-optsfile={d / 'opts'}"]
        for subnet in dhcp_subnets(net):
            cidr = subnet.cidr
            argv.append(f"--dhcp-range=set:{_tag(subnet)},{cidr.network_address},static,{cidr.netmask},"
                        f"{LEASE_SECONDS}s")
        return tuple(argv)

    async def _dnsmasq(self, net: Network, port: Port, ns: str, files_changed: bool) -> None:
        argv = self._argv(net, port, ns)
        d = self._dir(net.id)
        running = self._running.get(net.id)
        if running is not None and running.alive() and running.argv == argv:
            if not files_changed:
                return
            if unbacked_leases(_read(d / "leases"), _read(d / "hosts")) is None:
                try:
                    running.proc.send_signal(signal.SIGHUP)
                    log.info("dnsmasq told to re-read its files", network_id=net.id, pid=running.proc.pid)
                    return
                except ProcessLookupError:
                    pass
            else:
                # A SIGHUP re-reads the hosts but not the leases: restarted below, without them.
                log.info("dnsmasq restarted to forget the leases of ports that are gone", network_id=net.id)
        await self._stop(net.id)
        # Stopped first: a running dnsmasq rewrites the lease file from what it holds.
        kept = unbacked_leases(_read(d / "leases"), _read(d / "hosts"))
        if kept is not None:
            _write(d / "leases", kept)
        await self.made.record(DNSMASQ, net.id, {"pid": None, "pid_file": str(d / "pid")})
        with open(d / "dnsmasq.log", "ab") as out:
            proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL, stdout=out,
                                                        stderr=asyncio.subprocess.STDOUT)
        await self.made.record(DNSMASQ, net.id, {"pid": proc.pid, "pid_file": str(d / "pid")})
        self._running[net.id] = running = Running(proc, argv, os.pidfd_open(proc.pid))
        self._watch(net.id, running)
        log.info("dnsmasq started", network_id=net.id, pid=proc.pid, namespace=ns)

    def _watch(self, network_id: str, running: Running) -> None:
        """Ask for a pass as soon as dnsmasq exits (the kernel says so through a pidfd)."""

        def ended() -> None:
            running.ended = True
            running.unwatch()
            if self._running.get(network_id) is running and not self._closing:
                log.warning("dnsmasq exited; starting it again", network_id=network_id, pid=running.proc.pid)
                self.deps.poke()

        assert running.pidfd is not None
        asyncio.get_running_loop().add_reader(running.pidfd, ended)

    async def _stop(self, network_id: str) -> None:
        """Stop the network's dnsmasq: ours, or one a crashed run left (checked to be ours)."""
        running = self._running.pop(network_id, None)
        if running is not None:
            await _stop_child(running)
        recorded = (await self.made.listed(DNSMASQ)).get(network_id)
        if recorded is not None:
            pid_file = recorded.get("pid_file") or str(self._dir(network_id) / "pid")
            for pid in {recorded.get("pid"), _read_pid(pid_file)} - {None}:
                if running is not None and pid == running.proc.pid:
                    continue
                if _is_our_dnsmasq(pid, pid_file):
                    log.info("stopping a dnsmasq an earlier run left", network_id=network_id, pid=pid)
                    await _end(pid)

    # -- removal -------------------------------------------------------------------------

    async def _remove_unwanted(self, want: Desired, needed: dict[str, Network], problems: list[str]) -> None:
        ports = {nid: self._dhcp_port(net, want) for nid, net in needed.items()}
        wanted_links = {p.tap for p in ports.values() if p is not None}
        for nid in await self.made.listed(DNSMASQ):
            if nid not in needed:
                await self._attempt(problems, nid, self._remove_dnsmasq(nid))
        for tap, detail in (await self.made.listed(LINK)).items():
            nid = detail.get("network_id", "")
            # A port not in the snapshot yet (just made) keeps its link: only a network that
            # needs no DHCP, or a DHCP port replaced by another, loses it.
            if nid not in needed or (ports.get(nid) is not None and tap not in wanted_links):
                await self._attempt(problems, nid, self._remove_link(tap, detail.get("namespace")))
        for ns, detail in (await self.made.listed(NAMESPACE)).items():
            if detail.get("network_id") not in needed:
                await self._attempt(problems, detail.get("network_id", ""), self._remove_namespace(ns))
        for nid in await self.made.listed(FILES):
            if nid not in needed:
                shutil.rmtree(self._dir(nid), ignore_errors=True)
                await self.made.forget(FILES, nid)
        for bridge, detail in (await self.made.listed(BRIDGE)).items():
            if detail.get("network_id") not in want.networks:
                await self._attempt(problems, detail.get("network_id", ""), self._remove_bridge(bridge))

    async def _remove_dnsmasq(self, network_id: str) -> None:
        await self._stop(network_id)
        await self.made.forget(DNSMASQ, network_id)
        log.info("dnsmasq stopped: the network needs no DHCP here", network_id=network_id)

    async def _remove_link(self, tap: str, ns: str | None) -> None:
        linux.check_name(tap)
        if (SYS_NET / tap).exists():
            await linux.ip("link", "del", "dev", tap)
        await self.made.forget(LINK, tap)

    async def _remove_namespace(self, ns: str) -> None:
        linux.check_name(ns, netns=True)
        if ns in await linux.namespaces():
            await linux.ip("netns", "del", ns)
            log.info("namespace removed", namespace=ns)
        await self.made.forget(NAMESPACE, ns)

    async def _remove_bridge(self, bridge: str) -> None:
        """The network is gone: its bridge too, once nothing is plugged in (another part's
        veth may still be; the next pass looks again)."""
        linux.check_name(bridge)
        brif = SYS_NET / bridge / "brif"
        if brif.is_dir():
            if any(brif.iterdir()):
                return
            await linux.ip("link", "del", "dev", bridge)
            log.info("bridge removed: its network is gone", bridge=bridge)
        await self.made.forget(BRIDGE, bridge)

    async def close(self) -> None:
        """dnsmasq stops with the service (guests keep their leases; the next start serves
        them again). Namespaces, links and files stay for the next start to reconcile."""
        self._closing = True
        for network_id in list(self._running):
            await _stop_child(self._running.pop(network_id))


# -- what dnsmasq reads -------------------------------------------------------------------

def _tag(subnet: Subnet) -> str:
    if not _ID.fullmatch(subnet.id):
        raise HostNetworkError(f"{subnet.id!r} is not a subnet id")
    return "s" + subnet.id.replace("-", "")


def _mac(text: str) -> str:
    mac = text.lower()
    if not _MAC.fullmatch(mac):
        raise HostNetworkError(f"{text!r} is not a MAC address")
    return mac


def hostname(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """Neutron's name for a port without a DNS name: host-10-0-0-5."""
    return "host-" + str(address).replace(".", "-").replace(":", "-")


def hosts_file(net: Network, want: Desired) -> str:
    """`<mac>,<ip>,<hostname>` for each compute port's address on a DHCP subnet of the network."""
    subnets = {s.id for s in dhcp_subnets(net)}
    lines = []
    for port in sorted(want.ports_on(net.id), key=lambda p: p.id):
        if not port.device_owner.startswith("compute:"):
            continue
        for ip in port.fixed_ips:
            if ip.subnet_id in subnets and ip.address.version == 4:
                lines.append(f"{_mac(port.mac_address)},{ip.address},{hostname(ip.address)}")
    return "".join(line + "\n" for line in lines)


def unbacked_leases(leases: str, hosts: str) -> str | None:
    """The lease file without the leases the hosts file no longer backs, or None when every
    lease is backed. dnsmasq keeps an address leased to a MAC until the lease runs out, even
    once that MAC's port is gone: a new port given the same address (a server deleted, the
    next one created) is told "no address available" meanwhile, and never comes up. Lines
    that are not IPv4 leases (dnsmasq's `duid` line) are kept."""
    backed = set()
    for line in hosts.splitlines():
        fields = line.split(",")
        if len(fields) >= 2:
            backed.add((fields[0].lower(), fields[1]))
    kept, dropped = [], False
    for line in leases.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0].isdigit() and (fields[1].lower(), fields[2]) not in backed:
            dropped = True
            continue
        kept.append(line + "\n")
    return "".join(kept) if dropped else None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def opts_file(net: Network, port: Port, default_dns: tuple[str, ...]) -> str:
    """Per DHCP subnet: router (none sent when the subnet has no gateway, rather than
    dnsmasq's own address), DNS servers, MTU, and classless static routes (RFC 3442: a client
    that gets them ignores the router option, so the default route is among them)."""
    own = {ip.subnet_id: ip.address for ip in port.fixed_ips}
    lines = []
    for subnet in dhcp_subnets(net):
        tag = f"tag:{_tag(subnet)}"
        gateway = subnet.gateway_ip
        lines.append(f"{tag},option:router" + (f",{gateway}" if gateway else ""))
        dns = [str(a) for a in _addresses(subnet.dns_nameservers or default_dns) if a.version == 4]
        lines.append(f"{tag},option:dns-server" + "".join(f",{a}" for a in dns))
        lines.append(f"{tag},option:mtu,{int(net.mtu)}")
        routes = []
        if subnet.id in own:
            routes.append((f"{METADATA_ADDRESS}/32", str(own[subnet.id])))
        for destination, nexthop in subnet.host_routes:
            dest, hop = ipaddress.ip_network(destination), ipaddress.ip_address(nexthop)
            if dest.version == 4 and hop.version == 4:
                routes.append((str(dest), str(hop)))
        if gateway:
            routes.append(("0.0.0.0/0", str(gateway)))
        lines.append(f"{tag},option:classless-static-route" + "".join(f",{d},{h}" for d, h in routes))
    return "".join(line + "\n" for line in lines)


def _addresses(texts: tuple[str, ...]) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    out = []
    for text in texts:
        try:
            out.append(ipaddress.ip_address(text))
        except ValueError:
            log.warning("ignoring a DNS server that is not an address", value=text)
    return out


def _write(path: Path, content: str) -> bool:
    """Replace `path` atomically with `content` (readable by dnsmasq's user); False when it
    already held exactly that."""
    try:
        if path.read_text() == content:
            return False
    except OSError:
        pass
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(content)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return True


def _port_of(vif: Vif) -> Port:
    return Port(id=vif.port_id, network_id=vif.network_id, mac_address=vif.mac_address.lower(),
                device_owner=DHCP_OWNER, device_id="", binding_host="",
                fixed_ips=tuple(FixedIp(subnet_id=ip.subnet_id, address=ipaddress.ip_address(ip.address))
                                for ip in vif.ips))


# -- processes ----------------------------------------------------------------------------

async def _stop_child(running: Running) -> None:
    """SIGTERM, then SIGKILL after a grace; reaped (asyncio waits for its own children)."""
    running.unwatch()
    if running.proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            running.proc.terminate()
        try:
            async with asyncio.timeout(STOP_GRACE):
                await running.proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                running.proc.kill()
            await running.proc.wait()


def _read_pid(pid_file: str) -> int | None:
    try:
        text = Path(pid_file).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _is_our_dnsmasq(pid: object, pid_file: str) -> bool:
    """Whether `pid` is a dnsmasq started with our pid file (not a pid reused since)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return (state != "Z" and bool(argv) and os.path.basename(argv[0]) == b"dnsmasq"
            and f"--pid-file={pid_file}".encode() in argv)


async def _end(pid: int) -> None:
    for sig, grace in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, STOP_GRACE)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        try:
            async with asyncio.timeout(grace):
                await exited(pid)
            return
        except TimeoutError:
            continue
    raise HostNetworkError(f"dnsmasq (pid {pid}) outlived SIGKILL")
