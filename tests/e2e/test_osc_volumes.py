"""Volumes with the real, unmodified `openstack` CLI (openstacksdk's block-storage proxy) and
`cinder` (python-cinderclient), as a user types them, against ONE `nova-async serve` on
libvirt's test driver with the volume role's default (file) backend: create, list, show,
rename, extend, snapshot, a volume from the snapshot, quotas; the volume on servers (`server
add volume`, `server volume list`, `server remove volume`, the same volume in another server,
grown while attached, `server delete` that leaves it available); Cinder's attachments API by
hand (create --connect, complete, list, show, delete); refused and final deletes.

One served process for all of it: starting `nova-async serve` is most of an e2e test's time,
and these steps share their volumes and servers as a user's session would."""

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

# The CLI does not wait for a volume; a user looks until it is there, as this does.
SCRIPT = r"""
wait_for() {
  for _ in $(seq 600); do
    s=$(openstack $1 show "$2" -f value -c $4)
    [ "$s" = "$3" ] && return 0
    sleep 0.2
  done
  echo "timed out waiting for $1 $2 $4 to be $3 (it is $s)"; return 1
}
wait_volume() { wait_for volume "$1" "$2" status; }
openstack flavor create --ram 256 --vcpus 1 --disk 1 v.small
openstack network create vnet
openstack subnet create --network vnet --subnet-range 10.4.0.0/24 vsub
head -c 65536 /dev/zero > disk.raw
openstack image create --file disk.raw --disk-format raw --container-format bare vimg
openstack server create --flavor v.small --image vimg --network vnet --wait vm1
openstack server create --flavor v.small --image vimg --network vnet --wait vm2

# The volume API: create, list, rename, extend, snapshot, a volume from it, quotas, cinder.
openstack volume create --size 1 --description "first one" data1
wait_volume data1 available
openstack volume list
openstack volume set --name data-one data1
openstack volume set --size 2 data-one
wait_volume data-one available
echo "size: $(openstack volume show data-one -f value -c size)"
openstack volume snapshot create --volume data-one snap1
wait_for "volume snapshot" snap1 available status
openstack volume snapshot list
openstack volume create --snapshot snap1 data2
wait_volume data2 available
openstack volume show data2
echo "volumes: $(openstack volume list -f value -c Name | sort | tr '\n' ' ')"
openstack quota show
cinder list
cinder show data2
if openstack volume delete data-one 2> busy.err; then echo "deleted a volume with a snapshot"; exit 1; fi
cat busy.err

# On servers: add, list, remove, add to another, grow while attached, delete the server.
openstack server add volume vm1 data2
wait_volume data2 in-use
openstack server volume list vm1
echo "attached: $(openstack server show vm1 -f json -c volumes_attached | tr -d "\n")"
openstack server remove volume vm1 data2
wait_volume data2 available
echo "detached: $(openstack server show vm1 -f json -c volumes_attached | tr -d "\n")"
openstack server add volume vm2 data2
wait_volume data2 in-use
openstack volume set --size 3 data2
wait_for volume data2 3 size
wait_volume data2 in-use
openstack server delete --wait vm2
echo "after delete: $(openstack volume show data2 -f value -c status)"

# Cinder's attachments API by hand (microversion 3.44).
att=$(openstack --os-volume-api-version 3.44 volume attachment create --connect --host compute-x \
      --mountpoint /dev/vdb -f value -c ID data2 vm1)
echo "volume: $(openstack volume show data2 -f value -c status)"
openstack --os-volume-api-version 3.44 volume attachment complete "$att"
echo "volume: $(openstack volume show data2 -f value -c status)"
openstack --os-volume-api-version 3.44 volume attachment list
openstack --os-volume-api-version 3.44 volume attachment show "$att"
if openstack volume delete data2 2> busy.err; then echo "deleted an attached volume"; exit 1; fi
cat busy.err
openstack --os-volume-api-version 3.44 volume attachment delete "$att"
echo "volume: $(openstack volume show data2 -f value -c status)"
echo "attachments left: [$(openstack --os-volume-api-version 3.44 volume attachment list -f value -c ID)]"

# Deletes, in the order the snapshot allows.
openstack volume delete data2
openstack volume snapshot delete snap1
for _ in $(seq 600); do [ -z "$(openstack volume snapshot list -f value -c ID)" ] && break; sleep 0.2; done
openstack volume delete data-one
for _ in $(seq 600); do [ -z "$(openstack volume list -f value -c ID)" ] && break; sleep 0.2; done
echo "left: [$(openstack volume list -f value -c Name)]"
"""


def shown(output: str, label: str) -> list:
    [raw] = re.findall(rf"^{label}: (.*)$", output, re.M)
    return json.loads(raw)["volumes_attached"]


async def test_openstack_and_cinder_cli_volumes(database, work_dir):
    async with serve(work_dir / "osc-vol", "--database", database, "--libvirt-uri", "test:///default") as served:
        # Some fifty CLI runs one after another: under a loaded run each takes seconds, so the
        # bound (a safety net) is generous.
        output = await run_ok("bash", "-euxo", "pipefail", "-c", SCRIPT, env=os_env(served), cwd=work_dir,
                              served=served, timeout=900)
        log = "\n".join(served.log)
    # The volume API.
    for expected in (r"size: 2\n", r"volumes: data-one data2 \n", r"\| description +\| first one",
                     r"\| snapshot_id +\| [0-9a-f-]{36}", r"\| volumes +\| +10 \|", r"\| gigabytes +\| +1000 \|",
                     r"\| [0-9a-f-]{36} \| available \| data2 +\| 2 +\|",
                     r"still has 1 dependent snapshots", r"left: \[\]\n"):
        assert re.search(expected, output), (expected, output)
    # On servers.
    assert "volume extended in the guest" in log, log[-3000:]   # the volume role told vm2's host
    attached = shown(output, "attached")
    assert len(attached) == 1 and attached[0]["delete_on_termination"] is False, output
    assert re.search(r"\| /dev/vdb +\|", output), output         # server volume list
    assert shown(output, "detached") == [], output
    assert re.search(r"^after delete: available$", output, re.M), output
    # The attachments API.
    for expected in (r"volume: attaching\n", r"volume: in-use\n", r"\| Status +\| attached +\|",
                     r"\| [0-9a-f-]{36} \| [0-9a-f-]{36} \| [0-9a-f-]{36} \| attached +\|",
                     r"must not be migrating, attached", r"volume: available\n", r"attachments left: \[\]\n"):
        assert re.search(expected, output), (expected, output)
