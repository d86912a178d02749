"""Keystone's `manager` and `service` roles, as its bootstrap makes them since 2024.2, and
what Nova's default policy gives them: a project's manager is a member who may also move its
project's servers and see its migrations (without hosts); the service role alone may send
server external events and nothing else."""

from __future__ import annotations

import uuid

import pytest

from tests.harness import running
from tests.integration.identity.test_token_api import KEYSTONE, _login, _people

V = "/compute/v2.1"


@pytest.fixture
async def cloud(pool, tmp_path):
    async with running(pool, ["identity", "api"], tmp_path, identity=KEYSTONE) as h:
        h.ids = await _people(h)
        admin = {"X-Auth-Token": h.ids.tokens["admin"]}
        roles = {r["name"]: r["id"] for r in (await (await h.http.get("/v3/roles", headers=admin)).json())["roles"]}
        for name, role in (("mona", "manager"), ("sam", "service")):
            resp = await h.http.post("/v3/users", json={"user": {"name": name, "password": f"{name}-pw",
                                                                 "default_project_id": h.ids.demo}}, headers=admin)
            h.ids.users[name] = (await resp.json())["user"]["id"]
            resp = await h.http.put(f"/v3/projects/{h.ids.demo}/users/{h.ids.users[name]}/roles/{roles[role]}",
                                    headers=admin)
            assert resp.status == 204
            h.ids.tokens[name] = await _login(h, name, f"{name}-pw", "demo")
        yield h


def who(h, name: str) -> dict[str, str]:
    return {"X-Auth-Token": h.ids.tokens[name]}


async def test_a_manager_is_a_member_who_sees_its_projects_migrations_without_hosts(cloud):
    h = cloud
    resp = await h.http.post("/v3/auth/tokens", json={"auth": {"identity": {"methods": ["token"], "token": {
        "id": h.ids.tokens["mona"]}}}})
    assert sorted(r["name"] for r in (await resp.json())["token"]["roles"]) == ["manager", "member", "reader"]
    resp = await h.http.get("/v3/role_assignments?effective&include_names", headers=who(h, "admin"))
    admin_roles = {a["role"]["name"] for a in (await resp.json())["role_assignments"]
                   if a["user"]["name"] == "admin"}
    assert {"admin", "manager", "member", "reader"} <= admin_roles

    own = f"{V}/os-migrations?project_id={h.ids.demo}"
    resp = await h.http.get(own, headers=who(h, "mona"))
    assert resp.status == 200 and (await resp.json())["migrations"] == []
    for path, name in ((V + "/os-migrations", "mona"), (own, "alice"), (own, "sam")):
        resp = await h.http.get(path, headers=who(h, name))
        assert resp.status == 403, (path, name, await resp.text())

    # The migrate policy lets a manager through (then: no such server); a member it does not.
    missing = str(uuid.uuid4())
    resp = await h.http.post(f"{V}/servers/{missing}/action", json={"migrate": None}, headers=who(h, "mona"))
    assert resp.status == 404, await resp.text()
    resp = await h.http.post(f"{V}/servers/{missing}/action", json={"migrate": None}, headers=who(h, "alice"))
    assert resp.status == 403
    resp = await h.http.post(f"{V}/servers/{missing}/action", json={"migrate": {"host": "h1"}},
                             headers={**who(h, "mona"), "OpenStack-API-Version": "compute 2.56"})
    assert resp.status == 403  # naming the host stays an admin's


async def test_only_the_service_role_or_an_admin_sends_server_external_events(cloud):
    h = cloud
    missing = str(uuid.uuid4())
    events = {"events": [{"name": "network-changed", "server_uuid": missing}]}
    for name in ("sam", "admin"):
        resp = await h.http.post(V + "/os-server-external-events", json=events, headers=who(h, name))
        assert resp.status == 207, await resp.text()
        assert (await resp.json())["events"] == [{"name": "network-changed", "server_uuid": missing,
                                                  "status": "failed", "code": 404}]
    for name in ("alice", "mona"):
        resp = await h.http.post(V + "/os-server-external-events", json=events, headers=who(h, name))
        assert resp.status == 403, name
    # An event name newer than the request's microversion, and a bad uuid, are 400s.
    for bad in ({"name": "volume-extended", "server_uuid": missing, "tag": "v"},
                {"name": "network-changed", "server_uuid": "nope"}):
        resp = await h.http.post(V + "/os-server-external-events", json={"events": [bad]}, headers=who(h, "sam"))
        assert resp.status == 400, bad
    # The service role alone creates nothing else.
    resp = await h.http.post(V + "/os-keypairs", json={"keypair": {"name": "k"}}, headers=who(h, "sam"))
    assert resp.status == 403
