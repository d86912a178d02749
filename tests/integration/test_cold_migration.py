"""The `migrate` server action (admin): a cold migration to another host with the flavor
unchanged, to the host its admin named from 2.56, confirmed or reverted as a resize."""

from __future__ import annotations

from tests.integration import test_server_lifecycle
from tests.integration.test_resize import action, allocations, boot, migration_of
from tests.integration.test_server_lifecycle import MV, V, ok, settled, wait_status

cloud = test_server_lifecycle.cloud


async def host_of(h, sid: str) -> str:
    return (await ok(await h.http.get(f"{V}/servers/{sid}", headers=h.admin), 200))["server"]["OS-EXT-SRV-ATTR:host"]


async def test_migrate_moves_to_the_other_host_and_confirms(cloud):
    h = cloud
    sid = await boot(h)
    source = await host_of(h, sid)
    await action(h, sid, {"migrate": None}, 403)                       # alice: admin only
    await action(h, sid, {"migrate": None}, 202, headers=h.admin)
    server = await settled(h, sid, h.admin)
    assert server["status"] == "VERIFY_RESIZE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] != source and server["flavor"]["original_name"] == "m1.small"
    migration = await migration_of(h, sid)
    assert (migration["migration_type"], migration["source_compute"]) == ("migration", source)
    assert list((await allocations(h, str(migration["uuid"]))).values()) == \
        [{"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1}]

    await action(h, sid, {"confirmResize": None}, 204)
    server = await wait_status(h, sid, "ACTIVE")
    assert await host_of(h, sid) != source
    assert await allocations(h, str(migration["uuid"])) == {}
    listed = (await ok(await h.http.get(f"{V}/os-migrations?instance_uuid={sid}", headers={**h.admin, **MV}),
                       200))["migrations"]
    assert [(m["status"], m["migration_type"]) for m in listed] == [("confirmed", "migration")]
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    assert [a["action"] for a in actions[:2]] == ["confirmResize", "migrate"]


async def test_migrate_to_a_named_host_or_refused(cloud):
    h = cloud
    sid = await boot(h)
    source = await host_of(h, sid)
    other = "sim-2" if source == "sim-1" else "sim-1"
    v256 = {**h.admin, "OpenStack-API-Version": "compute 2.56"}
    await action(h, sid, {"migrate": {"host": source}}, 400, headers=v256)       # the same host
    await action(h, sid, {"migrate": {"host": "nowhere"}}, 400, headers=v256)
    await action(h, sid, {"migrate": {"host": other, "extra": 1}}, 400, headers=v256)
    await action(h, sid, {"migrate": {"host": other}}, 202, headers=v256)
    assert (await settled(h, sid, h.admin))["status"] == "VERIFY_RESIZE"
    assert await host_of(h, sid) == other
    await action(h, sid, {"migrate": None}, 409, headers=h.admin)               # one move at a time
    await action(h, sid, {"revertResize": None}, 202)
    server = await settled(h, sid, h.admin)
    assert server["status"] == "ACTIVE" and server["OS-EXT-SRV-ATTR:host"] == source


async def test_admin_actions_reset_state_inject_network_info_force_delete_restore(cloud):
    h = cloud
    sid = await boot(h)
    await action(h, sid, {"os-resetState": {"state": "error"}}, 403)
    await action(h, sid, {"os-resetState": {"state": "error"}}, 202, headers=h.admin)
    server = await wait_status(h, sid, "ERROR")
    assert server["OS-EXT-STS:task_state"] is None
    await action(h, sid, {"os-resetState": {"state": "paused"}}, 400, headers=h.admin)
    await action(h, sid, {"os-resetState": {"state": "active"}}, 202, headers=h.admin)
    await wait_status(h, sid, "ACTIVE")
    await action(h, sid, {"injectNetworkInfo": None}, 202, headers=h.admin)
    await action(h, sid, {"injectNetworkInfo": None}, 403)
    # Deletes are never soft here: nothing to force or restore.
    await action(h, sid, {"forceDelete": None}, 409)
    await action(h, sid, {"restore": None}, 409)
    await action(h, sid, {"restore": None}, 404, headers=h.bob)
