"""The policy matrix: a member of one project can neither see, change nor delete anything of
another project's, and admin-only APIs answer 403 to members. Bob (proj-b) tries everything
on Alice's (proj-a) resources; each attempt must fail and change nothing."""

from __future__ import annotations

import pytest

from nova_async.api.keypair_store import generate
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud
MV = {"OpenStack-API-Version": "compute 2.96"}


@pytest.fixture
async def alices(cloud):
    """Alice's server, server group, key pair and port, and where Bob may try them."""
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, metadata={"k": "v"})), 202)
    sid = created["server"]["id"]
    await wait_status(h, sid, "ACTIVE")
    group = (await ok(await h.http.post(V + "/os-server-groups", headers={**h.alice, **MV}, json={
        "server_group": {"name": "g", "policy": "affinity"}}), 200))["server_group"]["id"]
    await ok(await h.http.post(V + "/os-keypairs", headers=h.alice, json={
        "keypair": {"name": "k", "public_key": generate()[0]}}), 200)
    [port] = (await ok(await h.http.get(f"/network/v2.0/ports?device_id={sid}", headers=h.alice), 200))["ports"]
    h.sid, h.group, h.port = sid, group, port["id"]
    return h


async def snapshot(h) -> dict:
    """Everything of Alice's, as Alice sees it."""
    server = (await ok(await h.http.get(f"{V}/servers/{h.sid}", headers={**h.alice, **MV}), 200))["server"]
    return {
        "server": {k: server[k] for k in ("status", "metadata", "tags", "locked", "name")},
        "group": await ok(await h.http.get(f"{V}/os-server-groups/{h.group}", headers=h.alice), 200),
        "keypairs": await ok(await h.http.get(V + "/os-keypairs", headers=h.alice), 200),
        "image": await ok(await h.http.get(f"/image/v2/images/{h.image}", headers=h.alice), 200),
        "network": await ok(await h.http.get(f"/network/v2.0/networks/{h.net}", headers=h.alice), 200),
        "port": await ok(await h.http.get(f"/network/v2.0/ports/{h.port}", headers=h.alice), 200),
        "quota": await ok(await h.http.get(V + "/os-quota-sets/proj-a", headers=h.alice), 200),
    }


# (method, path, body): every one must fail for Bob with a 4xx and change nothing.
ATTEMPTS = [
    ("GET", "{V}/servers/{sid}", None),
    ("PUT", "{V}/servers/{sid}", {"server": {"name": "mine"}}),
    ("DELETE", "{V}/servers/{sid}", None),
    ("POST", "{V}/servers/{sid}/action", {"os-stop": None}),
    ("POST", "{V}/servers/{sid}/action", {"reboot": {"type": "HARD"}}),
    ("POST", "{V}/servers/{sid}/action", {"lock": None}),
    ("POST", "{V}/servers/{sid}/action", {"os-getConsoleOutput": {}}),
    ("GET", "{V}/servers/{sid}/metadata", None),
    ("POST", "{V}/servers/{sid}/metadata", {"metadata": {"b": "b"}}),
    ("DELETE", "{V}/servers/{sid}/metadata/k", None),
    ("PUT", "{V}/servers/{sid}/tags/bob", None),
    ("GET", "{V}/servers/{sid}/os-instance-actions", None),
    ("GET", "{V}/os-server-groups/{group}", None),
    ("DELETE", "{V}/os-server-groups/{group}", None),
    ("GET", "{V}/os-keypairs/k", None),
    ("DELETE", "{V}/os-keypairs/k", None),
    ("GET", "{V}/os-quota-sets/proj-a", None),
    ("PUT", "{V}/os-quota-sets/proj-a", {"quota_set": {"instances": 1}}),
    ("POST", "{V}/servers", {"server": {"name": "x", "imageRef": "{image}", "flavorRef": "{flavor}"}}),
    ("GET", "/image/v2/images/{image}", None),
    ("PATCH", "/image/v2/images/{image}", [{"op": "replace", "path": "/name", "value": "bob"}]),
    ("DELETE", "/image/v2/images/{image}", None),
    ("GET", "/network/v2.0/networks/{net}", None),
    ("DELETE", "/network/v2.0/networks/{net}", None),
    ("GET", "/network/v2.0/ports/{port}", None),
    ("DELETE", "/network/v2.0/ports/{port}", None),
    # admin-only, whoever owns what
    ("GET", "{V}/servers?all_tenants=1", None),
    ("GET", "{V}/os-hypervisors/detail", None),
    ("GET", "{V}/os-services", None),
    ("GET", "{V}/os-aggregates", None),
    ("POST", "{V}/flavors", {"flavor": {"name": "f", "ram": 1, "vcpus": 1, "disk": 0}}),
    ("DELETE", "{V}/flavors/{flavor}", None),
    ("GET", "/placement/resource_providers", None),
]


async def test_another_project_can_touch_nothing(alices):
    h = alices
    before = await snapshot(h)
    names = {"V": V, "sid": h.sid, "group": h.group, "image": h.image, "net": h.net, "port": h.port,
             "flavor": h.flavor}
    failures = []
    for method, path, body in ATTEMPTS:
        url = path.format(**names)
        if isinstance(body, dict) and "server" in body and method == "POST":
            body = {"server": {k: v.format(**names) for k, v in body["server"].items()}}
        headers = {**h.bob, **MV}
        if method == "PATCH":
            headers["Content-Type"] = "application/openstack-images-v2.1-json-patch"
            resp = await h.http.request(method, url, headers=headers, json=body)
        else:
            resp = await h.http.request(method, url, headers=headers, json=body)
        if not 400 <= resp.status < 500:
            failures.append(f"{method} {url}: {resp.status} {(await resp.text())[:200]}")
        if resp.status >= 500:
            failures.append(f"{method} {url}: server error")
    assert not failures, "\n".join(failures)
    listed = (await ok(await h.http.get(V + "/servers/detail", headers=h.bob), 200))["servers"]
    assert listed == []
    assert (await ok(await h.http.get("/network/v2.0/ports", headers=h.bob), 200))["ports"] == []
    assert await snapshot(h) == before
