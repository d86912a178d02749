"""Volumes on servers with the real, unmodified `openstack` CLI, as a user types them
(`server add volume`, `server volume list`, `server remove volume`, the same volume in
another server, grown while attached, `server delete` that leaves it available), against `nova-async serve` on
libvirt's test driver with the volume role's default (file) backend."""

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
wait_volume() { until [ "$(openstack volume show "$1" -f value -c status)" = "$2" ]; do sleep 0.2; done; }
openstack flavor create --ram 256 --vcpus 1 --disk 1 v.small
openstack network create vnet
openstack subnet create --network vnet --subnet-range 10.4.0.0/24 vsub
head -c 65536 /dev/zero > disk.raw
openstack image create --file disk.raw --disk-format raw --container-format bare vimg
openstack server create --flavor v.small --image vimg --network vnet --wait vm1
openstack server create --flavor v.small --image vimg --network vnet --wait vm2
openstack volume create --size 1 data1
wait_volume data1 available
openstack server add volume vm1 data1
wait_volume data1 in-use
openstack server volume list vm1
echo "attached: $(openstack server show vm1 -f json -c volumes_attached | tr -d "\n")"
openstack server remove volume vm1 data1
wait_volume data1 available
echo "detached: $(openstack server show vm1 -f json -c volumes_attached | tr -d "\n")"
openstack server add volume vm2 data1
wait_volume data1 in-use
openstack volume set --size 2 data1
until [ "$(openstack volume show data1 -f value -c size)" = 2 ]; do sleep 0.2; done
wait_volume data1 in-use
openstack server delete --wait vm2
echo "after delete: $(openstack volume show data1 -f value -c status)"
openstack volume delete data1
openstack server delete --wait vm1
"""


def shown(output: str, label: str) -> list:
    [raw] = re.findall(rf"^{label}: (.*)$", output, re.M)
    return json.loads(raw)["volumes_attached"]


async def test_openstack_cli_attaches_and_detaches_volumes(database, work_dir):
    async with serve(work_dir / "osc-volumes", "--database", database, "--libvirt-uri", "test:///default") as served:
        output = await run_ok("bash", "-euxo", "pipefail", "-c", SCRIPT, env=os_env(served), cwd=work_dir,
                              served=served)
        log = "\n".join(served.log)
    assert "volume extended in the guest" in log, log[-3000:]   # the volume role told vm2's host
    attached = shown(output, "attached")
    assert len(attached) == 1 and attached[0]["delete_on_termination"] is False, output
    assert re.search(r"\| /dev/vdb +\|", output), output         # server volume list
    assert shown(output, "detached") == [], output
    assert re.search(r"^after delete: available$", output, re.M), output
