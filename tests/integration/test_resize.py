"""Resize: a server moved to another flavor (VERIFY_RESIZE), then confirmed or reverted —
with placement holding the old flavor under the migration meanwhile, disks grown and given
back, and a restart in the middle resumed without leaving anything behind."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from nova_async.compute.domain_xml import domain_name
from tests.harness import running
from tests.waiting import until
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import MV, ROLES, V, boot_body, ok, seed, settled, wait_status

cloud = test_server_lifecycle.cloud
GiB = 1024 ** 3


async def flavor(h, name: str, ram: int, vcpus: int, disk: int) -> str:
    return (await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": name, "ram": ram, "vcpus": vcpus, "disk": disk}}), 200))["flavor"]["id"]


async def action(h, sid: str, body: dict, status: int, headers=None):
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers=headers or h.alice, json=body)
    assert resp.status == status, await resp.text()


async def allocations(h, consumer: str) -> dict:
    body = await ok(await h.http.get(f"/placement/allocations/{consumer}", headers=h.admin), 200)
    return {rp: a["resources"] for rp, a in body["allocations"].items()}


def virtual_size(path) -> int:
    out = subprocess.run(["qemu-img", "info", "-U", "--output=json", str(path)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["virtual-size"]


async def boot(h, stopped: bool = False) -> str:
    sid = (await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202))["server"]["id"]
    await wait_status(h, sid, "ACTIVE")
    if stopped:
        await action(h, sid, {"os-stop": None}, 202)
        await wait_status(h, sid, "SHUTOFF")
    return sid


async def migration_of(h, sid: str):
    return await h.cell1.fetchrow("SELECT * FROM migrations WHERE instance_uuid = $1 ORDER BY id DESC LIMIT 1", sid)


@pytest.mark.parametrize("stopped", [False, True], ids=["active", "stopped"])
async def test_resize_and_confirm(cloud, stopped):
    h = cloud
    sid = await boot(h, stopped)
    bigger = await flavor(h, "m1.medium", 2048, 2, 2)
    await action(h, sid, {"resize": {"flavorRef": bigger}}, 202)
    server = await settled(h, sid, h.admin)
    assert server["status"] == "VERIFY_RESIZE", server.get("fault")
    assert server["OS-EXT-STS:power_state"] == (4 if stopped else 1)
    assert (server["flavor"]["original_name"], server["flavor"]["ram"], server["flavor"]["vcpus"]) == \
        ("m1.medium", 2048, 2)

    # The new flavor is the instance's claim; the old one is held by the migration.
    migration = await migration_of(h, sid)
    assert list((await allocations(h, sid)).values()) == [{"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 2}]
    assert list((await allocations(h, str(migration["uuid"]))).values()) == \
        [{"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1}]

    hypervisor = h.roles["compute"].hosts[server["OS-EXT-SRV-ATTR:host"]].hypervisor
    xml = await hypervisor.xml_of(domain_name(sid))
    assert "<memory unit='KiB'>2097152</memory>" in xml and ">2</vcpu>" in xml
    assert await hypervisor.is_running(domain_name(sid)) is (not stopped)
    disk = h.deps.state_dir / "instances" / sid / "disk"
    assert virtual_size(disk) == 2 * GiB

    await action(h, sid, {"confirmResize": None}, 204)
    server = await wait_status(h, sid, "SHUTOFF" if stopped else "ACTIVE")
    assert server["flavor"]["original_name"] == "m1.medium"
    assert await allocations(h, str(migration["uuid"])) == {}
    assert not (disk.parent / "resize-orig").exists()
    assert (await migration_of(h, sid))["status"] == "confirmed"
    listed = (await ok(await h.http.get(f"{V}/os-migrations?instance_uuid={sid}", headers={**h.admin, **MV}),
                       200))["migrations"]
    number = await h.pool.fetchval("SELECT internal_id FROM flavors WHERE id = $1", bigger)   # Nova's int id
    assert [(m["status"], m["migration_type"], m["uuid"], m["new_instance_type_id"]) for m in listed] == \
        [("confirmed", "resize", str(migration["uuid"]), number)]
    assert (await h.http.get(f"{V}/os-migrations", headers=h.alice)).status == 403
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    assert [a["action"] for a in actions[:2]] == ["confirmResize", "resize"]
    assert all(a["message"] is None for a in actions[:2])
    # A resize confirmed can be resized again (and deleted without a leftover allocation).
    await action(h, sid, {"confirmResize": None}, 409)
    assert (await h.http.delete(f"{V}/servers/{sid}", headers=h.alice)).status == 204
    await wait_status(h, sid, "GONE")
    assert await h.pool.fetchval("SELECT count(*) FROM allocations") == 0


async def test_revert_gives_the_old_flavor_disk_and_claim_back(cloud):
    h = cloud
    sid = await boot(h)
    before = await allocations(h, sid)
    bigger = await flavor(h, "m1.medium", 2048, 2, 3)
    await action(h, sid, {"resize": {"flavorRef": bigger}}, 202)
    assert (await settled(h, sid))["status"] == "VERIFY_RESIZE"
    disk = h.deps.state_dir / "instances" / sid / "disk"
    assert virtual_size(disk) == 3 * GiB
    migration = await migration_of(h, sid)

    await action(h, sid, {"revertResize": None}, 202)
    server = await settled(h, sid, h.admin)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["flavor"]["original_name"] == "m1.small"
    assert await allocations(h, sid) == before
    assert await allocations(h, str(migration["uuid"])) == {}
    assert virtual_size(disk) == 1 * GiB
    hypervisor = h.roles["compute"].hosts[server["OS-EXT-SRV-ATTR:host"]].hypervisor
    assert "<memory unit='KiB'>1048576</memory>" in await hypervisor.xml_of(domain_name(sid))
    assert await hypervisor.is_running(domain_name(sid)) is True
    assert (await migration_of(h, sid))["status"] == "reverted"
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    assert [a["action"] for a in actions[:2]] == ["revertResize", "resize"]


async def test_resize_refusals(cloud):
    h = cloud
    sid = await boot(h)
    smaller = await flavor(h, "m1.nodisk", 512, 1, 0)
    bigger = await flavor(h, "m1.medium", 2048, 2, 2)
    await action(h, sid, {"resize": {"flavorRef": h.flavor}}, 400)
    await action(h, sid, {"resize": {"flavorRef": "no-such-flavor"}}, 400)
    await action(h, sid, {"resize": {"flavorRef": smaller}}, 400)
    await action(h, sid, {"resize": {}}, 400)
    await action(h, sid, {"resize": {"flavorRef": bigger}}, 404, headers=h.bob)
    await action(h, sid, {"confirmResize": None}, 409)
    await action(h, sid, {"revertResize": None}, 409)
    await action(h, sid, {"pause": None}, 202)
    await wait_status(h, sid, "PAUSED")
    await action(h, sid, {"resize": {"flavorRef": bigger}}, 409)
    await action(h, sid, {"unpause": None}, 202)
    await wait_status(h, sid, "ACTIVE")
    await action(h, sid, {"lock": None}, 202)
    await action(h, sid, {"resize": {"flavorRef": bigger}}, 409)
    await action(h, sid, {"unlock": None}, 202)
    # No host has room: the server stays as it was, the action says why.
    huge = await flavor(h, "huge", 8192, 1, 1)
    await action(h, sid, {"resize": {"flavorRef": huge}}, 202)
    server = await settled(h, sid)
    assert server["status"] == "ACTIVE"
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    assert actions[0]["action"] == "resize" and actions[0]["message"] == "Error"
    assert list((await allocations(h, sid)).values()) == [{"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1}]
    assert (await migration_of(h, sid))["status"] == "error"


async def test_resize_to_another_host_and_back(pool, tmp_path):
    sims = {"simulate_hosts": 2, "sim_vcpus": 4, "sim_memory_mb": 4096, "sim_disk_gb": 50,
            "allow_resize_to_same_host": False}
    async with running(pool, ROLES, tmp_path, compute=sims) as h:
        await _setup(h)
        sid = await boot(h)
        before = await settled(h, sid, h.admin)
        source, node = before["OS-EXT-SRV-ATTR:host"], before["OS-EXT-SRV-ATTR:hypervisor_hostname"]
        with h.bus.listen() as heard:
            await action(h, sid, {"resize": {"flavorRef": await flavor(h, "m1.medium", 2048, 2, 2)}}, 202)
            server = await settled(h, sid, h.admin)
            assert server["status"] == "VERIFY_RESIZE", server.get("fault")
            assert server["OS-EXT-SRV-ATTR:host"] != source
            dest = server["OS-EXT-SRV-ATTR:host"]
            told = []
            async with asyncio.timeout(30):
                while not told or told[-1][0] != "instance.resize_finish.end":
                    note = await heard.get()
                    if note.event_type.startswith("instance.resize"):
                        told.append((note.event_type, note.publisher_id))
            # As Nova: the source moves the disks, the destination finishes on the new flavor.
            assert told == [("instance.resize.start", f"nova-compute:{source}"),
                            ("instance.resize.end", f"nova-compute:{source}"),
                            ("instance.resize_finish.start", f"nova-compute:{dest}"),
                            ("instance.resize_finish.end", f"nova-compute:{dest}")]
        hypervisors = (await ok(await h.http.get(f"{V}/os-hypervisors/detail", headers={**h.admin, **MV}),
                                200))["hypervisors"]
        assert server["OS-EXT-SRV-ATTR:hypervisor_hostname"] in {x["hypervisor_hostname"] for x in hypervisors} - {node}
        await action(h, sid, {"revertResize": None}, 202)
        server = await settled(h, sid, h.admin)
        assert (server["status"], server["OS-EXT-SRV-ATTR:host"], server["OS-EXT-SRV-ATTR:hypervisor_hostname"]) \
            == ("ACTIVE", source, node)
        hypervisor = h.roles["compute"].hosts[source].hypervisor
        assert await hypervisor.is_running(domain_name(sid)) is True
        # the two simulated hosts share one instances directory: it stays, disks and all
        assert (h.roles["compute"].hosts[source].instances_root / sid / "disk").exists()


@pytest.mark.parametrize("end", ["confirmResize", "revertResize"])
async def test_a_move_between_hosts_with_directories_of_their_own_leaves_no_copy_behind(pool, tmp_path, end):
    """Hosts on machines of their own (instance directories not shared): the copy a resize
    leaves on the host the server no longer runs on goes once the resize is over."""
    sims = {"simulate_hosts": 2, "sim_vcpus": 4, "sim_memory_mb": 4096, "sim_disk_gb": 50,
            "allow_resize_to_same_host": False}
    async with running(pool, ROLES, tmp_path, compute=sims) as h:
        await _setup(h)
        sid = await boot(h)
        hosts = h.roles["compute"].hosts
        source = (await settled(h, sid, h.admin))["OS-EXT-SRV-ATTR:host"]
        [dest] = [name for name in hosts if name != source]
        hosts[dest].instances_root = tmp_path / "dest-instances"   # as on a machine of its own
        hosts[dest].instances_root.mkdir()
        await action(h, sid, {"resize": {"flavorRef": await flavor(h, "m1.medium", 2048, 2, 2)}}, 202)
        server = await settled(h, sid, h.admin)
        assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", dest), server.get("fault")
        await action(h, sid, {end: None}, 204 if end == "confirmResize" else 202)
        server = await wait_status(h, sid, "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
        on_source = (hosts[source].instances_root / sid).exists()
        on_dest = (hosts[dest].instances_root / sid).exists()
        assert (on_source, on_dest) == ((False, True) if end == "confirmResize" else (True, False))
        if end == "revertResize":
            assert (hosts[source].instances_root / sid / "disk").exists()


async def test_resize_is_confirmed_after_the_window(pool, tmp_path):
    sims = {"simulate_hosts": 1, "sim_vcpus": 4, "sim_memory_mb": 4096, "sim_disk_gb": 50,
            "resize_confirm_window": 0.5}
    async with running(pool, ROLES, tmp_path, compute=sims) as h:
        await _setup(h)
        sid = await boot(h)
        await action(h, sid, {"resize": {"flavorRef": await flavor(h, "m1.medium", 2048, 2, 2)}}, 202)
        server = await wait_status(h, sid, "ACTIVE", "ERROR")   # VERIFY_RESIZE, then confirmed for us
        assert server["flavor"]["original_name"] == "m1.medium"
        await until(lambda: migration_of(h, sid), lambda m: m["status"] == "confirmed",
                    what="the resize's migration confirmed")
        assert await h.pool.fetchval("SELECT count(*) FROM allocations a JOIN consumers c "
                                     "ON c.id = a.consumer_id WHERE c.uuid <> $1", sid) == 0
        actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                            200))["instanceActions"]
        assert actions[0]["action"] == "confirmResize"


async def _setup(h) -> None:
    await seed(h)


SIM1 = {"simulate_hosts": 1, "sim_vcpus": 4, "sim_memory_mb": 4096, "sim_disk_gb": 50}


@pytest.mark.parametrize("interrupted", ["conductor", "compute", "source-never-told"])
async def test_a_restart_in_the_middle_of_a_resize(pool, tmp_path, interrupted):
    """The conductor's part lost (its cast went down with the process), the source host never
    told of the destination the conductor chose (its cast lost with the process), or the source
    host's part cut short after it began: the next start finishes the resize, and a revert then
    leaves exactly the old claim."""
    async with running(pool, ROLES, tmp_path, compute=SIM1) as h:
        await _setup(h)
        sid = await boot(h)
        before = await allocations(h, sid)
    without = "conductor" if interrupted == "conductor" else "compute"
    async with running(pool, [r for r in ROLES if r != without], tmp_path, compute=SIM1) as h:
        await action(h, sid, {"resize": {"flavorRef": await flavor(h, "m1.medium", 2048, 2, 2)}}, 202)
        if interrupted != "conductor":
            await until(lambda: migration_of(h, sid), lambda m: m["dest_compute"] is not None,
                        what="the resize's destination chosen")
        if interrupted == "compute":
            # Where the source host would be had it begun its step and then gone down.
            await h.cell1.execute("UPDATE instances SET task_state = 'resize_migrating' WHERE uuid = $1", sid)
            await h.pool.execute("UPDATE migrations SET status = 'migrating' WHERE instance_uuid = $1", sid)
    async with running(pool, ROLES, tmp_path, compute=SIM1) as h:
        server = await settled(h, sid)
        assert server["status"] == "VERIFY_RESIZE", server.get("fault")
        assert server["flavor"]["original_name"] == "m1.medium"
        await action(h, sid, {"revertResize": None}, 202)
        server = await settled(h, sid)
        assert server["status"] == "ACTIVE" and server["flavor"]["original_name"] == "m1.small"
        assert await allocations(h, sid) == before
        assert await h.pool.fetchval("SELECT count(*) FROM consumers") == 1


async def test_a_failed_resize_is_rolled_back(cloud):
    h = cloud
    sid = await boot(h)
    before = await allocations(h, sid)
    # The source host cannot copy a root disk that is not there: the resize fails on it.
    (h.deps.state_dir / "instances" / sid / "disk").unlink()
    await action(h, sid, {"resize": {"flavorRef": await flavor(h, "m1.medium", 2048, 2, 2)}}, 202)
    server = await settled(h, sid, h.admin)
    assert server["status"] == "ACTIVE" and server["flavor"]["original_name"] == "m1.small"
    assert await allocations(h, sid) == before
    migration = await migration_of(h, sid)
    assert migration["status"] == "error" and await allocations(h, str(migration["uuid"])) == {}
    hypervisor = h.roles["compute"].hosts[server["OS-EXT-SRV-ATTR:host"]].hypervisor
    assert await hypervisor.is_running(domain_name(sid)) is True
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    assert actions[0]["action"] == "resize" and actions[0]["message"] == "Error"
    fault = await h.cell1.fetchval("SELECT message FROM instance_faults WHERE instance_uuid = $1", sid)
    assert fault.startswith("Resize failed:") and "root disk" in fault


async def test_deleting_a_server_waiting_for_confirm_frees_both_claims(cloud):
    h = cloud
    sid = await boot(h)
    await action(h, sid, {"resize": {"flavorRef": await flavor(h, "m1.medium", 2048, 2, 2)}}, 202)
    assert (await settled(h, sid))["status"] == "VERIFY_RESIZE"
    assert await h.pool.fetchval("SELECT count(*) FROM consumers") == 2
    assert (await h.http.delete(f"{V}/servers/{sid}", headers=h.alice)).status == 204
    await wait_status(h, sid, "GONE")
    assert await h.pool.fetchval("SELECT count(*) FROM allocations") == 0
    assert not (h.deps.state_dir / "instances" / sid).exists()
