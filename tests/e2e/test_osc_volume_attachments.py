"""Cinder's attachments API with the real, unmodified `openstack` CLI against `nova-async
serve` (libvirt's test driver: the CLI only sees the API): a volume attached to a server by
hand (create with --connect, complete), listed, shown, deleted; the volume available again."""

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
wait_for() {
  for _ in $(seq 600); do
    s=$(openstack $1 show "$2" -f value -c status)
    [ "$s" = "$3" ] && return 0
    sleep 0.2
  done
  echo "timed out waiting for $1 $2 to be $3 (it is $s)"; return 1
}
export OS_VOLUME_API_VERSION=3.44
openstack flavor create --ram 512 --vcpus 1 --disk 1 m1.att
head -c 1048576 /dev/zero > disk.raw
openstack image create --file disk.raw --disk-format raw --container-format bare img
openstack server create --flavor m1.att --image img --no-network --wait vm1
openstack volume create --size 1 data1
wait_for volume data1 available
att=$(openstack volume attachment create --connect --host compute-x --mountpoint /dev/vdb \
      -f value -c ID data1 vm1)
echo "volume: $(openstack volume show data1 -f value -c status)"
openstack volume attachment complete "$att"
echo "volume: $(openstack volume show data1 -f value -c status)"
openstack volume attachment list
openstack volume attachment show "$att"
if openstack volume delete data1 2> busy.err; then echo "deleted an attached volume"; exit 1; fi
cat busy.err
openstack volume attachment delete "$att"
echo "volume: $(openstack volume show data1 -f value -c status)"
echo "left: [$(openstack volume attachment list -f value -c ID)]"
openstack volume delete data1
"""


async def test_openstack_cli_volume_attachments(database, work_dir):
    async with serve(work_dir / "osc-att", "--database", database, "--libvirt-uri", "test:///default") as served:
        output = await run_ok("bash", "-euxo", "pipefail", "-c", SCRIPT, env=os_env(served), cwd=work_dir,
                              served=served)
    for expected in (r"volume: attaching\n", r"volume: in-use\n", r"\| Status +\| attached +\|",
                     r"\| [0-9a-f-]{36} \| [0-9a-f-]{36} \| [0-9a-f-]{36} \| attached +\|",
                     r"must not be migrating, attached", r"volume: available\n", r"left: \[\]\n"):
        assert re.search(expected, output), (expected, output)
