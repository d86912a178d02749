"""What a dead compute host leaves behind (an active-active site lost a node): a server
deleted while its host is down is deleted at once, as Nova's local delete, and what the
host held elsewhere (its claim, its ports) goes with it; its guest goes when the host comes
back. A build its host stopped in the middle of ends in ERROR saying so, found by the
conductor's stranded job (conductor/stranded.py), its claim and ports let go of."""

from __future__ import annotations

import contextlib

from nova_async.compute import recovery
from nova_async.compute.domain_xml import domain_name
from nova_async.db import instances
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud  # two simulated hosts, sim-1 and sim-2
NEW = {"OpenStack-API-Version": "compute 2.53"}


async def active_server(h) -> tuple[str, str]:
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    server_id = created["server"]["id"]
    assert (await wait_status(h, server_id, "ACTIVE", "ERROR"))["status"] == "ACTIVE"
    detail = await ok(await h.http.get(f"{V}/servers/{server_id}", headers=h.admin), 200)
    return server_id, detail["server"]["OS-EXT-SRV-ATTR:host"]


async def force_down(h, host: str) -> None:
    """The host stops counting as up, as when its heartbeats stop for service_down_time."""
    services = await ok(await h.http.get(V + "/os-services?binary=nova-compute", headers={**h.admin, **NEW}), 200)
    [service] = [s for s in services["services"] if s["host"] == host]
    await ok(await h.http.put(f"{V}/os-services/{service['id']}", headers={**h.admin, **NEW},
                              json={"forced_down": True}), 200)


async def holds_nothing(h, server_id: str) -> None:
    allocations = await ok(await h.http.get(f"/placement/allocations/{server_id}", headers=h.admin), 200)
    assert allocations["allocations"] == {}
    ports = await ok(await h.http.get(f"/network/v2.0/ports?device_id={server_id}", headers=h.admin), 200)
    assert ports["ports"] == []


async def test_a_server_on_a_down_host_is_deleted_at_once_and_its_guest_when_the_host_is_back(cloud):
    h = cloud
    server_id, host = await active_server(h)
    compute_host = h.roles["compute"].hosts[host]
    await force_down(h, host)
    resp = await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice)
    assert resp.status == 204
    await wait_status(h, server_id, "GONE")
    await holds_nothing(h, server_id)
    actions = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions",
                                        headers={**h.admin, "OpenStack-API-Version": "compute 2.21"}), 200)
    assert [a["action"] for a in actions["instanceActions"]] == ["delete", "create"]
    # The guest is still on the host, which never heard of the delete; when the host starts
    # again its recovery removes it.
    assert await compute_host.hypervisor.is_running(domain_name(server_id)) is True
    assert await recovery.sweep_orphan_domains(compute_host) == [server_id]
    assert await compute_host.hypervisor.is_running(domain_name(server_id)) is None


async def test_a_build_on_a_host_that_went_down_ends_in_error_naming_the_host(cloud):
    h = cloud
    server_id, host = await active_server(h)
    # The host died in the middle of the build: the row as it left it.
    await h.cell1.execute("UPDATE instances SET vm_state = 'building', task_state = 'spawning', power_state = 0 "
                          "WHERE uuid = $1", server_id)
    stranded = h.roles["conductor"].stranded
    assert await stranded.fail_builds_on_down_hosts() == []     # the host is up: still its build
    await force_down(h, host)
    assert await stranded.fail_builds_on_down_hosts() == [server_id]
    assert await stranded.fail_builds_on_down_hosts() == []     # once
    server = await wait_status(h, server_id, "ERROR")
    assert server["fault"]["message"] == f"Compute host {host} went down while building the server"
    await holds_nothing(h, server_id)
    # Deleting it now (the host still down) leaves nothing either.
    resp = await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice)
    assert resp.status == 204
    await wait_status(h, server_id, "GONE")


async def test_a_boot_request_nobody_handed_on_is_sent_again(cloud, monkeypatch):
    h = cloud
    cast = h.bus.cast

    async def lose_boots(topic, msg, **kw):   # the API's process dies before its cast leaves
        if type(msg).__name__ != "ScheduleAndBuildInstances":
            await cast(topic, msg, **kw)

    monkeypatch.setattr(h.bus, "cast", lose_boots)
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    server_id = created["server"]["id"]
    monkeypatch.setattr(h.bus, "cast", cast)
    stranded = h.roles["conductor"].stranded
    assert await stranded.resend_forgotten_boots() == 0     # young: maybe still on its way
    await h.cell1.execute("UPDATE instances SET updated_at = now() - interval '1 hour' WHERE uuid = $1", server_id)
    assert await stranded.resend_forgotten_boots() == 1
    assert (await wait_status(h, server_id, "ACTIVE", "ERROR"))["status"] == "ACTIVE"
    assert await stranded.resend_forgotten_boots() == 0


async def test_a_delete_its_host_went_down_before_doing_is_finished_by_a_survivor(cloud):
    h = cloud
    server_id, host = await active_server(h)
    # The delete reached the host's queue, and the host died: the row as the API left it.
    await h.cell1.execute("UPDATE instances SET task_state = 'deleting' WHERE uuid = $1", server_id)
    await instances.start_action(h.cell1, server_id, "req-lost-delete", "delete", "proj-a", "alice")
    stranded = h.roles["conductor"].stranded
    assert await stranded.finish_deletes_on(await stranded.down_hosts()) == []   # the host is up: its delete
    await force_down(h, host)
    assert await stranded.finish_deletes_on(await stranded.down_hosts()) == [server_id]
    await wait_status(h, server_id, "GONE")
    await holds_nothing(h, server_id)
    action = await h.cell1.fetchrow("SELECT * FROM instance_actions WHERE request_id = 'req-lost-delete'")
    assert action["finish_time"] is not None


async def test_power_actions_and_rebuilds_its_host_went_down_in_are_ended(cloud):
    h = cloud
    stopping, _ = await active_server(h)
    rebuilding, _ = await active_server(h)
    hosts = {(await ok(await h.http.get(f"{V}/servers/{s}", headers=h.admin), 200))["server"]["OS-EXT-SRV-ATTR:host"]
             for s in (stopping, rebuilding)}
    for server_id, task, action in ((stopping, "powering-off", "stop"), (rebuilding, "rebuilding", "rebuild")):
        await h.cell1.execute("UPDATE instances SET task_state = $2 WHERE uuid = $1", server_id, task)
        await instances.start_action(h.cell1, server_id, f"req-{action}", action, "proj-a", "alice")
    stranded = h.roles["conductor"].stranded
    assert await stranded.end_tasks_on(await stranded.down_hosts()) == []   # the hosts are up
    for host in hosts:
        await force_down(h, host)
    assert sorted(await stranded.end_tasks_on(await stranded.down_hosts())) == sorted([stopping, rebuilding])
    assert await stranded.end_tasks_on(await stranded.down_hosts()) == []   # once
    stopped = await wait_status(h, stopping, "ACTIVE")
    assert stopped["OS-EXT-STS:task_state"] is None       # the stop was not done: as last recorded
    failed = await wait_status(h, rebuilding, "ERROR")
    assert failed["fault"]["message"].endswith("went down while rebuilding the server")
    for action in ("stop", "rebuild"):
        row = await h.cell1.fetchrow("SELECT * FROM instance_actions WHERE request_id = $1", f"req-{action}")
        assert row["finish_time"] is not None and "went down" in row["message"]


async def test_a_claim_that_outlived_its_server_is_let_go_of(cloud):
    """A claim that landed just after its server's delete let go of what it held (made for a
    conductor that died before giving it back): the survivor's job lets go of it once the
    server has been gone for service_down_time; a live server's claim stays."""
    h = cloud
    server_id, host = await active_server(h)
    live_id, _ = await active_server(h)
    await ok(await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice), 204)
    await wait_status(h, server_id, "GONE")
    provider = await h.pool.fetchval("SELECT uuid::text FROM resource_providers WHERE name = $1", host)
    placement = h.roles["conductor"].placement
    late = await placement.claim(server_id, provider, {"VCPU": 1, "MEMORY_MB": 1024}, "proj-a", "alice")
    assert late.ok
    stranded = h.roles["conductor"].stranded
    assert await stranded.release_outlived_claims() == []     # just deleted: perhaps still letting go
    await h.cell1.execute("UPDATE instances SET deleted_at = now() - interval '10 minutes' WHERE uuid = $1",
                          server_id)
    assert await stranded.release_outlived_claims() == [server_id]
    await holds_nothing(h, server_id)
    assert await stranded.release_outlived_claims() == []
    held = await ok(await h.http.get(f"/placement/allocations/{live_id}", headers=h.admin), 200)
    assert held["allocations"]


@contextlib.contextmanager
def losing(h, monkeypatch, kind: str):
    """The block's casts of message class `kind` never leave: as if the API process that
    sent them died first."""
    cast = h.bus.cast

    async def lossy(topic, msg, **kw):
        if type(msg).__name__ != kind:
            await cast(topic, msg, **kw)

    monkeypatch.setattr(h.bus, "cast", lossy)
    try:
        yield
    finally:
        monkeypatch.setattr(h.bus, "cast", cast)


async def test_a_delete_its_live_host_never_got_is_cast_again(cloud, monkeypatch):
    """The API process dies between marking a server deleting and its cast to the host: the
    survivor's job casts the delete again once it has sat unchanged for a while."""
    h = cloud
    server_id, _ = await active_server(h)
    with losing(h, monkeypatch, "TerminateInstance"):
        await ok(await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice), 204)
    stranded = h.roles["conductor"].stranded
    assert await stranded.resend_forgotten_deletes() == []     # young: maybe still on its way
    await h.cell1.execute("UPDATE instances SET updated_at = now() - interval '1 hour' WHERE uuid = $1", server_id)
    assert await stranded.resend_forgotten_deletes() == [server_id]
    await wait_status(h, server_id, "GONE")
    await holds_nothing(h, server_id)
    assert await stranded.resend_forgotten_deletes() == []


async def test_a_power_action_its_live_host_never_got_ends_undone(cloud, monkeypatch):
    """The API process dies between setting a stop's task and its cast to the host: the
    survivor's job ends the task undone, and the server takes the user's next request."""
    h = cloud
    server_id, _ = await active_server(h)
    with losing(h, monkeypatch, "PowerAction"):
        await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"os-stop": None}),
                 202)
    stranded = h.roles["conductor"].stranded
    assert await stranded.end_forgotten_tasks() == []     # young: maybe still on its way
    await h.cell1.execute("UPDATE instances SET updated_at = now() - interval '1 hour' WHERE uuid = $1", server_id)
    assert await stranded.end_forgotten_tasks() == [server_id]
    assert await stranded.end_forgotten_tasks() == []
    server = await wait_status(h, server_id, "ACTIVE")
    assert server["OS-EXT-STS:task_state"] is None
    actions = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions", headers=h.alice), 200)
    assert actions["instanceActions"][0]["action"] == "stop"
    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"os-stop": None}), 202)
    await wait_status(h, server_id, "SHUTOFF")


async def test_a_rebuild_its_live_host_never_got_is_cast_again(cloud, monkeypatch):
    """The API process dies between recording a rebuild (its new image, task 'rebuilding') and
    its cast to the host: the survivor's job casts it again, and the server is rebuilt once."""
    h = cloud
    server_id, _ = await active_server(h)
    image = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers=h.alice), 200))["server"]["image"]["id"]
    with losing(h, monkeypatch, "RebuildInstance"):
        await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice,
                                   json={"rebuild": {"imageRef": image, "name": "rebuilt"}}), 202)
    stranded = h.roles["conductor"].stranded
    assert await stranded.resend_forgotten_rebuilds() == []     # young: maybe still on its way
    await h.cell1.execute("UPDATE instances SET updated_at = now() - interval '1 hour' WHERE uuid = $1", server_id)
    assert await stranded.resend_forgotten_rebuilds() == [server_id]
    server = await wait_status(h, server_id, "ACTIVE")
    assert server["name"] == "rebuilt" and server["OS-EXT-STS:task_state"] is None
    assert await stranded.resend_forgotten_rebuilds() == []
    actions = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions", headers=h.alice), 200)
    rebuild = actions["instanceActions"][0]
    assert rebuild["action"] == "rebuild"
    steps = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions/{rebuild['request_id']}",
                                      headers={**h.alice, "OpenStack-API-Version": "compute 2.51"}), 200)
    events = [e["event"] for e in steps["instanceAction"]["events"]]
    assert "compute_rebuild_instance" in events and len(events) == len(set(events))   # each step once
