"""Compute API details OpenStack's own suite (Tempest) checks and clients depend on: what
Nova takes and answers, case by case, through the real HTTP stack (issue 23)."""

from __future__ import annotations

import uuid as uuidlib

from tests.harness import running
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, settled, wait_status

cloud = test_server_lifecycle.cloud  # the whole cloud, two simulated hosts


async def boot(h) -> str:
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    server = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    return server["id"]


async def test_actions_whose_value_nova_ignores_take_empty_object_or_null(cloud):
    h = cloud
    # Validation passes for either spelling: a missing server is then a 404, not a 400.
    missing = str(uuidlib.uuid4())
    for name in ("os-stop", "os-start", "pause", "unpause", "suspend", "resume", "lock", "unlock",
                 "confirmResize", "revertResize"):
        for value in ({}, None):
            resp = await h.http.post(f"{V}/servers/{missing}/action", headers=h.alice, json={name: value})
            assert resp.status == 404, (name, value, resp.status, await resp.text())

    server_id = await boot(h)
    for action, status in (("os-stop", "SHUTOFF"), ("os-start", "ACTIVE"), ("pause", "PAUSED"),
                           ("unpause", "ACTIVE")):
        await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={action: {}}), 202)
        await wait_status(h, server_id, status)
        await settled(h, server_id)
    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"lock": {}}), 202)
    assert (await settled(h, server_id))["locked"] is True
    await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"unlock": {}}), 202)
    assert (await settled(h, server_id))["locked"] is False

