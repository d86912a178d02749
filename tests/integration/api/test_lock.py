"""lock / unlock: a locked server refuses its members' changes until unlocked."""

from __future__ import annotations

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud
V273 = {"OpenStack-API-Version": "compute 2.73"}


async def test_lock_blocks_members_until_unlocked(cloud):
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    sid = created["server"]["id"]
    await wait_status(h, sid, "ACTIVE")
    act = f"{V}/servers/{sid}/action"
    assert (await h.http.post(act, headers={**h.alice, **V273},
                              json={"lock": {"locked_reason": "audit"}})).status == 202
    shown = (await ok(await h.http.get(f"{V}/servers/{sid}", headers={**h.alice, **V273}), 200))["server"]
    assert (shown["locked"], shown["locked_reason"]) == (True, "audit")
    assert (await h.http.post(act, headers=h.alice, json={"os-stop": None})).status == 409
    assert (await h.http.delete(f"{V}/servers/{sid}", headers=h.alice)).status == 409
    assert (await h.http.post(f"{V}/servers/{sid}/metadata", headers=h.alice,
                              json={"metadata": {"a": "b"}})).status == 409
    assert (await h.http.post(act, headers=h.alice, json={"unlock": None})).status == 202
    assert (await h.http.post(act, headers=h.alice, json={"os-stop": None})).status == 202


async def test_an_admins_lock_is_for_an_admin_to_lift(cloud):
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    sid = created["server"]["id"]
    await wait_status(h, sid, "ACTIVE")
    act = f"{V}/servers/{sid}/action"
    assert (await h.http.post(act, headers=h.admin, json={"lock": None})).status == 202
    assert (await h.http.post(act, headers=h.alice, json={"unlock": None})).status == 403
    assert (await h.http.post(act, headers=h.bob, json={"unlock": None})).status == 404
    assert (await h.http.post(act, headers=h.admin, json={"unlock": None})).status == 202
    assert (await h.http.post(act, headers={**h.alice, **V273}, json={"lock": "yes"})).status == 400
