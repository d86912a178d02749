"""A build that fails on its host moves to an alternate: the claim moves with it, the action
log shows every attempt, and only when no alternate is left is the instance ERROR."""

from __future__ import annotations

from nova_async.common import errors
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud  # sim-1 and sim-2


def break_host(h, name: str) -> None:
    async def refuse(_xml: str) -> None:
        raise errors.NovaAsyncError(f"{name} cannot start guests today")
    h.roles["compute"].hosts[name].hypervisor.start = refuse


async def events_of(h, server_id: str) -> list[tuple[str, str, str]]:
    [action] = (await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions",
                                          headers=h.admin), 200))["instanceActions"]
    detail = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions/{action['request_id']}",
                                       headers={**h.admin, **MV}), 200)
    return [(e["event"], e["result"], e.get("host") or "") for e in detail["instanceAction"]["events"]]


async def usage(h, host: str) -> int:
    rps = (await ok(await h.http.get("/placement/resource_providers", headers=h.admin), 200))["resource_providers"]
    [rp] = [r for r in rps if r["name"] == host]
    return (await ok(await h.http.get(f"/placement/resource_providers/{rp['uuid']}/usages",
                                      headers=h.admin), 200))["usages"]["MEMORY_MB"]


async def test_a_failed_build_is_retried_on_the_alternate_and_its_claim_moves(cloud):
    h = cloud
    break_host(h, "sim-1")
    servers = []
    for i in range(2):   # the weighers spread: one of the two is tried on sim-1 first
        created = await ok(await h.http.post(V + "/servers", headers=h.alice,
                                             json=boot_body(h, name=f"r{i}")), 202)
        server = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
        servers.append(server["id"])
    hosts = [(await ok(await h.http.get(f"{V}/servers/{s}", headers={**h.admin, **MV}), 200))
             ["server"]["OS-EXT-SRV-ATTR:host"] for s in servers]
    assert hosts == ["sim-2", "sim-2"]
    assert await usage(h, "sim-1") == 0 and await usage(h, "sim-2") == 2048
    moved = [await events_of(h, s) for s in servers]
    retried = [e for e in moved if ("conductor_reschedule_instance", "Success", "") in
               [(n, r, "") for n, r, _ in e]]
    assert retried, moved
    builds = [(r, host) for n, r, host in retried[0] if n == "compute_build_and_run_instance"]
    assert sorted(builds) == [("Error", "sim-1"), ("Success", "sim-2")]


async def test_with_every_host_failing_it_ends_in_error_after_trying_each(cloud):
    h = cloud
    break_host(h, "sim-1")
    break_host(h, "sim-2")
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    server = await wait_status(h, created["server"]["id"], "ERROR")
    assert "cannot start guests today" in server["fault"]["message"]   # the last host's reason
    assert await usage(h, "sim-1") == 0 and await usage(h, "sim-2") == 0
    events = await events_of(h, server["id"])
    assert sorted(host for n, _, host in events if n == "compute_build_and_run_instance") == ["sim-1", "sim-2"]


async def test_when_no_alternate_takes_the_claim_the_fault_lists_where_it_was_tried(cloud):
    h = cloud
    rps = (await ok(await h.http.get("/placement/resource_providers", headers=h.admin), 200))["resource_providers"]
    sim2 = next(r["uuid"] for r in rps if r["name"] == "sim-2")

    async def take_from_sim2(consumer: str, mb: int) -> None:
        await ok(await h.http.put(f"/placement/allocations/{consumer}", headers={
            **h.admin, "OpenStack-API-Version": "placement 1.12"}, json={
            "allocations": {sim2: {"resources": {"MEMORY_MB": mb}}}, "project_id": "p", "user_id": "u"}), 204)

    # sim-2 has less free RAM, so sim-1 is tried first and sim-2 is the alternate ...
    await take_from_sim2("00000000-0000-0000-0000-0000000000a1", 1000)

    async def fail_after_sim2_filled_up(_xml: str) -> None:
        # ... which is full by the time the conductor tries to move the claim there.
        await take_from_sim2("00000000-0000-0000-0000-0000000000a2", 1000)
        raise errors.NovaAsyncError("sim-1 cannot start guests today")

    h.roles["compute"].hosts["sim-1"].hypervisor.start = fail_after_sim2_filled_up
    big = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "big", "ram": 2048, "vcpus": 1, "disk": 1}}), 200)
    created = await ok(await h.http.post(V + "/servers", headers=h.alice,
                                         json=boot_body(h, flavorRef=big["flavor"]["id"])), 202)
    server = await wait_status(h, created["server"]["id"], "ERROR")
    message = server["fault"]["message"]
    assert "failed on sim-1: sim-1 cannot start guests today" in message, message
    assert "No alternate host could take it (tried: sim-1, sim-2 (refused:" in message, message
    assert await usage(h, "sim-1") == 0 and await usage(h, "sim-2") == 2000
