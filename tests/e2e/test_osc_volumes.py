"""Volumes with the real, unmodified `openstack` CLI (openstacksdk's block-storage proxy) and
`cinder` (python-cinderclient), as a user types them, against `nova-async serve`: create,
list, show, rename, extend, snapshot, a volume from the snapshot, quotas, delete."""

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

# The CLI does not wait for a volume; a user looks until it is there, as this does.
SCRIPT = r"""
wait_for() {
  for _ in $(seq 600); do
    s=$(openstack $1 show "$2" -f value -c status)
    [ "$s" = "$3" ] && return 0
    sleep 0.2
  done
  echo "timed out waiting for $1 $2 to be $3 (it is $s)"; return 1
}
openstack volume create --size 1 --description "first one" data1
wait_for volume data1 available
openstack volume list
openstack volume set --name data-one data1
openstack volume set --size 2 data-one
wait_for volume data-one available
echo "size: $(openstack volume show data-one -f value -c size)"
openstack volume snapshot create --volume data-one snap1
wait_for "volume snapshot" snap1 available
openstack volume snapshot list
openstack volume create --snapshot snap1 data2
wait_for volume data2 available
openstack volume show data2
echo "volumes: $(openstack volume list -f value -c Name | sort | tr '\n' ' ')"
openstack quota show
cinder list
cinder show data2
if openstack volume delete data-one 2> busy.err; then echo "deleted a volume with a snapshot"; exit 1; fi
cat busy.err
openstack volume delete data2
openstack volume snapshot delete snap1
for _ in $(seq 600); do [ -z "$(openstack volume snapshot list -f value -c ID)" ] && break; sleep 0.2; done
openstack volume delete data-one
for _ in $(seq 600); do [ -z "$(openstack volume list -f value -c ID)" ] && break; sleep 0.2; done
echo "left: [$(openstack volume list -f value -c Name)]"
"""


async def test_openstack_and_cinder_cli_volumes(database, work_dir):
    async with serve(work_dir / "osc-vol", "--database", database, "--libvirt-uri", "test:///default") as served:
        output = await run_ok("bash", "-euxo", "pipefail", "-c", SCRIPT, env=os_env(served), cwd=work_dir,
                              served=served)
    for expected in (r"size: 2\n", r"volumes: data-one data2 \n", r"\| description +\| first one",
                     r"\| snapshot_id +\| [0-9a-f-]{36}", r"\| volumes +\| +10 \|", r"\| gigabytes +\| +1000 \|",
                     r"\| [0-9a-f-]{36} \| available \| data2 +\| 2 +\|",
                     r"still has 1 dependent snapshots", r"left: \[\]\n"):
        assert re.search(expected, output), (expected, output)
