"""Polling with `changes-since` / `changes-before` (2.66+): only the servers changed in the
window, deleted ones included (status DELETED), as Nova's polling clients expect; a bad time
is a 400 that names the filter. Another project's changes are never listed."""

from __future__ import annotations

import asyncio
import urllib.parse

import pytest

from nova_async.common.timeutil import utcnow
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud


def at(ts) -> str:
    return urllib.parse.quote(ts.isoformat())


async def listed(h, query: str, headers=None, detail: bool = False) -> dict[str, str]:
    path = f"{V}/servers{'/detail' if detail else ''}?{query}"
    body = await ok(await h.http.get(path, headers={**(headers or h.alice), **MV}), 200)
    return {s["id"]: s.get("status", "") for s in body["servers"]}


async def boot(h, name: str) -> str:
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name=name)), 202)
    await wait_status(h, created["server"]["id"], "ACTIVE")
    return created["server"]["id"]


async def test_changes_since_lists_what_changed_deleted_servers_included(cloud):
    h = cloud
    quiet, stopped, deleted = [await boot(h, n) for n in ("quiet", "stopped", "deleted")]
    await asyncio.sleep(0.01)
    mark = utcnow()
    assert await listed(h, f"changes-since={at(mark)}") == {}
    assert (await h.http.post(f"{V}/servers/{stopped}/action", headers=h.alice, json={"os-stop": None})).status == 202
    await wait_status(h, stopped, "SHUTOFF")
    assert (await h.http.delete(f"{V}/servers/{deleted}", headers=h.alice)).status == 204
    await wait_status(h, deleted, "GONE")

    assert await listed(h, f"changes-since={at(mark)}", detail=True) == {stopped: "SHUTOFF", deleted: "DELETED"}
    assert set(await listed(h, f"changes-since={at(mark)}")) == {stopped, deleted}
    # with a status filter, and the Z form of the time
    zulu = mark.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert await listed(h, f"changes-since={zulu}&status=SHUTOFF", detail=True) == {stopped: "SHUTOFF"}
    # changes-before (2.66+): what had changed by then, the deleted one with it
    before = await listed(h, f"changes-before={at(mark)}", detail=True)
    assert quiet in before and stopped not in before and deleted not in before
    # without either filter a deleted server is gone from lists
    assert deleted not in await listed(h, "")
    # nobody else's changes
    assert await listed(h, f"changes-since={at(mark)}", headers=h.bob) == {}


@pytest.mark.parametrize("query", ["changes-since=yesterday", "changes-since=2025-13-01T00:00:00Z",
                                   "changes-before=nope",
                                   "changes-since=2025-02-01T00:00:00Z&changes-before=2025-01-01T00:00:00Z"])
async def test_bad_change_windows_are_400(cloud, query):
    h = cloud
    resp = await h.http.get(f"{V}/servers?{query}", headers={**h.alice, **MV})
    body = await resp.json()
    assert resp.status == 400, body
    assert "changes-" in body["badRequest"]["message"]
