"""Start-up recovery on one host connected to libvirt's shared test:///default.

test:///default lives as long as the process and is shared by every connection, so the
test can leave a domain behind "before the restart" and watch compute reconcile it."""

from __future__ import annotations

import uuid as uuidlib

import libvirt
import pytest

from nova_async.compute.domain_xml import DomainSpec, domain_name, domain_xml
from nova_async.network.messages import DeallocatePorts
from nova_async.placement.messages import DeleteAllocations
from tests.harness import running
from tests.integration.compute.support import add_instance, events

pytestmark = pytest.mark.usefixtures("fake_roles")
ROLES = ["image", "network", "placement", "compute"]
HOST = "recovery-host"


def leave_domain(conn: libvirt.virConnect, instance_uuid: str, node: str) -> None:
    dom = conn.defineXML(domain_xml(DomainSpec(instance_uuid=instance_uuid, display_name="left",
                                               memory_mb=64, vcpus=1, domain_type="test", node=node)))
    dom.create()


def domains(conn: libvirt.virConnect) -> set[str]:
    return {d.name() for d in conn.listAllDomains()}


async def test_restart_reconciles_host_with_database(pool, tmp_path, cell1):
    conn = libvirt.open("test:///default")
    async with running(pool, ROLES, tmp_path, compute={"host": HOST}):
        pass  # the host registers: its compute node marks the domains it makes
    node = str(await pool.fetchval("SELECT uuid FROM compute_nodes WHERE host = $1", HOST))
    orphan, foreign = str(uuidlib.uuid4()), str(uuidlib.uuid4())
    deleting, deleting_rid = await add_instance(cell1, host=HOST, task_state="deleting")
    building, building_rid = await add_instance(cell1, host=HOST)
    active, _ = await add_instance(cell1, host=HOST, vm_state="active", task_state=None)
    elsewhere, _ = await add_instance(cell1, host="other-host", vm_state="active", task_state=None)
    try:
        for left in (orphan, deleting, building, active, elsewhere):
            leave_domain(conn, left, node)
        leave_domain(conn, foreign, str(uuidlib.uuid4()))  # another nova-async's, on this libvirt
        for left in (orphan, deleting, active):
            (tmp_path / "instances" / left).mkdir(parents=True)
        (tmp_path / "instances" / "not-an-instance").mkdir()

        async with running(pool, ROLES, tmp_path, compute={"host": HOST}) as h:
            now = domains(conn)
            # not ours, still wanted, or placed elsewhere (never destroy a guest on a guess): untouched
            assert {"test", domain_name(active), domain_name(elsewhere), domain_name(foreign)} <= now
            # ours, and no instance accounts for it: gone
            assert domain_name(orphan) not in now
            assert not (tmp_path / "instances" / orphan).exists()
            assert (tmp_path / "instances" / active).exists()
            assert (tmp_path / "instances" / "not-an-instance").exists()

            # the interrupted delete was finished
            row = await cell1.fetchrow("SELECT * FROM instances WHERE uuid = $1", deleting)
            assert row["deleted_at"] is not None
            assert domain_name(deleting) not in now
            assert not (tmp_path / "instances" / deleting).exists()
            assert h.roles["network"].asked(DeallocatePorts, instance_uuid=deleting)
            assert h.roles["placement"].asked(DeleteAllocations, consumer_uuid=deleting)
            assert (await events(cell1, deleting, deleting_rid))["compute_terminate_instance"] == "Success"

            # the interrupted build was redone from scratch, under the user's original action
            row = await cell1.fetchrow("SELECT * FROM instances WHERE uuid = $1", building)
            assert (row["vm_state"], row["task_state"], row["power_state"]) == ("active", None, 1)
            assert conn.lookupByName(domain_name(building)).isActive()
            assert (tmp_path / "instances" / building / "disk").exists()
            assert (await events(cell1, building, building_rid))["compute_build_and_run_instance"] == "Success"
    finally:
        for left in (orphan, deleting, building, active, elsewhere, foreign):
            try:
                dom = conn.lookupByName(domain_name(left))
            except libvirt.libvirtError:
                continue
            if dom.isActive():
                dom.destroy()
            dom.undefine()
        conn.close()
