"""The metadata service on this host, end to end: a DHCP namespace `qdhcp-<net>` holding
169.254.169.254/32 and a "guest" namespace wired to it by a veth, as the DHCP part leaves
them; an instance and its port made through the network API; the Metadata part applied
with a Desired built by hand; and a guest asking over real TCP from its own namespace.

Needs root (namespaces); every namespace a test makes is removed whatever happens."""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from nova_async.config import NetworkSettings
from nova_async.dataplane import linux
from nova_async.dataplane.desired import Desired, Network, Subnet
from nova_async.dataplane.made import Made
from nova_async.dataplane.metadata import Metadata
from nova_async.dataplane.metadata_source import Requesters
from nova_async.common import errors, process
from tests.harness import running

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"),
                                reason="needs root and iproute2: the test makes network namespaces")

NET = "/network/v2.0"
CIDR = "10.250.0.0/24"
DHCP_IP, GUEST_IP, STRANGER_IP = "10.250.0.2", "10.250.0.5", "10.250.0.9"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMetadataTestKey me@laptop"
USER_DATA = b"#cloud-config\nhostname: from-user-data\n\xff"

# Run in the guest's namespace: one GET, the answer as JSON on stdout.
CLIENT = """
import base64, http.client, json, sys
source, path, headers, method = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
try:
    conn = http.client.HTTPConnection("169.254.169.254", 80, source_address=(source, 0), timeout=10)
    conn.request(method, path, headers=headers)
    resp = conn.getresponse()
    print(json.dumps({"status": resp.status, "body": base64.b64encode(resp.read()).decode()}))
except OSError as exc:
    print(json.dumps({"error": type(exc).__name__}))
"""


@pytest.fixture
async def namespaces():
    """Names of namespaces the test makes; all of them are deleted afterwards."""
    made: list[str] = []
    try:
        yield made
    finally:
        for name in made:
            await linux.run("ip", "netns", "del", name, check=False)


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["network"], tmp_path) as harness:
        yield harness


async def post(h, path, body):
    resp = await h.http.post(NET + path, json=body, headers=h.admin)
    assert resp.status == 201, await resp.text()
    return await resp.json()


async def cloud(h) -> tuple[str, str, str]:
    """A network with a DHCP subnet, a DHCP port and an instance with a port on it: the
    network's, the subnet's and the instance's ids."""
    net = (await post(h, "/networks", {"network": {"name": "md"}}))["network"]["id"]
    subnet = (await post(h, "/subnets", {"subnet": {"network_id": net, "cidr": CIDR, "ip_version": 4,
                                                    "enable_dhcp": True}}))["subnet"]["id"]
    await post(h, "/ports", {"port": {"network_id": net, "device_owner": "network:dhcp", "device_id": f"dhcp-{net}",
                                      "fixed_ips": [{"subnet_id": subnet, "ip_address": DHCP_IP}]}})
    instance = str(uuid.uuid4())
    await post(h, "/ports", {"port": {"network_id": net, "device_owner": "compute:nova", "device_id": instance,
                                      "fixed_ips": [{"subnet_id": subnet, "ip_address": GUEST_IP}]}})
    await h.cell1.execute(
        "INSERT INTO instances (uuid, display_name, hostname, project_id, user_id, reservation_id, flavor,"
        " request_spec, vm_state, key_name, key_data, user_data, metadata, availability_zone)"
        " VALUES ($1, 'web 1', 'web-1', 'proj', 'user', 'r-md1', $2, '{}', 'active', 'laptop', $3, $4, $5,"
        " 'nova')", instance, {"name": "m1.small"}, KEY, base64.b64encode(USER_DATA).decode(), {"role": "web"})
    async with h.pool.acquire() as conn:
        await h.cells.map_instances(conn, h.cells.default, [instance], "proj", "user")
    return net, subnet, instance


def desired(net: str, subnet: str) -> Desired:
    return Desired(networks={net: Network(id=net, mtu=1500, external=False, subnets=(
        Subnet(id=subnet, network_id=net, cidr=ipaddress.ip_network(CIDR), ip_version=4,
               gateway_ip=None, enable_dhcp=True),))})


async def plumb(net: str, namespaces: list[str]) -> str:
    """The DHCP namespace as the DHCP part leaves it, and a guest namespace beside it (its
    name returned) whose route to 169.254.169.254 goes through the DHCP port."""
    dhcp, guest = f"qdhcp-{net}", f"mdguest-{net[:8]}"
    for name in (dhcp, guest):
        await linux.ip("netns", "add", name)
        namespaces.append(name)
    dev = f"ns-{net[:11]}"
    await linux.ip("link", "add", dev, "type", "veth", "peer", "name", "eth0", "netns", guest, netns=dhcp)
    for args in (("addr", "add", f"{DHCP_IP}/24", "dev", dev), ("addr", "add", "169.254.169.254/32", "dev", dev),
                 ("link", "set", dev, "up"), ("link", "set", "lo", "up")):
        await linux.ip(*args, netns=dhcp)
    for args in (("addr", "add", f"{GUEST_IP}/24", "dev", "eth0"), ("addr", "add", f"{STRANGER_IP}/24", "dev", "eth0"),
                 ("link", "set", "eth0", "up"), ("link", "set", "lo", "up"),
                 ("route", "add", "169.254.169.254/32", "via", DHCP_IP)):
        await linux.ip(*args, netns=guest)
    return guest


async def ask(guest: str, path: str, source: str = GUEST_IP, headers: dict[str, str] | None = None,
              method: str = "GET") -> dict:
    done = await process.run("ip", "netns", "exec", guest, sys.executable, "-c", CLIENT, source, path,
                             json.dumps(headers or {}), method, timeout=30)
    answer = json.loads(done.output.strip().splitlines()[-1])
    if "body" in answer:
        answer["body"] = base64.b64decode(answer["body"])
    return answer


def threads_in_other_namespaces() -> list[str]:
    own = os.stat("/proc/self/ns/net").st_ino
    elsewhere = []
    for task in Path("/proc/self/task").iterdir():
        try:
            if os.stat(task / "ns" / "net").st_ino != own:
                elsewhere.append(task.name)
        except FileNotFoundError:
            pass   # a thread that ended meanwhile (an idle pool thread, say) is in none
    return elsewhere


def part(h, tmp_path: Path) -> Metadata:
    return Metadata(pool=h.pool, cells=h.cells, made=Made(h.pool, "h1"), settings=NetworkSettings(), host="h1",
                    state_dir=tmp_path)


async def test_a_guest_reads_its_metadata_through_its_dhcp_namespace(h, namespaces, tmp_path):
    net, subnet, instance = await cloud(h)
    metadata = part(h, tmp_path)
    try:
        await metadata.apply(desired(net, subnet))   # no namespace yet: waits, quietly
        assert metadata.serving == set()
        guest = await plumb(net, namespaces)
        await metadata.apply(desired(net, subnet))
        assert metadata.serving == {net}
        assert threads_in_other_namespaces() == []

        answer = await ask(guest, "/openstack/latest/meta_data.json")
        assert answer["status"] == 200
        meta = json.loads(answer["body"])
        assert (meta["uuid"], meta["name"], meta["hostname"]) == (instance, "web 1", "web-1")
        assert meta["public_keys"] == {"laptop": KEY} and meta["meta"] == {"role": "web"}
        assert meta["keys"] == [{"name": "laptop", "type": "ssh", "data": KEY}]
        assert await ask(guest, "/latest/meta-data/public-keys/0/openssh-key") == {"status": 200, "body": KEY.encode()}
        assert await ask(guest, "/openstack/latest/user_data") == {"status": 200, "body": USER_DATA}
        assert (await ask(guest, "/latest/meta-data/local-ipv4"))["body"] == GUEST_IP.encode()
        assert (await ask(guest, "/openstack/latest/password", method="POST"))["status"] == 405
        network_data = json.loads((await ask(guest, "/openstack/latest/network_data.json"))["body"])
        assert network_data["networks"][0]["type"] == "ipv4_dhcp"
        assert network_data["networks"][0]["network_id"] == net

        # An address no port holds is nobody, whatever the request claims.
        assert (await ask(guest, "/openstack/latest/meta_data.json", source=STRANGER_IP))["status"] == 404
        claims = {"X-Forwarded-For": GUEST_IP, "X-Instance-ID": instance, "X-Real-IP": GUEST_IP}
        assert (await ask(guest, "/latest/meta-data/instance-id", source=STRANGER_IP, headers=claims))["status"] == 404

        await metadata.apply(Desired())   # the network is gone: so is its listener
        assert metadata.serving == set()
        assert await ask(guest, "/openstack") == {"error": "ConnectionRefusedError"}
    finally:
        await metadata.close()


async def test_a_namespace_made_again_gets_a_new_listener(h, namespaces, tmp_path):
    net, subnet, _ = await cloud(h)
    metadata = part(h, tmp_path)
    try:
        guest = await plumb(net, namespaces)
        await metadata.apply(desired(net, subnet))
        assert (await ask(guest, "/latest/meta-data/hostname"))["body"] == b"web-1"
        # Recovery (or an operator) replaces the DHCP namespace: the old socket serves nobody.
        for name in list(namespaces):
            await linux.run("ip", "netns", "del", name, check=False)
        namespaces.clear()
        await metadata.apply(desired(net, subnet))
        assert metadata.serving == set()
        guest = await plumb(net, namespaces)
        await metadata.apply(desired(net, subnet))
        assert (await ask(guest, "/latest/meta-data/hostname"))["body"] == b"web-1"
    finally:
        await metadata.close()
    assert metadata.serving == set()


async def test_who_is_asking_is_read_from_the_database(h):
    """Without namespaces: the requester and what is read about it (floating IP, security
    groups, a deleted instance)."""
    net, _, instance = await cloud(h)
    requesters = Requesters(h.pool, h.cells)
    found = await requesters.facts(net, GUEST_IP)
    assert found.uuid == instance and found.user_data == USER_DATA and found.instance_type == "m1.small"
    assert found.floating_ips == () and found.security_groups == ("default",)  # a new port's group

    # A floating IP associated with the instance's port, and a security group on that port.
    public = (await post(h, "/networks", {"network": {"name": "public", "router:external": True}}))["network"]["id"]
    public_subnet = (await post(h, "/subnets", {"subnet": {"network_id": public, "cidr": "203.0.113.0/24",
                                                           "ip_version": 4}}))["subnet"]["id"]
    holder = (await post(h, "/ports", {"port": {"network_id": public, "device_owner": "network:floatingip",
                                                "fixed_ips": [{"subnet_id": public_subnet,
                                                               "ip_address": "203.0.113.7"}]}}))["port"]["id"]
    port = await h.pool.fetchval("SELECT id FROM ports WHERE device_id = $1", instance)
    await h.pool.execute(
        "INSERT INTO floatingips (id, project_id, floating_network_id, floating_port_id, floating_ip_address,"
        " port_id, fixed_ip_address) VALUES ($1, 'proj', $2, $3, '203.0.113.7', $4, $5)",
        uuid.uuid4(), public, holder, port, GUEST_IP)
    group = uuid.uuid4()
    await h.pool.execute("INSERT INTO security_groups (id, project_id, name) VALUES ($1, 'proj', 'web')", group)
    await h.pool.execute("INSERT INTO port_security_groups (port_id, security_group_id) VALUES ($1, $2)", port, group)  # beside default
    found = await requesters.facts(net, GUEST_IP)
    assert found.floating_ips == ("203.0.113.7",) and found.security_groups == ("default", "web")
    for network_id, address in ((net, STRANGER_IP), (net, DHCP_IP), (str(uuid.uuid4()), GUEST_IP), (net, "bogus")):
        with pytest.raises(errors.NotFound):
            await requesters.facts(network_id, address)
    await h.cell1.execute("UPDATE instances SET deleted_at = now(), vm_state = 'deleted' WHERE uuid = $1", instance)
    with pytest.raises(errors.NotFound):
        await requesters.facts(net, GUEST_IP)
