"""Projects, users and roles managed through Keystone's /v3 API, and what they mean for the
other APIs: members act in their project, readers only read, and access that is taken away
(a user disabled or deleted, a password changed, a role removed, a project deleted) ends
for tokens already issued."""

from __future__ import annotations

import pytest

from nova_async.common.tokens import Revocations
from nova_async.identity import revocations
from nova_async.identity.admin import IdentityAdmin
from tests.harness import running
from tests.waiting import until

KEYSTONE = {"auth": "keystone", "admin_password": "s3cret"}
ROLE_IDS = {}


def auth(user: str, password: str, project: str | None = "admin") -> dict:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"name": "Default"}, "password": password}}}}}
    if project:
        body["auth"]["scope"] = {"project": {"name": project, "domain": {"id": "default"}}}
    return body


class Api:
    """A little client: requests as someone, answers as (status, JSON or None)."""

    def __init__(self, h) -> None:
        self.h = h
        self.tokens: dict[str, str] = {}

    async def login(self, who: str, user: str, password: str, project: str | None = "admin") -> int:
        resp = await self.h.http.post("/v3/auth/tokens", json=auth(user, password, project))
        if resp.status == 201:
            self.tokens[who] = resp.headers["X-Subject-Token"]
        return resp.status

    async def call(self, who: str, method: str, path: str, body=None) -> tuple[int, dict | None]:
        resp = await self.h.http.request(method, path, json=body, headers={"X-Auth-Token": self.tokens[who]})
        data = await resp.json() if resp.content_type == "application/json" and resp.status != 204 else None
        return resp.status, data


@pytest.fixture
async def api(pool, tmp_path):
    async with running(pool, ["identity", "api", "image", "network"], tmp_path, identity=KEYSTONE) as h:
        a = Api(h)
        assert await a.login("admin", "admin", "s3cret") == 201
        yield a


async def _setup_demo(api: Api) -> dict[str, str]:
    """Project demo; alice a member of it, rita a reader; their tokens."""
    status, body = await api.call("admin", "POST", "/v3/projects",
                                  {"project": {"name": "demo", "description": "Demo", "enabled": True,
                                               "domain_id": "default"}})
    assert status == 201, body
    ids = {"demo": body["project"]["id"]}
    _, roles = await api.call("admin", "GET", "/v3/roles")
    ids.update({r["name"]: r["id"] for r in roles["roles"]})
    for name, role in (("alice", "member"), ("rita", "reader")):
        status, body = await api.call("admin", "POST", "/v3/users", {"user": {
            "name": name, "password": f"{name}-pw", "default_project_id": ids["demo"], "enabled": True,
            "email": f"{name}@example.org"}})
        assert status == 201, body
        ids[name] = body["user"]["id"]
        status, _ = await api.call("admin", "PUT", f"/v3/projects/{ids['demo']}/users/{ids[name]}/roles/{ids[role]}")
        assert status == 204
        assert await api.login(name, name, f"{name}-pw", "demo") == 201
    return ids


async def test_shapes_of_projects_users_roles_and_assignments(api):
    ids = await _setup_demo(api)
    status, body = await api.call("admin", "GET", f"/v3/projects/{ids['demo']}")
    assert status == 200
    project = body["project"]
    assert {k: project[k] for k in ("name", "description", "enabled", "domain_id", "is_domain")} == {
        "name": "demo", "description": "Demo", "enabled": True, "domain_id": "default", "is_domain": False}
    assert project["links"]["self"].endswith(f"/v3/projects/{ids['demo']}")

    status, body = await api.call("admin", "GET", f"/v3/users/{ids['alice']}")
    user = body["user"]
    assert status == 200 and user["name"] == "alice" and user["enabled"] is True
    assert user["default_project_id"] == ids["demo"] and user["email"] == "alice@example.org"
    assert user["domain_id"] == "default" and "password" not in user and "password_hash" not in user

    _, body = await api.call("admin", "GET", "/v3/roles")
    assert {r["name"] for r in body["roles"]} == {"admin", "manager", "member", "reader", "service"}
    _, body = await api.call("admin", "GET", f"/v3/roles/{ids['member']}")
    assert body["role"]["name"] == "member"

    _, body = await api.call("admin", "GET", f"/v3/role_assignments?scope.project.id={ids['demo']}&include_names=True")
    got = {(a["user"]["name"], a["scope"]["project"]["name"], a["role"]["name"]) for a in body["role_assignments"]}
    assert got == {("alice", "demo", "member"), ("rita", "demo", "reader")}
    first = body["role_assignments"][0]
    assert first["user"]["domain"] == {"id": "default", "name": "Default"}
    assert "/v3/projects/" in first["links"]["assignment"]

    _, body = await api.call("admin", "GET", f"/v3/role_assignments?user.id={ids['alice']}")
    assert [(a["user"], a["role"]) for a in body["role_assignments"]] == [({"id": ids["alice"]}, {"id": ids["member"]})]
    _, body = await api.call("admin", "GET", f"/v3/role_assignments?user.id={ids['alice']}&effective")
    assert {a["role"]["id"] for a in body["role_assignments"]} == {ids["member"], ids["reader"]}

    # Alice's own view: her projects, herself, not others.
    for path in ("/v3/auth/projects", f"/v3/users/{ids['alice']}/projects"):
        status, body = await api.call("alice", "GET", path)
        assert status == 200 and [p["name"] for p in body["projects"]] == ["demo"], path
    assert (await api.call("alice", "GET", f"/v3/users/{ids['alice']}"))[0] == 200
    _, body = await api.call("alice", "GET", "/v3/projects?name=demo")
    assert [p["id"] for p in body["projects"]] == [ids["demo"]]


async def test_list_filters(api):
    ids = await _setup_demo(api)
    await api.call("admin", "POST", "/v3/projects", {"project": {"name": "off", "enabled": False}})
    cases = [
        ("/v3/projects?name=demo", "projects", ["demo"]),
        ("/v3/projects?enabled=False", "projects", ["off"]),
        ("/v3/projects?domain_id=default&enabled=true", "projects", ["admin", "demo"]),
        ("/v3/projects?domain_id=other", "projects", []),
        ("/v3/users?name=rita", "users", ["rita"]),
        ("/v3/users", "users", ["admin", "alice", "rita"]),
        ("/v3/roles?name=reader", "roles", ["reader"]),
        ("/v3/domains?name=Default", "domains", ["Default"]),
        (f"/v3/users/{ids['rita']}/projects", "projects", ["demo"]),
    ]
    for path, key, names in cases:
        status, body = await api.call("admin", "GET", path)
        assert status == 200, (path, body)
        assert [x["name"] for x in body[key]] == names, path


ERRORS = [
    # who, method, path, body, status
    ("admin", "POST", "/v3/projects", {"project": {"name": "demo"}}, 409),
    ("admin", "POST", "/v3/projects", {"project": {}}, 400),
    ("admin", "POST", "/v3/projects", {"project": {"name": "x", "domain_id": "elsewhere"}}, 400),
    ("admin", "POST", "/v3/users", {"user": {"name": "alice", "password": "x"}}, 409),
    ("admin", "POST", "/v3/users", {"user": {"name": "x", "default_project_id": "nope"}}, 400),
    ("admin", "POST", "/v3/users", {"user": {"password": "x"}}, 400),
    ("admin", "PATCH", "/v3/users/{alice}", {"user": {"name": "rita"}}, 409),
    ("admin", "PATCH", "/v3/projects/{demo}", {"project": {"name": "admin"}}, 409),
    ("admin", "GET", "/v3/projects/nope", None, 404),
    ("admin", "GET", "/v3/users/alice", None, 404),  # names are not ids: clients then list by name
    ("admin", "GET", "/v3/roles/member", None, 404),
    ("admin", "GET", "/v3/domains/Default", None, 404),
    ("admin", "DELETE", "/v3/users/nope", None, 404),
    ("admin", "DELETE", "/v3/projects/nope", None, 404),
    ("admin", "PUT", "/v3/projects/{demo}/users/nope/roles/{member}", None, 404),
    ("admin", "PUT", "/v3/projects/{demo}/users/{alice}/roles/nope", None, 404),
    ("admin", "HEAD", "/v3/projects/{demo}/users/{rita}/roles/{member}", None, 404),
    ("admin", "DELETE", "/v3/projects/{demo}/users/{rita}/roles/{member}", None, 404),
    # members and readers manage nothing in identity
    ("alice", "POST", "/v3/projects", {"project": {"name": "mine"}}, 403),
    ("alice", "PATCH", "/v3/projects/{demo}", {"project": {"description": "x"}}, 403),
    ("alice", "DELETE", "/v3/projects/{demo}", None, 403),
    ("alice", "POST", "/v3/users", {"user": {"name": "eve", "password": "x"}}, 403),
    ("alice", "PATCH", "/v3/users/{alice}", {"user": {"enabled": True}}, 403),
    ("alice", "DELETE", "/v3/users/{rita}", None, 403),
    ("alice", "GET", "/v3/users", None, 403),
    ("alice", "GET", "/v3/users/{rita}", None, 403),
    ("alice", "GET", "/v3/users/{rita}/projects", None, 403),
    ("alice", "GET", "/v3/roles", None, 403),
    ("alice", "GET", "/v3/role_assignments", None, 403),
    ("alice", "PUT", "/v3/projects/{demo}/users/{alice}/roles/{admin}", None, 403),
    ("alice", "GET", "/v3/projects/{admin_project}", None, 404),
    ("rita", "PATCH", "/v3/users/{rita}", {"user": {"password": "x"}}, 403),
    ("rita", "POST", "/v3/users/{alice}/password", {"user": {"password": "x", "original_password": "alice-pw"}}, 403),
    ("rita", "POST", "/v3/users/{rita}/password", {"user": {"password": "x", "original_password": "wrong"}}, 401),
    ("rita", "POST", "/v3/users/{rita}/password", {"user": {"password": "x"}}, 400),
    # a reader reads everything of their project and changes nothing, in any API
    ("rita", "GET", "/compute/v2.1/servers/detail", None, 200),
    ("rita", "GET", "/network/v2.0/networks", None, 200),
    ("rita", "GET", "/image/v2/images", None, 200),
    ("rita", "POST", "/compute/v2.1/servers", {"server": {"name": "x", "flavorRef": "1", "imageRef": "x"}}, 403),
    ("rita", "POST", "/compute/v2.1/os-keypairs", {"keypair": {"name": "k"}}, 403),
    ("rita", "POST", "/network/v2.0/networks", {"network": {"name": "n"}}, 403),
    ("rita", "POST", "/image/v2/images", {"name": "i", "disk_format": "raw", "container_format": "bare"}, 403),
    ("alice", "POST", "/network/v2.0/networks", {"network": {"name": "n"}}, 201),
]


async def test_errors_and_policy(api):
    ids = await _setup_demo(api)
    _, body = await api.call("admin", "GET", "/v3/projects?name=admin")
    ids["admin_project"] = body["projects"][0]["id"]
    failures = []
    for who, method, path, body, expected in ERRORS:
        status, answer = await api.call(who, method, path.format(**ids), body)
        if status != expected:
            failures.append((who, method, path, expected, status, answer))
        elif status >= 400 and method != "HEAD" and path.startswith("/v3"):
            assert answer["error"]["code"] == status, answer
    assert not failures, "\n".join(map(str, failures))


async def test_update_and_delete(api):
    ids = await _setup_demo(api)
    status, body = await api.call("admin", "PATCH", f"/v3/projects/{ids['demo']}",
                                  {"project": {"name": "demo2", "description": None}})
    assert status == 200 and body["project"]["name"] == "demo2" and body["project"]["description"] == ""
    status, body = await api.call("admin", "PATCH", f"/v3/users/{ids['rita']}",
                                  {"user": {"email": None, "description": "reads", "default_project_id": None}})
    assert status == 200
    assert "email" not in body["user"] and body["user"]["description"] == "reads"
    assert "default_project_id" not in body["user"]

    assert (await api.call("admin", "DELETE", f"/v3/projects/{ids['demo']}/users/{ids['rita']}/roles/{ids['reader']}"))[0] == 204
    assert (await api.call("admin", "HEAD", f"/v3/projects/{ids['demo']}/users/{ids['alice']}/roles/{ids['member']}"))[0] == 204
    assert (await api.call("admin", "DELETE", f"/v3/users/{ids['rita']}"))[0] == 204
    assert (await api.call("admin", "GET", f"/v3/users/{ids['rita']}"))[0] == 404
    assert (await api.call("admin", "DELETE", f"/v3/projects/{ids['demo']}"))[0] == 204
    _, body = await api.call("admin", "GET", f"/v3/role_assignments?user.id={ids['alice']}")
    assert body["role_assignments"] == []
    assert await api.login("alice2", "alice", "alice-pw", None) == 401  # no project left to scope to


async def test_taking_access_away_ends_issued_tokens(api):
    ids = await _setup_demo(api)
    await api.login("alice-old", "alice", "alice-pw", "demo")
    assert (await api.call("alice-old", "GET", "/compute/v2.1/servers"))[0] == 200

    # a new password: the old token ends, the old password no longer works, the new one does
    assert (await api.call("admin", "PATCH", f"/v3/users/{ids['alice']}", {"user": {"password": "new-pw"}}))[0] == 200
    assert (await api.call("alice-old", "GET", "/compute/v2.1/servers"))[0] == 401
    assert await api.login("alice", "alice", "alice-pw", "demo") == 401
    assert await api.login("alice", "alice", "new-pw", "demo") == 201
    assert (await api.call("alice", "GET", "/compute/v2.1/servers"))[0] == 200

    # disabled: no token, and the one she has stops working; enabled again: she logs in again
    assert (await api.call("admin", "PATCH", f"/v3/users/{ids['alice']}", {"user": {"enabled": False}}))[0] == 200
    assert (await api.call("alice", "GET", "/compute/v2.1/servers"))[0] == 401
    assert await api.login("alice", "alice", "new-pw", "demo") == 401
    assert (await api.call("admin", "PATCH", f"/v3/users/{ids['alice']}", {"user": {"enabled": True}}))[0] == 200
    assert await api.login("alice", "alice", "new-pw", "demo") == 201

    # a token made from a token is refused once its source is revoked
    resp = await api.h.http.post("/v3/auth/tokens", json={"auth": {"identity": {
        "methods": ["token"], "token": {"id": api.tokens["alice-old"]}}}})
    assert resp.status == 401

    # a role taken away ends tokens scoped to that project
    assert (await api.call("rita", "GET", "/compute/v2.1/servers"))[0] == 200
    assert (await api.call("admin", "DELETE", f"/v3/projects/{ids['demo']}/users/{ids['rita']}/roles/{ids['reader']}"))[0] == 204
    assert (await api.call("rita", "GET", "/compute/v2.1/servers"))[0] == 401
    assert await api.login("rita", "rita", "rita-pw", "demo") == 401

    # the project disabled, then deleted
    assert (await api.call("admin", "PATCH", f"/v3/projects/{ids['demo']}", {"project": {"enabled": False}}))[0] == 200
    assert (await api.call("alice", "GET", "/compute/v2.1/servers"))[0] == 401
    assert await api.login("alice", "alice", "new-pw", "demo") == 401
    assert (await api.call("admin", "DELETE", f"/v3/projects/{ids['demo']}"))[0] == 204
    assert (await api.call("admin", "GET", "/compute/v2.1/servers"))[0] == 200  # admin's own token is fine

    # deleted: the token ends
    await api.call("admin", "PATCH", f"/v3/users/{ids['alice']}", {"user": {"default_project_id": None}})
    admin_project = (await api.call("admin", "GET", "/v3/projects?name=admin"))[1]["projects"][0]["id"]
    await api.call("admin", "PUT", f"/v3/projects/{admin_project}/users/{ids['alice']}/roles/{ids['member']}")
    assert await api.login("alice", "alice", "new-pw", "admin") == 201
    assert (await api.call("admin", "DELETE", f"/v3/users/{ids['alice']}"))[0] == 204
    assert (await api.call("alice", "GET", "/compute/v2.1/servers"))[0] == 401


async def test_revocations_written_elsewhere_reach_a_running_service(api):
    """`nova-async user delete` writes the database from another process; the service hears it."""
    ids = await _setup_demo(api)
    elsewhere = IdentityAdmin(api.h.pool, 3600)  # no local checker, like the command line
    await elsewhere.delete_user(ids["alice"])
    await until(lambda: api.call("alice", "GET", "/compute/v2.1/servers"), lambda answer: answer[0] == 401,
                what="alice's token refused")


async def test_following_loads_existing_events_and_later_ones(pool):
    admin = IdentityAdmin(pool, 3600)
    project = await admin.create_project("p1")
    target = Revocations()
    await admin.delete_project(project["id"])
    async with revocations.following(pool, target):
        assert target._by_project.keys() == {project["id"]}
        other = await admin.create_project("p2")
        await admin.update_project(other["id"], enabled=False)
        await until(lambda: target._by_project, lambda revoked: other["id"] in revoked,
                    what="the disabled project's revocation followed")


async def test_a_token_without_scope_is_for_the_default_project(api):
    ids = await _setup_demo(api)
    _, body = await api.call("admin", "GET", "/v3/projects?name=admin")
    # alice also has a role on "admin", which sorts first: her default project still wins
    await api.call("admin", "PUT", f"/v3/projects/{body['projects'][0]['id']}/users/{ids['alice']}/roles/{ids['reader']}")
    resp = await api.h.http.post("/v3/auth/tokens", json=auth("alice", "alice-pw", None))
    assert resp.status == 201
    assert (await resp.json())["token"]["project"]["name"] == "demo"


async def test_a_reader_changes_their_own_password(api):
    ids = await _setup_demo(api)
    status, _ = await api.call("rita", "POST", f"/v3/users/{ids['rita']}/password",
                               {"user": {"password": "rita-new", "original_password": "rita-pw"}})
    assert status == 204
    assert (await api.call("rita", "GET", "/compute/v2.1/servers"))[0] == 401
    assert await api.login("rita", "rita", "rita-pw", "demo") == 401
    assert await api.login("rita", "rita", "rita-new", "demo") == 201
