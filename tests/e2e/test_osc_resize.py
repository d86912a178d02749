"""Resize and createImage with the real, unmodified `openstack` CLI, as a user types them
(`server resize --wait`, `server resize confirm|revert`, `server image create --wait`,
`server migration list`), against `nova-async serve` on libvirt's test driver."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.e2e.conftest import serve
from tests.e2e.driver import BIN, os_env, run_ok

pytestmark = [
    pytest.mark.long,
    pytest.mark.e2e,
    pytest.mark.skipif(not (BIN / "openstack").exists() and not shutil.which("openstack"),
                       reason="python-openstackclient is installed by `make test`"),
]

SCRIPT = r"""
openstack flavor create --ram 256 --vcpus 1 --disk 1 r.small
openstack flavor create --ram 512 --vcpus 2 --disk 2 r.big
openstack flavor create --ram 768 --vcpus 2 --disk 3 r.bigger
openstack network create rnet
openstack subnet create --network rnet --subnet-range 10.3.0.0/24 rsub
head -c 65536 /dev/zero > disk.raw
openstack image create --file disk.raw --disk-format raw --container-format bare rimg
openstack server create --flavor r.small --image rimg --network rnet --wait rvm
openstack server resize --flavor r.big --wait rvm
echo "after resize: $(openstack server show rvm -f value -c status)"
echo "flavor after resize: $(openstack server show rvm -f value -c flavor | tr '\n' ' ')"
openstack limits show --absolute -f value | sed 's/^/in VERIFY_RESIZE: /'
openstack server resize confirm rvm
until [ "$(openstack server show rvm -f value -c status)" = ACTIVE ]; do sleep 1; done
openstack server resize --flavor r.bigger --wait rvm
openstack server resize revert rvm
until [ "$(openstack server show rvm -f value -c status)" = ACTIVE ]; do sleep 1; done
echo "flavor after revert: $(openstack server show rvm -f value -c flavor | tr '\n' ' ')"
openstack server migration list --server rvm
openstack server image create --name rsnap --wait rvm
echo "snapshot: $(openstack image show rsnap -f value -c status)"
openstack server create --flavor r.big --image rsnap --network rnet --wait rvm2
openstack server delete --wait rvm rvm2
"""


async def test_openstack_cli_resizes_and_snapshots(database, work_dir):
    async with serve(work_dir / "osc-resize", "--database", database, "--libvirt-uri", "test:///default") as served:
        output = await run_ok("bash", "-euxo", "pipefail", "-c", SCRIPT, env=os_env(served), cwd=work_dir,
                              served=served, timeout=600)
        for expected in (r"after resize: VERIFY_RESIZE", r"\| reverted +\|", r"\| confirmed +\|",
                         r"snapshot: active"):
            assert re.search(expected, output), (expected, output)
        # while it waits for confirmation the server counts once, with the bigger flavor
        # (the client's names: totalCoresUsed, or total_cores_used from openstacksdk-based ones)
        used = {name.replace("_", "").lower(): value
                for name, value in re.findall(r"^in VERIFY_RESIZE: (\w+) (-?\d+)$", output, re.M)}
        assert (used.get("totalinstancesused"), used.get("totalcoresused"), used.get("totalramused")) == \
            ("1", "2", "512"), output
        # the flavor after the first resize (confirmed), and after the second (reverted to it)
        for when in ("resize", "revert"):
            [shown] = re.findall(rf"^flavor after {when}: (.*)$", output, re.M)
            assert "r.big" in shown and "r.bigger" not in shown, output
