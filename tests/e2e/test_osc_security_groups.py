"""Security groups with the real, unmodified `openstack` CLI, as a user types them, against
`nova-async serve` on libvirt's test driver: groups and rules made, listed, shown and
deleted, and servers booted into groups and given more; and a floating IP added to the
server shows in `server list` and `server show` after its fixed address until removed."""

from __future__ import annotations

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
openstack security group create --description "web servers" web
openstack security group create spare
openstack security group show web
openstack security group rule create --protocol tcp --dst-port 22 default
openstack security group rule create --protocol tcp --dst-port 80:81 --remote-ip 10.0.0.0/8 web
openstack security group rule list default
openstack security group rule list web
openstack security group delete spare
echo "groups: $(openstack security group list -f value -c Name | sort | tr '\n' ' ')"
openstack flavor create --ram 256 --vcpus 1 --disk 1 sg.small
openstack network create sgnet
openstack subnet create --network sgnet --subnet-range 10.4.0.0/24 sgsub
head -c 65536 /dev/zero > disk.raw
openstack image create --file disk.raw --disk-format raw --container-format bare sgimg
openstack server create --flavor sg.small --image sgimg --network sgnet --security-group web --wait sgvm
echo "before: $(openstack server show sgvm -f value -c security_groups | tr '\n' ' ')"
openstack server add security group sgvm default
echo "after: $(openstack server show sgvm -f value -c security_groups | tr '\n' ' ')"
openstack port list --server sgvm -f value -c ID > port.id
echo "port groups: $(openstack port show "$(cat port.id)" -f value -c security_group_ids | tr '\n' ' ')"
if openstack security group delete web 2> in_use.err; then echo "deleted a group in use"; exit 1; fi
cat in_use.err
openstack server remove security group sgvm web
echo "removed: $(openstack server show sgvm -f value -c security_groups | tr '\n' ' ')"
openstack router create --external-gateway public sgr
openstack router add subnet sgr sgsub
openstack floating ip create -f value -c floating_ip_address public > fip
openstack server add floating ip sgvm "$(cat fip)"
echo "listed: $(openstack server list -f value -c Networks)"
echo "shown: $(openstack server show sgvm -f value -c addresses)"
openstack server remove floating ip sgvm "$(cat fip)"
echo "unlisted: $(openstack server list -f value -c Networks)"
openstack server delete --wait sgvm
openstack floating ip delete "$(cat fip)"
openstack security group delete web
"""


async def test_openstack_cli_security_groups(database, work_dir):
    async with serve(work_dir / "osc-sg", "--database", database, "--libvirt-uri", "test:///default") as served:
        output = await run_ok("bash", "-euxo", "pipefail", "-c", SCRIPT, env=os_env(served), cwd=work_dir,
                              served=served, timeout=600)
    for expected in (r"\| name +\| web ", r"\| description +\| web servers",
                     r"\| tcp +\| IPv4 +\| 0\.0\.0\.0/0 +\| 22:22 +\| ingress",
                     r"\| tcp +\| IPv4 +\| 10\.0\.0\.0/8 +\| 80:81 +\| ingress",
                     r"groups: default web \n", r"before: \[\{'name': 'web'\}\]",
                     r"after: .*'default'", r"after: .*'web'", r"port groups: \S+, \S+ \n",
                     r"Security Group \S+ in use", r"removed: \[\{'name': 'default'\}\] \n",
                     # a floating IP on the server shows after its fixed address, as Nova's
                     r"listed: \{'sgnet': \['10\.4\.0\.\d+', '203\.0\.113\.\d+'\]\}\n",
                     r"shown: \{'sgnet': \['10\.4\.0\.\d+', '203\.0\.113\.\d+'\]\}\n",
                     r"unlisted: \{'sgnet': \['10\.4\.0\.\d+'\]\}\n"):
        assert re.search(expected, output), (expected, output)
