"""Compute on two simulated hosts: registration, build, terminate, failure, serialisation."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nova_async.common.context import RequestContext
from nova_async.compute.client import ComputeClient
from nova_async.compute.domain_xml import NS, domain_name
from nova_async.compute.hypervisor import runs_in_process
from nova_async.image.messages import GetImage
from nova_async.network.messages import AllocatePorts, DeallocatePorts
from nova_async.placement.messages import DeleteAllocations, EnsureProvider
from tests.harness import running
from tests.integration.compute import fakes
from tests.integration.compute.support import add_instance, events, next_note

pytestmark = pytest.mark.usefixtures("fake_roles")
ROLES = ["image", "network", "placement", "compute"]
SIM = {"simulate_hosts": 2, "sim_vcpus": 8, "sim_memory_mb": 16384, "sim_disk_gb": 200}


def ctx(request_id: str) -> RequestContext:
    return RequestContext(user_id="user", project_id="proj", roles=("member",), request_id=request_id)


async def test_each_simulated_host_registers_and_keeps_its_node_uuid(pool, tmp_path):
    async with running(pool, ROLES, tmp_path, compute=SIM) as h:
        services = await pool.fetch("SELECT * FROM services ORDER BY host")
        nodes = await pool.fetch("SELECT * FROM compute_nodes ORDER BY host")
        provided = {m.name: m for m in h.roles["placement"].asked(EnsureProvider)}
    assert [(s["host"], s["binary_name"], s["topic"]) for s in services] == [
        ("sim-1", "nova-compute", "compute"), ("sim-2", "nova-compute", "compute")]
    assert all(s["last_seen_up"] is not None for s in services)
    assert [(n["hypervisor_hostname"], n["hypervisor_type"], n["vcpus"], n["memory_mb"], n["local_gb"])
            for n in nodes] == [("sim-1", "test", 8, 16384, 200), ("sim-2", "test", 8, 16384, 200)]
    inv = provided["sim-1"].inventories
    assert provided["sim-1"].uuid == str(nodes[0]["uuid"])
    assert (inv["VCPU"].total, inv["VCPU"].allocation_ratio) == (8, 4.0)
    assert (inv["MEMORY_MB"].total, inv["MEMORY_MB"].reserved) == (16384, 512)
    assert inv["DISK_GB"].total == 200

    async with running(pool, ROLES, tmp_path, compute=SIM):
        again = await pool.fetch("SELECT uuid FROM compute_nodes ORDER BY host")
    assert [r["uuid"] for r in again] == [n["uuid"] for n in nodes]


async def test_build_then_terminate(pool, tmp_path, cell1):
    name = '<b>"web" & \'co\'</b>'
    async with running(pool, ROLES, tmp_path, compute=SIM) as h:
        compute = h.roles["compute"]
        uuid, rid = await add_instance(cell1, host="sim-2", display_name=name)
        with h.bus.listen() as notes:
            await ComputeClient(h.bus).build_and_run("sim-2", "sim-2", uuid, [], context=ctx(rid))
            note = await next_note(notes, uuid, "instance.create.end", "instance.create.error")
            assert note.event_type == "instance.create.end", note.payload

            row = await cell1.fetchrow("SELECT * FROM instances WHERE uuid = $1", uuid)
            assert (row["vm_state"], row["task_state"], row["power_state"]) == ("active", None, 1)
            assert row["launched_at"] is not None
            (vif,) = row["network_info"]
            assert vif["mac_address"] == fakes.mac_for(uuid) and vif["ips"][0]["address"] == "10.0.0.5"
            assert vif["tap"].startswith("tap") and vif["bridge"] == "br-test"
            assert h.roles["network"].asked(AllocatePorts, instance_uuid=uuid, host="sim-2")
            assert h.roles["image"].asked(GetImage, image_id=fakes.IMAGE_ID, is_admin=True)

            inst_dir = tmp_path / "instances" / uuid
            assert sorted(p.name for p in inst_dir.iterdir()) == ["disk", "disk.eph0", "disk.swap"]
            assert (tmp_path / "instances" / "_base" / fakes.IMAGE_ID).exists()
            assert await compute.hosts["sim-2"].hypervisor.is_running(domain_name(uuid)) is True
            assert await compute.hosts["sim-1"].hypervisor.is_running(domain_name(uuid)) is None
            dom = compute.hosts["sim-2"].hypervisor.conn.lookupByName(domain_name(uuid))
            desc = ET.fromstring(dom.XMLDesc())
            assert desc.find(f"metadata/{{{NS}}}instance/{{{NS}}}name").text == name
            assert desc.find("devices/interface/mac").get("address") == fakes.mac_for(uuid)
            assert await events(cell1, uuid, rid) == {
                "compute_build_and_run_instance": "Success", "compute_allocate_network": "Success",
                "compute_prepare_block_devices": "Success", "compute_spawn": "Success"}

            await ComputeClient(h.bus).terminate("sim-2", uuid, context=ctx(rid))
            await next_note(notes, uuid, "instance.delete.end")

        row = await cell1.fetchrow("SELECT * FROM instances WHERE uuid = $1", uuid)
        assert (row["vm_state"], row["deleted_at"] is not None) == ("deleted", True)
        assert await compute.hosts["sim-2"].hypervisor.is_running(domain_name(uuid)) is None
        assert not inst_dir.exists()
        assert h.roles["network"].asked(DeallocatePorts, instance_uuid=uuid)
        assert h.roles["placement"].asked(DeleteAllocations, consumer_uuid=uuid)
        assert (await events(cell1, uuid, rid))["compute_terminate_instance"] == "Success"


@pytest.mark.skipif(not Path("/run/libvirt/libvirt-sock").exists(),
                    reason="libvirtd is not running (make test's host-setup starts it)")
async def test_a_host_whose_domains_libvirtd_keeps_builds_and_terminates(pool, tmp_path, cell1):
    # sim_in_libvirtd: the same test-driver host, opened through the daemon (each connection a
    # driver of its own), so calls go through the executor and the domain lives in libvirtd.
    async with running(pool, ROLES, tmp_path, compute={**SIM, "sim_in_libvirtd": True}) as h:
        host = h.roles["compute"].hosts["sim-1"]
        assert host.hypervisor.uri.startswith("test+unix:///") and not runs_in_process(host.hypervisor.uri)
        uuid, rid = await add_instance(cell1, host="sim-1")
        with h.bus.listen() as notes:
            await ComputeClient(h.bus).build_and_run("sim-1", "sim-1", uuid, [], context=ctx(rid))
            note = await next_note(notes, uuid, "instance.create.end", "instance.create.error")
            assert note.event_type == "instance.create.end", note.payload
            assert await host.hypervisor.is_running(domain_name(uuid)) is True
            assert await h.roles["compute"].hosts["sim-2"].hypervisor.is_running(domain_name(uuid)) is None
            await ComputeClient(h.bus).terminate("sim-1", uuid, context=ctx(rid))
            await next_note(notes, uuid, "instance.delete.end")
        assert await host.hypervisor.is_running(domain_name(uuid)) is None
        row = await cell1.fetchrow("SELECT vm_state FROM instances WHERE uuid = $1", uuid)
        assert row["vm_state"] == "deleted"


async def test_an_image_in_the_cache_is_not_asked_for_again_unless_the_spec_names_another(pool, tmp_path, cell1):
    # As Nova: the image service is asked for an image only to fetch it. Once cached, a build
    # goes on what the API read when it accepted the request (the spec); a spec that names
    # another image than the instance (a rebuild's) is not trusted.
    async with running(pool, ROLES, tmp_path, compute=SIM) as h:
        image = h.roles["image"]
        spec = {"image_id": fakes.IMAGE_ID, "image_properties": {"hw_disk_bus": "virtio"}}
        with h.bus.listen() as notes:
            for expected_asks, request_spec in ((1, spec), (1, spec), (2, {**spec, "image_id": "other"})):
                uuid, rid = await add_instance(cell1, host="sim-1", request_spec=request_spec)
                await ComputeClient(h.bus).build_and_run("sim-1", "sim-1", uuid, [], context=ctx(rid))
                note = await next_note(notes, uuid, "instance.create.end", "instance.create.error")
                assert note.event_type == "instance.create.end", note.payload
                assert len(image.asked(GetImage, image_id=fakes.IMAGE_ID)) == expected_asks


async def test_failed_build_leaves_error_with_reason_and_nothing_behind(pool, tmp_path, cell1):
    async with running(pool, ROLES, tmp_path, compute=SIM) as h:
        uuid, rid = await add_instance(cell1, host="sim-1", image_ref=fakes.MISSING_IMAGE)
        with h.bus.listen() as notes:
            await ComputeClient(h.bus).build_and_run("sim-1", "sim-1", uuid, [], context=ctx(rid))
            note = await next_note(notes, uuid, "instance.create.end", "instance.create.error")
        assert note.event_type == "instance.create.error"
        # Nova's: priority ERROR, the create payload, and the reason as its fault.
        assert (note.priority, note.publisher_id) == ("ERROR", "nova-compute:sim-1")
        assert note.payload["nova_object.name"] == "InstanceCreatePayload"
        fault = note.data["fault"]
        assert (fault["nova_object.name"], fault["nova_object.version"]) == ("ExceptionPayload", "1.1")
        assert fault["nova_object.data"]["exception_message"] == f"Image {fakes.MISSING_IMAGE} could not be found."
        row = await cell1.fetchrow("SELECT * FROM instances WHERE uuid = $1", uuid)
        assert (row["vm_state"], row["task_state"]) == ("error", None)
        fault = await cell1.fetchrow("SELECT * FROM instance_faults WHERE instance_uuid = $1", uuid)
        assert fault["message"] == f"Image {fakes.MISSING_IMAGE} could not be found."
        assert fault["code"] == 404 and fault["host"] == "sim-1"
        assert await h.roles["compute"].hosts["sim-1"].hypervisor.is_running(domain_name(uuid)) is None
        assert not (tmp_path / "instances" / uuid).exists()
        # ports were allocated concurrently with the failing image fetch: they are freed
        assert h.roles["network"].asked(AllocatePorts, instance_uuid=uuid)
        assert h.roles["network"].asked(DeallocatePorts, instance_uuid=uuid)
        assert h.roles["placement"].asked(DeleteAllocations, consumer_uuid=uuid)
        got = await events(cell1, uuid, rid)
        assert got["compute_build_and_run_instance"] == "Error"
        assert got["compute_prepare_block_devices"] == "Error"
        assert got["compute_allocate_network"] == "Success"
        action = await cell1.fetchrow("SELECT * FROM instance_actions WHERE request_id = $1", rid)
        assert action["finish_time"] is not None


async def test_terminate_sent_during_build_runs_after_it(pool, tmp_path, cell1):
    async with running(pool, ROLES, tmp_path, compute=SIM) as h:
        compute = ComputeClient(h.bus)
        uuid, rid = await add_instance(cell1, host="sim-1")
        with h.bus.listen() as notes:
            await compute.build_and_run("sim-1", "sim-1", uuid, [], context=ctx(rid))
            await compute.terminate("sim-1", uuid, context=ctx("req-delete"))
            order = [(await next_note(notes, uuid, "instance.create.end", "instance.delete.end")).event_type
                     for _ in range(2)]
        assert order == ["instance.create.end", "instance.delete.end"]
        row = await cell1.fetchrow("SELECT * FROM instances WHERE uuid = $1", uuid)
        assert row["deleted_at"] is not None
        assert await h.roles["compute"].hosts["sim-1"].hypervisor.is_running(domain_name(uuid)) is None
        assert not (tmp_path / "instances" / uuid).exists()


async def test_build_skips_an_instance_already_being_deleted(pool, tmp_path, cell1):
    async with running(pool, ROLES, tmp_path, compute=SIM) as h:
        uuid, rid = await add_instance(cell1, host="sim-1", task_state="deleting")
        with h.bus.listen() as notes:
            # the API marked it deleting and sent the terminate; a late build must not resurrect it
            await ComputeClient(h.bus).build_and_run("sim-1", "sim-1", uuid, [], context=ctx(rid))
            await ComputeClient(h.bus).terminate("sim-1", uuid, context=ctx(rid))
            note = await next_note(notes, uuid, "instance.create", "instance.delete.end")
        assert note.event_type == "instance.delete.end"
        assert not h.roles["network"].asked(AllocatePorts, instance_uuid=uuid)
        assert (await cell1.fetchrow("SELECT deleted_at FROM instances WHERE uuid = $1", uuid))["deleted_at"]


async def test_failure_after_disks_and_ports_exist_removes_them(pool, tmp_path, cell1):
    async with running(pool, ROLES, tmp_path, compute=SIM) as h:
        uuid, rid = await add_instance(cell1, host="sim-2", network_id=fakes.BROKEN_NETWORK)
        with h.bus.listen() as notes:
            await ComputeClient(h.bus).build_and_run("sim-2", "sim-2", uuid, [], context=ctx(rid))
            await next_note(notes, uuid, "instance.create.error")
        fault = await cell1.fetchrow("SELECT * FROM instance_faults WHERE instance_uuid = $1", uuid)
        assert "MAC address 'not-a-mac'" in fault["message"]
        assert (await events(cell1, uuid, rid))["compute_prepare_block_devices"] == "Success"
        assert not (tmp_path / "instances" / uuid).exists()
        assert await h.roles["compute"].hosts["sim-2"].hypervisor.is_running(domain_name(uuid)) is None
        assert h.roles["network"].asked(DeallocatePorts, instance_uuid=uuid)
        assert h.roles["placement"].asked(DeleteAllocations, consumer_uuid=uuid)


async def test_failed_terminate_sets_error_and_can_be_retried(pool, tmp_path, cell1):
    async with running(pool, ROLES, tmp_path, compute=SIM) as h:
        compute = ComputeClient(h.bus)
        uuid, rid = await add_instance(cell1, host="sim-1")
        with h.bus.listen() as notes:
            await compute.build_and_run("sim-1", "sim-1", uuid, [], context=ctx(rid))
            await next_note(notes, uuid, "instance.create.end")
            h.roles["network"].refuse_deallocate.add(uuid)
            await compute.terminate("sim-1", uuid, context=ctx("req-del-1"))
            await next_note(notes, uuid, "instance.delete.error")
            row = await cell1.fetchrow("SELECT * FROM instances WHERE uuid = $1", uuid)
            assert (row["vm_state"], row["deleted_at"]) == ("error", None)
            fault = await cell1.fetchrow("SELECT * FROM instance_faults WHERE instance_uuid = $1", uuid)
            assert fault["message"].startswith("Failed to terminate instance: could not remove ports:")
            # the steps that could run did: the guest and its disks are gone already
            assert await h.roles["compute"].hosts["sim-1"].hypervisor.is_running(domain_name(uuid)) is None
            assert not (tmp_path / "instances" / uuid).exists()

            h.roles["network"].refuse_deallocate.clear()
            await compute.terminate("sim-1", uuid, context=ctx("req-del-2"))
            await next_note(notes, uuid, "instance.delete.end")
        assert (await cell1.fetchrow("SELECT deleted_at FROM instances WHERE uuid = $1", uuid))["deleted_at"]


async def test_heartbeat_keeps_the_service_up(pool, tmp_path):
    async with running(pool, ROLES, tmp_path, compute={"simulate_hosts": 1, "report_interval": 0.05}) as h:
        first = await pool.fetchval("SELECT last_seen_up FROM services WHERE host = 'sim-1'")
        await h.roles["compute"].sleep_unless_stopping(0.3)
        later = await pool.fetchval("SELECT last_seen_up FROM services WHERE host = 'sim-1'")
    assert later > first
