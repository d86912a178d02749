"""Routers and floating IPs with the real, unmodified `openstack` CLI, as a user types them,
against `nova-async serve` on libvirt's test driver (the API only: nothing is plugged on the
host). The external network `public` is the one the service makes on its first start, here
on TEST-NET-3."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.e2e.conftest import serve
from tests.e2e.driver import BIN, os_env, run_ok

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (BIN / "openstack").exists() and not shutil.which("openstack"),
                       reason="python-openstackclient is installed by `make test`"),
]

SCRIPT = r"""
openstack flavor create --ram 256 --vcpus 1 --disk 1 f1
head -c 65536 /dev/zero > disk.raw
openstack image create --file disk.raw --disk-format raw --container-format bare img1
openstack network create net1
openstack subnet create --network net1 --subnet-range 10.0.0.0/24 sub1
openstack server create --flavor f1 --image img1 --network net1 --wait vm1
openstack router create r1
openstack router add subnet r1 sub1
openstack router set --external-gateway public r1
openstack router show r1
IP=$(openstack floating ip create public -f value -c floating_ip_address)
echo "floating ip: $IP"
openstack server add floating ip vm1 "$IP"
openstack floating ip list
openstack floating ip list -f json > associated.json
openstack floating ip show "$IP"
openstack server remove floating ip vm1 "$IP"
openstack floating ip list -f json > removed.json
openstack server add floating ip vm1 "$IP"
openstack server delete --wait vm1
openstack floating ip list -f json > server-gone.json
openstack router remove subnet r1 sub1
openstack router unset --external-gateway r1
openstack router show r1 -f json > unset.json
openstack floating ip delete "$IP"
openstack router delete r1
openstack router list -f json > routers.json
openstack floating ip list -f json > fips.json
"""


async def test_openstack_cli_routers_and_floating_ips(database, work_dir):
    config = work_dir / "nova-async.toml"
    config.write_text('[network]\nexternal_cidr = "203.0.113.0/24"\n')
    async with serve(work_dir / "osc-routers", "--database", database, "--libvirt-uri", "test:///default",
                     "--config", str(config)) as served:
        output = await run_ok("bash", "-euxo", "pipefail", "-c", SCRIPT, env=os_env(served), cwd=work_dir,
                              served=served)
    [ip] = re.findall(r"^floating ip: (\S+)$", output, re.M)
    assert ip == "203.0.113.3", output  # .1 the gateway, .2 router r1's
    assert re.search(r"\| external_gateway_info +\| .*203\.0\.113\.2", output), output

    def read(name):
        return json.loads((work_dir / name).read_text())

    [associated] = read("associated.json")
    assert associated["Floating IP Address"] == ip and associated["Fixed IP Address"].startswith("10.0.0.")
    assert associated["Port"]
    [removed] = read("removed.json")
    assert removed["Port"] is None and removed["Fixed IP Address"] is None
    # The server's port went with it; its floating IP stays, unassociated.
    [left] = read("server-gone.json")
    assert left["Floating IP Address"] == ip and left["Port"] is None and left["Fixed IP Address"] is None
    assert read("unset.json")["external_gateway_info"] in (None, {}, "null", "")
    assert read("routers.json") == [] and read("fips.json") == []
