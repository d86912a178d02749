"""DHCP on this host, end to end: networks, subnets and ports made through the network API,
the data plane running, and a "guest" — a namespace this test makes, plugged into the
network's bridge by a veth named as libvirt would name the port's tap, with the port's MAC —
asking with busybox's udhcpc. Needs root (namespaces, bridges, dnsmasq); skipped otherwise."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from nova_async.dataplane import dhcp
from nova_async.config import NetworkSettings
from nova_async.dataplane.desired import bridge_name, tap_name
from nova_async.dataplane.made import Made
from nova_async.dataplane.reconcile import PartDeps
from nova_async.dataplane.role import tear_down
from nova_async.network.client import NetworkClient
from tests.harness import running
from tests.waiting import until

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("dnsmasq") or not shutil.which("busybox"),
    reason="DHCP on the host needs root, dnsmasq and busybox (udhcpc)")

NET = "/network/v2.0/networks"
SUBNET = "/network/v2.0/subnets"
PORT = "/network/v2.0/ports"
SCRIPT = "#!/bin/sh\n[ \"$1\" = bound ] && echo \"ip=$ip mask=$mask router=$router dns=$dns mtu=$mtu " \
         "routes=$staticroutes hostname=$hostname\"\nexit 0\n"


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=60)


@pytest.fixture
def state_dir():
    """dnsmasq re-reads its files as nobody: a state directory others can enter."""
    path = Path(tempfile.mkdtemp(prefix="nova-async-dp-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def host():
    return f"dp-{uuid.uuid4().hex[:10]}"


def table_of(host: str) -> str:
    return f"t{host.replace('-', '')}"


@contextlib.asynccontextmanager
async def dataplane(pool, state_dir, host):
    async with running(pool, ["network", "dataplane"], state_dir,
                       network={"dataplane": "on", "dataplane_table": table_of(host)},
                       compute={"host": host}) as h:
        yield h


@pytest.fixture
async def cleanup(pool, state_dir, host):
    """Whatever happens in the test, what the data plane made for `host` goes at the end: a
    pass of every part that wants nothing removes everything the record lists."""
    yield
    await tear_down(PartDeps(pool=pool, cells=None, made=Made(pool, host), host=host,  # type: ignore[arg-type]
                             settings=NetworkSettings(dataplane_table=table_of(host)),
                             state_dir=state_dir / "dataplane", network=NetworkClient(None),  # type: ignore[arg-type]
                             bus=None, poke=lambda: None))


@contextlib.contextmanager
def guest(bridge: str, tap: str, mac: str):
    """A namespace with eth0 (MAC `mac`) whose peer `tap` is plugged into `bridge`."""
    ns = f"g-{uuid.uuid4().hex[:12]}"
    script = Path(tempfile.mkdtemp(prefix="udhcpc-")) / "script"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "link", "add", "name", tap, "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "link", "set", "dev", tap, "master", bridge, "up")
        sh("ip", "-n", ns, "link", "set", "dev", "eth0", "address", mac, "up")
        sh("ip", "-n", ns, "link", "set", "dev", "lo", "up")
        yield Guest(ns, str(script))
    finally:
        sh("ip", "link", "del", "dev", tap, check=False)
        sh("ip", "netns", "del", ns, check=False)
        shutil.rmtree(script.parent, ignore_errors=True)


class Guest:
    def __init__(self, ns: str, script: str) -> None:
        self.ns, self.script = ns, script

    def dhcp(self) -> dict[str, str] | None:
        """One DHCP exchange (3 discovers, 1 s apart): the options bound, or None unanswered."""
        done = sh("ip", "netns", "exec", self.ns, "busybox", "udhcpc", "-i", "eth0", "-n", "-q", "-f",
                  "-t", "3", "-T", "1", "-O", "mtu", "-O", "staticroutes", "-s", self.script, check=False)
        line = next((x for x in done.stdout.splitlines() if x.startswith("ip=")), None)
        if line is None:
            return None
        out = {}
        for key in ("ip", "mask", "router", "dns", "mtu", "routes", "hostname"):
            start = line.index(f"{key}=") + len(key) + 1
            following = [line.index(f" {k}=") for k in ("mask", "router", "dns", "mtu", "routes", "hostname")
                         if f" {k}=" in line and line.index(f" {k}=") >= start]
            out[key] = line[start:min(following)] if following else line[start:]
        return out


async def post(h, url, body):
    resp = await h.http.post(url, json=body, headers=h.admin)
    assert resp.status == 201, await resp.text()
    return await resp.json()


async def settled(h):
    outcome = await h.roles["dataplane"].reconciler.settled()
    assert outcome.clean, outcome.describe()


def namespaces() -> set[str]:
    return {line.split()[0] for line in sh("ip", "netns", "list").stdout.splitlines() if line.strip()}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


async def make_network(h, cidr="10.61.7.0/24", **subnet):
    net = (await post(h, NET, {"network": {"name": "dp", "mtu": 1400}}))["network"]
    sub = (await post(h, SUBNET, {"subnet": {"network_id": net["id"], "cidr": cidr, "ip_version": 4,
                                             "dns_nameservers": ["10.61.7.53"], **subnet}}))["subnet"]
    return net, sub


async def test_a_guest_gets_its_address_router_mtu_and_metadata_route(pool, state_dir, host, cleanup):
    async with dataplane(pool, state_dir, host) as h:
        net, sub = await make_network(h, host_routes=[{"destination": "192.168.77.0/24", "nexthop": "10.61.7.9"}])
        port = (await post(h, PORT, {"port": {"network_id": net["id"], "device_owner": "compute:nova",
                                              "device_id": str(uuid.uuid4())}}))["port"]
        await settled(h)
        dhcp_port = next(p for p in (await (await h.http.get(f"{PORT}?network_id={net['id']}",
                                                            headers=h.admin)).json())["ports"]
                         if p["device_owner"] == "network:dhcp")
        assert dhcp_port["device_id"] == f"dhcp-{host}"
        server = dhcp_port["fixed_ips"][0]["ip_address"]
        assert f"qdhcp-{net['id']}" in namespaces()

        address = port["fixed_ips"][0]["ip_address"]
        with guest(bridge_name(net["id"]), tap_name(port["id"]), port["mac_address"]) as g:
            got = g.dhcp()
            assert got is not None, "no DHCP answer for a port in the database"
            assert got["ip"] == address and got["mask"] == "24"
            assert got["router"] == "10.61.7.1" and got["dns"].strip() == "10.61.7.53" and got["mtu"] == "1400"
            assert got["routes"].split() == ["169.254.169.254/32", server, "192.168.77.0/24", "10.61.7.9",
                                             "0.0.0.0/0", "10.61.7.1"]
            assert got["hostname"] == "host-" + address.replace(".", "-")

        # A MAC the database does not know gets nothing.
        with guest(bridge_name(net["id"]), tap_name(str(uuid.uuid4())), "fa:16:3e:11:22:33") as g:
            assert g.dhcp() is None

        # The port deleted: its host entry goes, and its MAC is answered no more.
        assert (await h.http.delete(f"{PORT}/{port['id']}", headers=h.admin)).status == 204
        await settled(h)
        hosts = (state_dir / "dataplane" / "dhcp" / net["id"] / "hosts").read_text()
        assert port["mac_address"] not in hosts
        with guest(bridge_name(net["id"]), tap_name(port["id"]), port["mac_address"]) as g:
            assert g.dhcp() is None

        # The network deleted (its DHCP port with it): nothing of ours is left.
        pid = (await Made(pool, host).listed(dhcp.DNSMASQ))[net["id"]]["pid"]
        assert (await h.http.delete(f"{NET}/{net['id']}", headers=h.admin)).status == 204
        await settled(h)
        assert f"qdhcp-{net['id']}" not in namespaces()
        assert not alive(pid)
        assert not Path(f"/sys/class/net/{tap_name(dhcp_port['id'])}").exists()
        assert not Path(f"/sys/class/net/{bridge_name(net['id'])}").exists()
        for kind in (dhcp.DNSMASQ, dhcp.NAMESPACE, dhcp.LINK, dhcp.BRIDGE, dhcp.FILES):
            assert await Made(pool, host).listed(kind) == {}


async def test_an_address_a_deleted_port_had_leased_is_served_to_the_next_port(pool, state_dir, host, cleanup):
    """A server deleted and the next one given its address (as Neutron hands addresses out
    again): dnsmasq still holds the old MAC's lease, and without forgetting it would answer
    the new port "no address available" until the lease ran out, a day later."""
    async with dataplane(pool, state_dir, host) as h:
        net, sub = await make_network(h)

        async def compute_port(address: str) -> dict:
            return (await post(h, PORT, {"port": {
                "network_id": net["id"], "device_owner": "compute:nova", "device_id": str(uuid.uuid4()),
                "fixed_ips": [{"subnet_id": sub["id"], "ip_address": address}]}}))["port"]

        first, other = await compute_port("10.61.7.40"), await compute_port("10.61.7.41")
        await settled(h)
        for port in (first, other):
            with guest(bridge_name(net["id"]), tap_name(port["id"]), port["mac_address"]) as g:
                assert (g.dhcp() or {}).get("ip") == port["fixed_ips"][0]["ip_address"]
        leases = state_dir / "dataplane" / "dhcp" / net["id"] / "leases"
        assert first["mac_address"] in leases.read_text()

        assert (await h.http.delete(f"{PORT}/{first['id']}", headers=h.admin)).status == 204
        second = await compute_port("10.61.7.40")
        await settled(h)
        with guest(bridge_name(net["id"]), tap_name(second["id"]), second["mac_address"]) as g:
            got = g.dhcp()
        assert got is not None and got["ip"] == "10.61.7.40", "the address is still leased to the deleted port"
        # The other port's lease was kept across the restart that forgot the first one's.
        kept = leases.read_text()
        assert first["mac_address"] not in kept and other["mac_address"] in kept


def test_unbacked_leases_are_the_ones_whose_mac_and_address_no_host_line_names():
    hosts = "fa:16:3e:00:00:01,10.0.0.5,host-10-0-0-5\nfa:16:3e:00:00:02,10.0.0.6,host-10-0-0-6\n"
    leases = ("1795820821 fa:16:3e:00:00:01 10.0.0.5 host-10-0-0-5 ff:3e:00:00:01\n"
              "1795820821 fa:16:3e:00:00:09 10.0.0.6 host-10-0-0-6 *\n"
              "1795820821 fa:16:3e:00:00:03 10.0.0.7 * *\n"
              "duid 00:01:00:01:32:9b:78:14\n")
    assert dhcp.unbacked_leases(leases, hosts) == (
        "1795820821 fa:16:3e:00:00:01 10.0.0.5 host-10-0-0-5 ff:3e:00:00:01\nduid 00:01:00:01:32:9b:78:14\n")
    assert dhcp.unbacked_leases(leases.splitlines(keepends=True)[0], hosts) is None
    assert dhcp.unbacked_leases("", hosts) is None


async def test_dnsmasq_that_dies_is_started_again(pool, state_dir, host, cleanup):
    async with dataplane(pool, state_dir, host) as h:
        net, _ = await make_network(h)
        await settled(h)
        made = Made(pool, host)
        pid = (await made.listed(dhcp.DNSMASQ))[net["id"]]["pid"]
        # Its exit asks for a pass (the periodic one is an hour away); that pass starts another.
        reconciler = h.roles["dataplane"].reconciler
        reconciler.interval = 3600.0
        next_pass = asyncio.create_task(reconciler.settled(ask=False))
        await asyncio.sleep(0)  # it counts from now
        os.kill(pid, 9)
        assert (await next_pass).clean
        new_pid = (await made.listed(dhcp.DNSMASQ))[net["id"]]["pid"]
        assert new_pid != pid and alive(new_pid)


async def test_a_restart_after_a_crash_converges(pool, state_dir, host, cleanup):
    async with dataplane(pool, state_dir, host) as h:
        net, _ = await make_network(h)
        port = (await post(h, PORT, {"port": {"network_id": net["id"], "device_owner": "compute:nova",
                                              "device_id": str(uuid.uuid4())}}))["port"]
        await settled(h)
        old_pid = (await Made(pool, host).listed(dhcp.DNSMASQ))[net["id"]]["pid"]
        # As a SIGKILL of the service would leave it: no clean-up runs, so dnsmasq outlives
        # the run that started it.
        part = h.roles["dataplane"].reconciler.parts[0]

        async def crashed() -> None:
            pass

        part.close = crashed
    assert alive(old_pid)
    async with dataplane(pool, state_dir, host) as h:
        await settled(h)
        new_pid = (await Made(pool, host).listed(dhcp.DNSMASQ))[net["id"]]["pid"]
        assert new_pid != old_pid and alive(new_pid) and not alive(old_pid)
        with guest(bridge_name(net["id"]), tap_name(port["id"]), port["mac_address"]) as g:
            got = g.dhcp()
            assert got is not None and got["ip"] == port["fixed_ips"][0]["ip_address"]


async def test_compute_waits_for_the_ports_of_a_real_guest(pool, state_dir, host, cleanup):
    """What a real guest's build asks before it starts: answered once a pass that read the port
    is over, so its DHCP entry is in place; a simulated host never asks."""
    from nova_async.compute.host import Host

    async with dataplane(pool, state_dir, host) as h:
        net, _ = await make_network(h)
        port = (await post(h, PORT, {"port": {"network_id": net["id"], "device_owner": "compute:nova",
                                              "device_id": str(uuid.uuid4())}}))["port"]
        compute = Host(name=host, hypervisor=None, pool=pool, api_pool=pool, bus=h.bus, images=None,  # type: ignore[arg-type]
                       instances_root=state_dir, domain_type="qemu", dataplane=True)
        await compute.ports_ready([port["id"]])
        hosts = (state_dir / "dataplane" / "dhcp" / net["id"] / "hosts").read_text()
        assert port["mac_address"] in hosts
        # A simulated host (libvirt's test driver) has no data plane to ask, and asks nothing:
        # no one answers on its topic.
        simulated = Host(name="sim-nowhere", hypervisor=None, pool=pool, api_pool=pool, bus=h.bus,  # type: ignore[arg-type]
                         images=None, instances_root=state_dir, domain_type="test", dataplane=True)  # type: ignore[arg-type]
        await simulated.ports_ready([port["id"]])


async def test_a_network_left_without_dhcp_subnets_stops_being_served(pool, state_dir, host, cleanup):
    async with dataplane(pool, state_dir, host) as h:
        net, sub = await make_network(h)
        await settled(h)
        made = Made(pool, host)
        pid = (await made.listed(dhcp.DNSMASQ))[net["id"]]["pid"]
        assert (await h.http.delete(f"{SUBNET}/{sub['id']}", headers=h.admin)).status == 204
        await settled(h)
        assert f"qdhcp-{net['id']}" not in namespaces() and not alive(pid)
        ports = (await (await h.http.get(f"{PORT}?network_id={net['id']}", headers=h.admin)).json())["ports"]
        assert ports == []   # the DHCP port went with the last DHCP subnet
        # The network is still there: so is its bridge, for the guests compute may plug in.
        assert Path(f"/sys/class/net/{bridge_name(net['id'])}/bridge").is_dir()
        assert (await h.http.delete(f"{NET}/{net['id']}", headers=h.admin)).status == 204
        await settled(h)
        assert not Path(f"/sys/class/net/{bridge_name(net['id'])}").exists()


async def test_a_data_plane_that_cannot_serve_fails_the_wait_with_its_reason(pool, tmp_path, host, cleanup):
    """pytest's own tmp_path is 0700: dnsmasq (user nobody) could not read its files there, so
    the DHCP part refuses, and a guest's build would fail saying so instead of booting deaf."""
    from nova_async.common import errors
    from nova_async.compute.host import Host

    async with dataplane(pool, tmp_path, host) as h:
        net, _ = await make_network(h)
        port = (await post(h, PORT, {"port": {"network_id": net["id"], "device_owner": "compute:nova",
                                              "device_id": str(uuid.uuid4())}}))["port"]
        reconciler = h.roles["dataplane"].reconciler
        await until(lambda: reconciler.last.failures, what="a pass that failed")  # the reason is known
        h.roles["dataplane"].ports_ready_timeout = 0.5
        compute = Host(name=host, hypervisor=None, pool=pool, api_pool=pool, bus=h.bus, images=None,  # type: ignore[arg-type]
                       instances_root=tmp_path, domain_type="qemu", dataplane=True)
        with pytest.raises(errors.Unavailable) as failed:
            await compute.ports_ready([port["id"]])
        assert "could not make ports" in failed.value.message and "not searchable by others" in failed.value.message
