"""CLIENTS.md, command by command: the unmodified `openstack` CLI, the openstacksdk flow and
novaclient's `nova boot --poll`, each run as a user would against a live service (libvirt's
test driver: these clients only see the API, so no real guest is needed here)."""

from __future__ import annotations

import re
import sys

import pytest

from tests.e2e.conftest import serve
from tests.e2e.driver import BIN, os_env, run_ok

pytestmark = [pytest.mark.long,
              pytest.mark.skipif(not (BIN / "openstack").exists() or not (BIN / "nova").exists(),
                                 reason="the OpenStack clients are installed by `make test`")]

# `wait_for NAME STATUS`: what a script chaining OSC commands does (CLIENTS.md §5: stop,
# start and a reboot without --wait return at once).
OSC = r"""
wait_for() {
  for _ in $(seq 120); do
    s=$(openstack server show -f value -c status "$1")
    [ "$s" = "$2" ] && return 0
    [ "$s" = ERROR ] && { openstack server show "$1"; return 1; }
    sleep 0.5
  done
  return 1
}
openstack token issue
openstack flavor create --ram 512 --vcpus 1 --disk 1 m1.contract
openstack flavor list
openstack flavor show m1.contract
head -c 1048576 /dev/zero > disk.raw
openstack image create --file disk.raw --disk-format raw --container-format bare cirros
openstack image list
openstack network create net1
openstack subnet create --network net1 --subnet-range 10.0.0.0/24 sub1
openstack server create --flavor m1.contract --image cirros --network net1 --wait vm1
openstack server list
openstack server show vm1
openstack server reboot vm1
wait_for vm1 ACTIVE
openstack server reboot --hard --wait vm1
openstack server stop vm1
wait_for vm1 SHUTOFF
openstack server start vm1
wait_for vm1 ACTIVE
openstack console log show vm1
openstack console url show vm1
openstack console url show --serial vm1
openstack server rebuild --image cirros --wait vm1
openstack server show --diagnostics vm1
openstack server create --flavor m1.contract --image cirros --network net1 --min 2 --max 2 --wait multi
openstack server list -f value -c Name
openstack server group create --policy anti-affinity g1
openstack hypervisor list
openstack compute service list
openstack quota show
openstack resource provider list
openstack allocation candidate list --resource VCPU=1
openstack server delete --wait vm1 multi-1 multi-2
openstack server list -f value -c Name
echo osc-done
"""

SDK = r"""
import openstack
conn = openstack.connect()
image = conn.image.find_image("cirros", ignore_missing=False)
flavor = conn.compute.find_flavor("m1.contract", ignore_missing=False)
net = conn.network.find_network("net1", ignore_missing=False)
server = conn.compute.create_server(name="sdk1", image_id=image.id, flavor_id=flavor.id,
                                    networks=[{"uuid": net.id}])
server = conn.compute.wait_for_server(server, status="ACTIVE", interval=1, wait=120)
assert "sdk1" in [s.name for s in conn.compute.servers()]
conn.compute.stop_server(server)
conn.compute.wait_for_server(conn.compute.get_server(server.id), status="SHUTOFF", interval=1, wait=120)
conn.compute.start_server(server)
conn.compute.wait_for_server(conn.compute.get_server(server.id), status="ACTIVE", interval=1, wait=120)
conn.compute.reboot_server(server, "HARD")
conn.compute.wait_for_server(conn.compute.get_server(server.id), status="ACTIVE", interval=1, wait=120)
conn.compute.delete_server(server)
conn.compute.wait_for_delete(server, interval=1, wait=120)
print("sdk-done", server.id)
"""

NOVA = r"""
net=$(openstack network show -f value -c id net1)
nova boot --flavor m1.contract --image cirros --nic net-id=$net --poll vm2
nova list
nova delete vm2
for _ in $(seq 120); do
  openstack server show vm2 >/dev/null 2>&1 || { echo nova-done; exit 0; }
  sleep 0.5
done
exit 1
"""


async def test_every_clients_md_command_works(database, work_dir):
    async with serve(work_dir / "contract", "--database", database, "--libvirt-uri", "test:///default") as served:
        # The installed `openstack` script itself, exec'd for each command, not the suite's
        # warm one (warm_cli.py): the contract is with the clients as a user starts them.
        env = os_env(served, warm=False, OS_IDENTITY_API_VERSION="3")
        cwd = work_dir / "contract-cwd"
        cwd.mkdir()
        osc = await run_ok("bash", "-euxo", "pipefail", "-c", OSC, env=env, cwd=cwd, timeout=600, served=served)
        sdk = await run_ok(sys.executable, "-c", SDK, env=env, cwd=cwd, timeout=600, served=served)
        nova = await run_ok("bash", "-euxo", "pipefail", "-c", NOVA, env=env, cwd=cwd, timeout=600, served=served)
    assert "osc-done" in osc and "sdk-done" in sdk and "nova-done" in nova
    names = re.findall(r"^(multi-\d|vm1)$", osc, re.M)
    assert sorted(names[:3]) == ["multi-1", "multi-2", "vm1"] and names[3:] == []
    for expected in (r"\| status +\| ACTIVE", r"\| policy +\| anti-affinity", r"nova-compute",
                     r"\| instances +\| +\d+ \|", r"\| VCPU=1 +\|", r"\| url +\| http://\S+/vnc_lite\.html",
                     r"\| url +\| ws://\S+/console/serial\?token="):
        assert re.search(expected, osc), (expected, osc)
    assert re.search(r"\| vm2 +\| ACTIVE", nova), nova
