"""Keystone's token API beyond issuing: validate (GET), check (HEAD) and revoke (DELETE)
/v3/auth/tokens, who may do which to whose token, allow_expired, the caller's catalog and
scopes, the version documents at /v3 and at the port's root, and token requests whose fields
have the wrong types (each a 400 in Keystone's fault format naming the field)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from nova_async.common.errors import Unauthorized
from nova_async.common.tokens import TokenBody, TokenCodec
from nova_async.identity import revocations
from nova_async.service import _token_key
from tests.harness import running

KEYSTONE = {"auth": "keystone", "admin_password": "s3cret"}


def password_auth(user: str, password: str, project: str = "admin") -> dict:
    return {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"name": "Default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"name": "Default"}}}}}


@dataclasses.dataclass
class Ids:
    """Who is who: a token each (admin; alice and rita in project demo), their user ids."""

    tokens: dict[str, str] = dataclasses.field(default_factory=dict)
    users: dict[str, str] = dataclasses.field(default_factory=dict)
    demo: str = ""


async def _login(h, user: str, password: str, project: str = "admin") -> str:
    resp = await h.http.post("/v3/auth/tokens", json=password_auth(user, password, project))
    assert resp.status == 201, await resp.text()
    return resp.headers["X-Subject-Token"]


async def _people(h) -> Ids:
    ids = Ids()
    ids.tokens["admin"] = await _login(h, "admin", "s3cret")
    admin = {"X-Auth-Token": ids.tokens["admin"]}
    resp = await h.http.post("/v3/projects", json={"project": {"name": "demo"}}, headers=admin)
    ids.demo = (await resp.json())["project"]["id"]
    roles = {r["name"]: r["id"] for r in (await (await h.http.get("/v3/roles", headers=admin)).json())["roles"]}
    for name, role in (("alice", "member"), ("rita", "reader")):
        resp = await h.http.post("/v3/users", json={"user": {"name": name, "password": f"{name}-pw",
                                                             "default_project_id": ids.demo}}, headers=admin)
        ids.users[name] = (await resp.json())["user"]["id"]
        resp = await h.http.put(f"/v3/projects/{ids.demo}/users/{ids.users[name]}/roles/{roles[role]}",
                                headers=admin)
        assert resp.status == 204
        ids.tokens[name] = await _login(h, name, f"{name}-pw", "demo")
    return ids


async def _call(h, method: str, path: str, caller: str | None, subject: str | None = None):
    headers = {}
    if caller is not None:
        headers["X-Auth-Token"] = caller
    if subject is not None:
        headers["X-Subject-Token"] = subject
    resp = await h.http.request(method, path, headers=headers)
    body = await resp.json() if resp.content_type == "application/json" and method != "HEAD" else None
    return resp, body


def _fault(body: dict, code: int) -> str:
    """Keystone's fault format; the message, for the test to look at."""
    titles = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found"}
    assert body["error"]["code"] == code and body["error"]["title"] == titles[code], body
    return body["error"]["message"]


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["identity", "api"], tmp_path, identity=KEYSTONE) as harness:
        yield harness


async def test_validate_answers_what_issue_answered(h):
    resp = await h.http.post("/v3/auth/tokens", json=password_auth("admin", "s3cret"))
    issued, token = await resp.json(), resp.headers["X-Subject-Token"]

    resp, body = await _call(h, "GET", "/v3/auth/tokens", token, token)
    assert resp.status == 200 and resp.headers["X-Subject-Token"] == token
    assert body == issued  # user, project, roles, methods, audit ids, times and the catalog
    assert body["token"]["methods"] == ["password"] and len(body["token"]["catalog"]) == 7

    resp, body = await _call(h, "GET", "/v3/auth/tokens?nocatalog", token, token)
    assert resp.status == 200 and "catalog" not in body["token"]
    assert body["token"]["audit_ids"] == issued["token"]["audit_ids"]
    resp = await h.http.post("/v3/auth/tokens?nocatalog", json=password_auth("admin", "s3cret"))
    assert resp.status == 201 and "catalog" not in (await resp.json())["token"]

    # a token made from a token says so, and is validated like any other
    resp = await h.http.post("/v3/auth/tokens", json={"auth": {"identity": {
        "methods": ["token"], "token": {"id": token}}}})
    assert resp.status == 201
    rescoped = resp.headers["X-Subject-Token"]
    resp, body = await _call(h, "GET", "/v3/auth/tokens", token, rescoped)
    assert resp.status == 200 and body["token"]["methods"] == ["token", "password"]


async def test_check_is_a_bodiless_200_or_404(h):
    ids = await _people(h)
    resp, _ = await _call(h, "HEAD", "/v3/auth/tokens", ids.tokens["alice"], ids.tokens["alice"])
    assert resp.status == 200 and resp.headers["X-Subject-Token"] == ids.tokens["alice"]
    assert await resp.read() == b""
    resp, _ = await _call(h, "HEAD", "/v3/auth/tokens", ids.tokens["admin"], ids.tokens["alice"])
    assert resp.status == 200
    resp, _ = await _call(h, "HEAD", "/v3/auth/tokens", ids.tokens["admin"], "gAnot-a-token.x")
    assert resp.status == 404
    resp, _ = await _call(h, "HEAD", "/v3/auth/tokens", ids.tokens["alice"], ids.tokens["rita"])
    assert resp.status == 403


async def test_who_may_validate_check_and_revoke_whose_token(h):
    """Keystone's default policy: the token's own user, or an admin; nobody else."""
    ids = await _people(h)
    alice, rita, admin = ids.tokens["alice"], ids.tokens["rita"], ids.tokens["admin"]
    for method in ("GET", "DELETE"):
        resp, body = await _call(h, method, "/v3/auth/tokens", alice, rita)
        action = "validate_token" if method == "GET" else "revoke_token"
        assert resp.status == 403 and f"identity:{action}" in _fault(body, 403)
        resp, body = await _call(h, method, "/v3/auth/tokens", rita, admin)
        assert resp.status == 403, method
    resp, body = await _call(h, "GET", "/v3/auth/tokens", admin, alice)
    assert resp.status == 200 and body["token"]["user"]["id"] == ids.users["alice"]
    assert body["token"]["project"]["id"] == ids.demo
    assert {r["name"] for r in body["token"]["roles"]} == {"member", "reader"}

    # the subject is looked at before the policy (404), a missing one after it (403 or 404)
    resp, body = await _call(h, "GET", "/v3/auth/tokens", alice, "gAgarbage.x")
    assert resp.status == 404 and "Could not find token" in _fault(body, 404)
    resp, body = await _call(h, "GET", "/v3/auth/tokens", alice)
    assert resp.status == 403, body
    resp, body = await _call(h, "GET", "/v3/auth/tokens", admin)
    assert resp.status == 404 and "X-Subject-Token" in _fault(body, 404)
    resp, body = await _call(h, "GET", "/v3/auth/tokens", None, alice)
    assert resp.status == 401 and _fault(body, 401)
    resp, body = await _call(h, "GET", "/v3/auth/tokens", "gAbad.x", alice)
    assert resp.status == 401


async def test_revoked_token_is_refused_everywhere(h):
    ids = await _people(h)
    other = await _login(h, "rita", "rita-pw", "demo")
    rita = ids.tokens["rita"]
    # a reader may revoke her own token (Keystone's token_subject rule needs no role)
    resp, _ = await _call(h, "DELETE", "/v3/auth/tokens", other, rita)
    assert resp.status == 204

    resp, body = await _call(h, "GET", "/v3/auth/tokens", other, rita)
    assert resp.status == 404 and "revoked" in _fault(body, 404)
    resp, _ = await _call(h, "GET", "/compute/v2.1/flavors", rita)
    assert resp.status == 401
    resp, _ = await _call(h, "GET", "/v3/auth/tokens", ids.tokens["admin"], rita)
    assert resp.status == 404
    resp, _ = await _call(h, "DELETE", "/v3/auth/tokens", other, rita)
    assert resp.status == 404
    # her other token, and everyone else's, are untouched
    resp, _ = await _call(h, "GET", "/compute/v2.1/flavors", other)
    assert resp.status == 200
    resp, _ = await _call(h, "GET", "/compute/v2.1/flavors", ids.tokens["alice"])
    assert resp.status == 200

    # every other process hears of it from the database
    elsewhere = TokenCodec(await _token_key(h.pool))
    await revocations.reload(h.pool, elsewhere.revocations)
    with pytest.raises(Unauthorized, match="revoked"):
        elsewhere.verify(rita)
    assert elsewhere.verify(other).user_id == ids.users["rita"]

    # an admin revokes someone else's token; a token may revoke itself
    resp, _ = await _call(h, "DELETE", "/v3/auth/tokens", ids.tokens["admin"], other)
    assert resp.status == 204
    alice = ids.tokens["alice"]
    resp, _ = await _call(h, "DELETE", "/v3/auth/tokens", alice, alice)
    assert resp.status == 204
    resp, _ = await _call(h, "GET", "/v3/auth/catalog", alice)
    assert resp.status == 401


def _expired(h, ids: Ids, ago: float) -> str:
    """A token of alice's that expired `ago` seconds ago, signed with the service's own key."""
    now = time.time()
    return h.deps.tokens.issue(TokenBody(
        user_id=ids.users["alice"], user_name="alice", project_id=ids.demo, project_name="demo",
        roles=("member", "reader"), issued_at=now - ago - 3600, expires_at=now - ago, audit_id="old-one"))


async def test_allow_expired_shows_a_token_expired_within_the_window(pool, tmp_path):
    async with running(pool, ["identity", "api"], tmp_path,
                       identity={**KEYSTONE, "allow_expired_window": 3600}) as h:
        ids = await _people(h)
        admin, recent, old = ids.tokens["admin"], _expired(h, ids, 60), _expired(h, ids, 7200)

        resp, body = await _call(h, "GET", "/v3/auth/tokens", admin, recent)
        assert resp.status == 404 and "expired" in _fault(body, 404)
        for flag in ("1", "true", "True"):
            resp, body = await _call(h, "GET", f"/v3/auth/tokens?allow_expired={flag}", admin, recent)
            assert resp.status == 200 and body["token"]["user"]["name"] == "alice", flag
        resp, _ = await _call(h, "GET", "/v3/auth/tokens?allow_expired=0", admin, recent)
        assert resp.status == 404
        resp, _ = await _call(h, "GET", "/v3/auth/tokens?allow_expired=1", admin, old)
        assert resp.status == 404
        # an expired token is still no credential
        resp, _ = await _call(h, "GET", "/v3/auth/tokens?allow_expired=1", recent, recent)
        assert resp.status == 401
        # nor does allow_expired bring a revoked token back
        fresh = await _login(h, "alice", "alice-pw", "demo")
        resp, _ = await _call(h, "DELETE", "/v3/auth/tokens", admin, fresh)
        assert resp.status == 204
        resp, _ = await _call(h, "GET", "/v3/auth/tokens?allow_expired=1", admin, fresh)
        assert resp.status == 404


async def test_catalog_and_scopes_of_the_callers_token(h):
    ids = await _people(h)
    alice = ids.tokens["alice"]
    _, token = await _call(h, "GET", "/v3/auth/tokens", alice, alice)
    resp, body = await _call(h, "GET", "/v3/auth/catalog", alice)
    assert resp.status == 200 and body["catalog"] == token["token"]["catalog"]
    assert body["links"]["self"].endswith("/v3/auth/catalog")
    entry = next(e for e in body["catalog"] if e["type"] == "compute")
    assert {e["interface"] for e in entry["endpoints"]} == {"public", "internal", "admin"}
    assert all(e["url"].endswith("/compute/v2.1") for e in entry["endpoints"])
    resp, _ = await _call(h, "GET", "/v3/auth/catalog", None)
    assert resp.status == 401

    # projects: where the caller has a role, a disabled one too (as Keystone lists them)
    admin = {"X-Auth-Token": ids.tokens["admin"]}
    resp = await h.http.get("/v3/roles?name=member", headers=admin)
    member = (await resp.json())["roles"][0]["id"]
    me = (await _call(h, "GET", "/v3/auth/tokens", ids.tokens["admin"], ids.tokens["admin"]))[1]["token"]["user"]["id"]
    resp = await h.http.put(f"/v3/projects/{ids.demo}/users/{me}/roles/{member}", headers=admin)
    assert resp.status == 204
    resp = await h.http.patch(f"/v3/projects/{ids.demo}", json={"project": {"enabled": False}}, headers=admin)
    assert resp.status == 200
    resp, body = await _call(h, "GET", "/v3/auth/projects", ids.tokens["admin"])
    assert resp.status == 200
    assert [(p["name"], p["enabled"]) for p in body["projects"]] == [("admin", True), ("demo", False)]
    assert body["links"]["self"].endswith("/v3/auth/projects") and body["links"]["next"] is None

    resp, body = await _call(h, "GET", "/v3/auth/domains", ids.tokens["admin"])
    assert resp.status == 200 and body["domains"] == [] and body["links"]["self"].endswith("/v3/auth/domains")
    resp, body = await _call(h, "GET", "/v3/auth/system", ids.tokens["admin"])
    assert resp.status == 200 and body == {"system": [], "links": {"self": body["links"]["self"]}}
    assert body["links"]["self"].endswith("/v3/auth/system")


async def test_version_documents(h):
    resp = await h.http.get("/", allow_redirects=False)
    assert resp.status == 300
    body = await resp.json()
    [v3] = body["versions"]["values"]
    assert v3["id"] == "v3.14" and v3["status"] == "stable"
    assert v3["links"][0]["href"].endswith("/v3/") and resp.headers["Location"] == v3["links"][0]["href"]
    assert v3["media-types"][0]["type"] == "application/vnd.openstack.identity-v3+json"
    for path in ("/v3", "/v3/"):
        resp = await h.http.get(path)
        assert resp.status == 200 and (await resp.json()) == {"version": v3}, path
    # the compute API keeps its own version list
    resp = await h.http.get("/compute/")
    assert resp.status == 200 and "v2.1" in [v["id"] for v in (await resp.json())["versions"]]


_USER = {"name": "admin", "domain": {"name": "Default"}, "password": "s3cret"}


def _body(identity: object = None, scope: object = "absent") -> dict:
    auth: dict = {"identity": identity if identity is not None else
                  {"methods": ["password"], "password": {"user": _USER}}}
    if scope != "absent":
        auth["scope"] = scope
    return {"auth": auth}


def _user(**changes) -> dict:
    return _body({"methods": ["password"], "password": {"user": {**_USER, **changes}}})


BAD_BODIES = [
    # (what is wrong, body, the field the message names)
    ("domain is a string", _user(domain=" "), "identity/password/user/domain"),
    ("password is a number", _user(password=1.5), "identity/password/user/password"),
    ("user is a list", _body({"methods": ["password"], "password": {"user": []}}), "identity/password/user"),
    ("user has no id or name", _body({"methods": ["password"], "password": {"user": {"password": "x"}}}),
     "identity/password/user"),
    ("user name without domain", _body({"methods": ["password"], "password": {"user": {
        "name": "admin", "password": "x"}}}), "identity/password/user"),
    ("domain has no id or name", _user(domain={}), "identity/password/user/domain"),
    ("user id is a number", _body({"methods": ["password"], "password": {"user": {"id": 7, "password": "x"}}}),
     "identity/password/user/id"),
    ("password block is a string", _body({"methods": ["password"], "password": "s3cret"}), "identity/password"),
    ("password method without its block", _body({"methods": ["password"]}), "identity"),
    ("token method without its block", _body({"methods": ["token"]}), "identity"),
    ("token id is a number", _body({"methods": ["token"], "token": {"id": 1}}), "identity/token/id"),
    ("methods is a string", _body({"methods": "password", "password": {"user": _USER}}), "identity/methods"),
    ("methods is empty", _body({"methods": [], "password": {"user": _USER}}), "identity/methods"),
    ("a method is a number", _body({"methods": [1], "password": {"user": _USER}}), "identity/methods/0"),
    ("identity is a list", _body([]), "identity"),
    ("scope is another string", _body(scope="x"), "scope"),
    ("scope is a number", _body(scope=5), "scope"),
    ("scope is empty", _body(scope={}), "scope"),
    ("scope names two things", _body(scope={"project": {"id": "x"}, "domain": {"id": "default"}}), "scope"),
    ("project is a string", _body(scope={"project": "admin"}), "scope/project"),
    ("project name without domain", _body(scope={"project": {"name": "admin"}}), "scope/project"),
    ("project domain is a list", _body(scope={"project": {"name": "admin", "domain": []}}), "scope/project/domain"),
    ("system all is a string", _body(scope={"system": {"all": "yes"}}), "scope/system/all"),
    ("auth is a string", {"auth": "x"}, "auth"),
]


async def test_wrongly_typed_token_requests_are_400_naming_the_field(h):
    # One service for the whole table: starting one per case would cost more than the cases.
    for what, body, field in BAD_BODIES:
        resp = await h.http.post("/v3/auth/tokens", json=body)
        assert resp.status == 400, (what, await resp.text())
        message = _fault(await resp.json(), 400)
        assert message.startswith(f"Invalid input for field '{field}': "), (what, message)
        assert "1.5" not in message and "s3cret" not in message, what  # described, not echoed


async def test_token_requests_that_fail_to_authenticate_are_401(h):
    for body in (_body({"methods": ["password"], "password": {"user": {
                     "name": "admin", "domain": {"name": "Default"}}}}),  # no password at all
                 _body(scope={"domain": {"id": "default"}}),  # nobody has a role on the domain
                 _body(scope={"system": {"all": True}}),
                 _body({"methods": ["totp"], "totp": {}}),
                 _user(domain={"name": "Elsewhere"})):
        resp = await h.http.post("/v3/auth/tokens", json=body)
        assert resp.status == 401, (body, await resp.text())
        _fault(await resp.json(), 401)
    for good in (_body(scope="unscoped"), _body(scope={"unscoped": {}}), _body()):
        resp = await h.http.post("/v3/auth/tokens", json=good)
        assert resp.status == 201, (good, await resp.text())


async def test_noauth_tokens_validate_as_names_and_cannot_be_revoked(pool, tmp_path):
    async with running(pool, ["identity"], tmp_path) as h:
        resp, body = await _call(h, "GET", "/v3/auth/tokens", "admin", "alice:proj-a")
        assert resp.status == 200
        assert (body["token"]["user"]["id"], body["token"]["project"]["id"]) == ("alice", "proj-a")
        resp, _ = await _call(h, "GET", "/v3/auth/tokens", "bob:proj-b", "alice:proj-a")
        assert resp.status == 403
        resp, body = await _call(h, "DELETE", "/v3/auth/tokens", "alice:proj-a", "alice:proj-a")
        assert resp.status == 403 and "noauth" in _fault(body, 403)
