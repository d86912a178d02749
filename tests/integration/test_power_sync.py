"""Power states follow what guests do on their own: libvirt's lifecycle events (delivered on
the loop by libvirtaio) and the periodic reconciliation, on simulated test-driver hosts.
The guest is changed behind nova-async's back, through the host's own libvirt connection,
as `virsh destroy` / `virsh start` would."""

from __future__ import annotations

from nova_async.compute import lifecycle
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.hypervisor import Hypervisor
from tests.harness import running
from tests.waiting import until
from tests.integration.test_server_actions import GUEST, OFF, RUNNING, boot, drive, guest
from tests.integration.test_server_lifecycle import MV, ROLES, V, ok, wait_status
from tests.integration import test_server_lifecycle

cloud = test_server_lifecycle.cloud


def domain(h, host: str, server_id: str):
    return h.roles["compute"].hosts[host].hypervisor.conn.lookupByName(domain_name(server_id))


async def show(h, server_id: str) -> dict:
    return (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.alice, **MV}), 200))["server"]


async def until_state(h, server_id: str, vm_state: str, power_state: int) -> dict:
    return await until(lambda: show(h, server_id),
                       lambda s: (s["OS-EXT-STS:vm_state"], s["OS-EXT-STS:power_state"]) == (vm_state, power_state),
                       what=f"server {server_id} {vm_state} with power state {power_state}")


async def test_a_guest_that_powers_itself_off_shows_shutoff_and_starts_again(cloud):
    h = cloud
    assert h.roles["compute"].events
    server_id, host = await boot(h)
    domain(h, host, server_id).destroy()           # the guest went away on its own
    server = await until_state(h, server_id, "stopped", 4)
    assert server["status"] == "SHUTOFF" and server["OS-EXT-STS:task_state"] is None
    await drive(h, server_id, {"os-start": None}, "ACTIVE")
    assert await guest(h, host, server_id) == RUNNING


async def test_a_stopped_instance_whose_guest_is_started_by_hand_is_powered_off_again(cloud):
    h = cloud
    server_id, host = await boot(h)
    await drive(h, server_id, {"os-stop": None}, "SHUTOFF")
    domain(h, host, server_id).create()            # someone ran `virsh start`
    await until(lambda: guest(h, host, server_id), lambda g: g == OFF, what="the guest powered off again")
    server = await show(h, server_id)
    assert (server["status"], server["OS-EXT-STS:power_state"]) == ("SHUTOFF", 4)


async def test_a_guest_paused_behind_our_back_keeps_its_vm_state_and_shows_its_power_state(cloud):
    h = cloud
    server_id, host = await boot(h)
    domain(h, host, server_id).suspend()
    server = await until_state(h, server_id, "active", 3)
    assert server["status"] == "ACTIVE"
    assert await guest(h, host, server_id) == GUEST["PAUSED"]


async def test_a_boot_is_not_synced_for_its_own_start_but_a_start_by_hand_is(cloud, monkeypatch):
    h = cloud
    synced: list[str] = []
    real_sync = lifecycle.sync

    async def counting(host, instance_uuid):
        synced.append(instance_uuid)
        await real_sync(host, instance_uuid)

    monkeypatch.setattr(lifecycle, "sync", counting)
    judged: list[tuple[str, bool]] = []   # STARTED events the hosts have told apart
    real_own_start = Hypervisor._own_start

    def own_start(self, name: str) -> bool:
        judged.append((name, real_own_start(self, name)))
        return judged[-1][1]

    monkeypatch.setattr(Hypervisor, "_own_start", own_start)
    server_id, host = await boot(h)
    # The build's own STARTED event has reached the compute role and been told apart: had it
    # been taken for news, a sync of the instance would have been queued with it.
    await until(lambda: judged, lambda j: (domain_name(server_id), True) in j,
                what="the build's STARTED event taken as the build's own")
    # A sync of it would be queued before the one for this stop (one queue per instance):
    # once this one has shown, only this one may have run.
    domain(h, host, server_id).destroy()
    await until_state(h, server_id, "stopped", 4)
    assert synced == [server_id]
    synced.clear()
    domain(h, host, server_id).create()            # `virsh start`: not ours, so it is looked at
    await until(lambda: synced, lambda s: server_id in s, what="a sync after the start by hand")


async def test_reconciliation_repairs_what_no_event_reported(pool, tmp_path, cell1):
    compute = {"simulate_hosts": 1, "sync_power_state_interval": 0.2}
    async with running(pool, ROLES, tmp_path, compute=compute) as h:
        flavor = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": "m1", "ram": 512, "vcpus": 1, "disk": 1}}), 200)
        image = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
            "name": "img", "disk_format": "raw", "container_format": "bare"}), 201)
        await ok(await h.http.put(f"/image/v2/images/{image['id']}/file", data=b"\0" * 1024,
                                  headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
        created = await ok(await h.http.post(V + "/servers", headers=h.alice, json={"server": {
            "name": "r", "imageRef": image["id"], "flavorRef": flavor["flavor"]["id"],
            "networks": "none"}}), 202)
        server_id = created["server"]["id"]
        await wait_status(h, server_id, "ACTIVE")
        host = h.roles["compute"].hosts["sim-1"]
        assert await lifecycle.out_of_sync(host) == []
        # A missed event: the record says crashed while the guest runs.
        await cell1.execute("UPDATE instances SET power_state = 6 WHERE uuid = $1", server_id)
        await until_state(h, server_id, "active", 1)
        assert await lifecycle.out_of_sync(host) == []

