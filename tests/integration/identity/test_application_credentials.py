"""Keystone's application credentials: a user makes one for their token's project with some
or all of its roles, a program authenticates with its id (or name and user) and secret and
gets that project and those roles whatever it asks for; restricted ones cannot make more;
a deleted one's tokens stop working, and one whose user lost a role no longer authenticates."""

from __future__ import annotations

import pytest

from tests.harness import running
from tests.integration.identity.test_token_api import KEYSTONE, _people

BASE = "/v3/users/{}/application_credentials"


@pytest.fixture
async def cloud(pool, tmp_path):
    async with running(pool, ["identity", "api"], tmp_path, identity=KEYSTONE) as h:
        h.ids = await _people(h)
        yield h


def app_cred_auth(**ref) -> dict:
    return {"auth": {"identity": {"methods": ["application_credential"], "application_credential": ref}}}


async def post(h, path: str, body: dict, token: str | None = None):
    resp = await h.http.post(path, json=body, headers={"X-Auth-Token": token} if token else {})
    return resp, await resp.json() if resp.content_type == "application/json" else None


async def test_made_used_listed_and_deleted(cloud):
    h = cloud
    alice, alice_id = h.ids.tokens["alice"], h.ids.users["alice"]
    resp, made = await post(h, BASE.format(alice_id), {"application_credential": {
        "name": "ci", "description": "for the CI", "roles": [{"name": "reader"}]}}, alice)
    assert resp.status == 201, made
    cred = made["application_credential"]
    assert cred["project_id"] == h.ids.demo and [r["name"] for r in cred["roles"]] == ["reader"]
    assert cred["unrestricted"] is False and len(cred["secret"]) > 40 and cred["access_rules"] == []

    # By id, and by name and user: the credential's project and roles, a scope refused.
    resp, token = await post(h, "/v3/auth/tokens", app_cred_auth(id=cred["id"], secret=cred["secret"]))
    assert resp.status == 201, token
    assert token["token"]["project"]["id"] == h.ids.demo and [r["name"] for r in token["token"]["roles"]] == ["reader"]
    assert token["token"]["methods"] == ["application_credential"]
    assert token["token"]["application_credential"] == {"id": cred["id"], "name": "ci", "restricted": True}
    app_token = resp.headers["X-Subject-Token"]
    resp, _ = await post(h, "/v3/auth/tokens", app_cred_auth(
        name="ci", user={"name": "alice", "domain": {"name": "Default"}}, secret=cred["secret"]))
    assert resp.status == 201
    for wrong in (app_cred_auth(id=cred["id"], secret="nope"), app_cred_auth(id="nope", secret=cred["secret"]),
                  {"auth": {**app_cred_auth(id=cred["id"], secret=cred["secret"])["auth"],
                            "scope": {"project": {"id": h.ids.demo}}}}):
        resp, _ = await post(h, "/v3/auth/tokens", wrong)
        assert resp.status == 401
    resp, _ = await post(h, "/v3/auth/tokens", app_cred_auth(name="ci", secret="x"))
    assert resp.status == 400   # a name needs its user

    # The token works on the compute API, as a reader.
    listed = await h.http.get("/compute/v2.1/servers", headers={"X-Auth-Token": app_token})
    assert listed.status == 200
    # A restricted credential's token may not make another.
    resp, refused = await post(h, BASE.format(alice_id), {"application_credential": {"name": "more"}}, app_token)
    assert resp.status == 403 and "not allowed" in refused["error"]["message"]

    # Listed and shown to its user (and an admin), never with its secret; names are unique.
    resp = await h.http.get(BASE.format(alice_id), headers={"X-Auth-Token": alice})
    [shown] = (await resp.json())["application_credentials"]
    assert shown["id"] == cred["id"] and "secret" not in shown
    resp = await h.http.get(BASE.format(alice_id) + "?name=other", headers={"X-Auth-Token": alice})
    assert (await resp.json())["application_credentials"] == []
    resp = await h.http.get(f"{BASE.format(alice_id)}/{cred['id']}", headers={"X-Auth-Token": h.ids.tokens["admin"]})
    assert resp.status == 200
    resp = await h.http.get(BASE.format(alice_id), headers={"X-Auth-Token": h.ids.tokens["rita"]})
    assert resp.status == 403
    resp, _ = await post(h, BASE.format(alice_id), {"application_credential": {"name": "ci"}}, alice)
    assert resp.status == 409

    # Deleted: its tokens stop working, and it no longer authenticates.
    resp = await h.http.delete(f"{BASE.format(alice_id)}/{cred['id']}", headers={"X-Auth-Token": alice})
    assert resp.status == 204
    assert (await h.http.get("/compute/v2.1/servers", headers={"X-Auth-Token": app_token})).status == 401
    resp, _ = await post(h, "/v3/auth/tokens", app_cred_auth(id=cred["id"], secret=cred["secret"]))
    assert resp.status == 401
    resp = await h.http.get(f"{BASE.format(alice_id)}/{cred['id']}", headers={"X-Auth-Token": alice})
    assert resp.status == 404


async def test_what_may_not_be_made(cloud):
    h = cloud
    alice, alice_id = h.ids.tokens["alice"], h.ids.users["alice"]
    for body, status in (({"name": "a", "roles": [{"name": "admin"}]}, 404),    # not a role alice has
                         ({"name": "b", "expires_at": "2000-01-01T00:00:00"}, 400),
                         ({"name": "c", "access_rules": [{"service": "compute", "method": "GET",
                                                          "path": "/servers"}]}, 400),
                         ({"name": ""}, 400)):
        resp, _ = await post(h, BASE.format(alice_id), {"application_credential": body}, alice)
        assert resp.status == status, body
    resp, _ = await post(h, BASE.format(h.ids.users["rita"]), {"application_credential": {"name": "x"}}, alice)
    assert resp.status == 403   # only for oneself


async def test_an_unrestricted_one_with_a_secret_of_ones_own_and_a_role_taken_away(cloud):
    h = cloud
    alice, alice_id = h.ids.tokens["alice"], h.ids.users["alice"]
    resp, made = await post(h, BASE.format(alice_id), {"application_credential": {
        "name": "mine", "secret": "s3cret-of-mine", "unrestricted": True,
        "expires_at": "2099-01-01T00:00:00Z"}}, alice)
    cred = made["application_credential"]
    assert resp.status == 201 and cred["secret"] == "s3cret-of-mine" and cred["expires_at"].startswith("2099-01-01")
    assert {r["name"] for r in cred["roles"]} == {"member", "reader"}
    resp, _ = await post(h, "/v3/auth/tokens", app_cred_auth(id=cred["id"], secret="s3cret-of-mine"))
    token = resp.headers["X-Subject-Token"]
    resp, _ = await post(h, BASE.format(alice_id), {"application_credential": {"name": "child"}}, token)
    assert resp.status == 201    # unrestricted: it may make others

    admin = {"X-Auth-Token": h.ids.tokens["admin"]}
    roles = {r["name"]: r["id"] for r in (await (await h.http.get("/v3/roles", headers=admin)).json())["roles"]}
    resp = await h.http.delete(f"/v3/projects/{h.ids.demo}/users/{alice_id}/roles/{roles['member']}", headers=admin)
    assert resp.status == 204
    resp, _ = await post(h, "/v3/auth/tokens", app_cred_auth(id=cred["id"], secret="s3cret-of-mine"))
    assert resp.status == 401
