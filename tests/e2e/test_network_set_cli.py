"""`openstack port set`, `network set` and `subnet set`, the unmodified CLI against a live
`nova-async serve` (libvirt's test driver: these commands only reach the network API). Each
`set` reads the resource, merges what it is told into what it read (the port's addresses
and address pairs, the subnet's name servers) and sends one PUT."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import serve
from tests.e2e.driver import BIN, os_env, run_ok

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (BIN / "openstack").exists(), reason="python-openstackclient is installed by `make test`"),
]

SETUP = r"""
openstack network create net1
openstack subnet create --network net1 --subnet-range 10.30.0.0/24 \
    --allocation-pool start=10.30.0.2,end=10.30.0.200 sub1
openstack port create --network net1 port1
openstack port set --name port2 port1
openstack port set --allowed-address ip-address=10.30.0.250 port2
openstack port set --allowed-address ip-address=192.0.2.0/24,mac-address=fa:16:3e:00:00:99 port2
openstack port set --fixed-ip subnet=sub1,ip-address=10.30.0.77 port2
openstack network set --name net2 --description renamed net1
openstack subnet set --dns-nameserver 192.0.2.53 sub1
openstack subnet set --dns-nameserver 192.0.2.54 sub1
openstack subnet set --gateway 10.30.0.254 sub1
echo set-done
"""


async def test_openstack_set_commands_update_ports_networks_and_subnets(work_dir):
    async with serve(work_dir / "set", "--libvirt-uri", "test:///default") as served:
        env = os_env(served, OS_IDENTITY_API_VERSION="3")
        cwd = work_dir / "set-cwd"
        cwd.mkdir()
        out = await run_ok("bash", "-euxo", "pipefail", "-c", SETUP, env=env, cwd=cwd, timeout=600, served=served)
        assert "set-done" in out

        async def show(*args: str) -> dict:
            return json.loads(await run_ok("openstack", *args, "-f", "json", env=env, cwd=cwd, served=served))

        port = await show("port", "show", "port2")
        assert sorted(ip["ip_address"] for ip in port["fixed_ips"]) == ["10.30.0.2", "10.30.0.77"]
        assert port["allowed_address_pairs"] == [
            {"ip_address": "10.30.0.250", "mac_address": port["mac_address"]},
            {"ip_address": "192.0.2.0/24", "mac_address": "fa:16:3e:00:00:99"}]
        assert port["revision_number"] == 5
        net = await show("network", "show", "net2")
        assert net["description"] == "renamed" and net["revision_number"] == 2
        subnet = await show("subnet", "show", "sub1")
        # In the order sent, which Neutron keeps: the CLI puts the new server first.
        assert subnet["dns_nameservers"] == ["192.0.2.54", "192.0.2.53"]
        assert subnet["gateway_ip"] == "10.30.0.254" and subnet["revision_number"] == 4
