"""Keystone v3 password tokens, as the OpenStack clients obtain them."""

from nova_async.identity import store
from tests.harness import running

AUTH = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
    "name": "admin", "domain": {"name": "Default"}, "password": "s3cret"}}},
    "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}


async def test_version_document_needs_no_token(pool, tmp_path):
    async with running(pool, ["identity"], tmp_path, identity={"auth": "keystone", "admin_password": "s3cret"}) as h:
        resp = await h.http.get("/v3")
        assert resp.status == 200
        assert (await resp.json())["version"]["id"].startswith("v3")


async def test_password_token_with_catalog_is_accepted_by_apis(pool, tmp_path):
    async with running(pool, ["identity", "api"], tmp_path,
                       identity={"auth": "keystone", "admin_password": "s3cret"}) as h:
        resp = await h.http.post("/v3/auth/tokens", json=AUTH)
        assert resp.status == 201
        token = resp.headers["X-Subject-Token"]
        body = (await resp.json())["token"]
        assert body["project"]["name"] == "admin"
        assert {"admin", "member", "reader"} <= {r["name"] for r in body["roles"]}
        types = {e["type"]: e["endpoints"][0]["url"] for e in body["catalog"]}
        assert types["compute"].endswith("/compute/v2.1") and types["image"].endswith("/image")
        assert types["network"].endswith("/network") and types["placement"].endswith("/placement")

        ok = await h.http.get("/compute/v2.1/flavors", headers={"X-Auth-Token": token})
        assert ok.status == 200
        bad = await h.http.get("/compute/v2.1/flavors", headers={"X-Auth-Token": token[:-2] + "xx"})
        assert bad.status == 401
        assert "unauthorized" in await bad.json()
        missing = await h.http.get("/compute/v2.1/flavors")
        assert missing.status == 401


async def test_wrong_password_and_bad_bodies_are_4xx(pool, tmp_path):
    async with running(pool, ["identity"], tmp_path, identity={"auth": "keystone", "admin_password": "s3cret"}) as h:
        wrong = {"auth": {**AUTH["auth"], "identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "domain": {"name": "Default"}, "password": "nope"}}}}}
        assert (await h.http.post("/v3/auth/tokens", json=wrong)).status == 401
        assert (await h.http.post("/v3/auth/tokens", data=b"{not json")).status == 400
        assert (await h.http.post("/v3/auth/tokens", json={"auth": {}})).status == 400


async def test_generated_admin_password_is_kept_in_state_dir(pool, tmp_path):
    # none configured ("", the default; the harness gives one otherwise)
    async with running(pool, ["identity"], tmp_path, identity={"auth": "keystone", "admin_password": ""}) as h:
        password = (tmp_path / "admin-password").read_text().strip()
        auth = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "domain": {"id": "default"}, "password": password}}}}}
        assert (await h.http.post("/v3/auth/tokens", json=auth)).status == 201


async def test_bootstrap_hashes_a_password_once_and_still_follows_a_change(pool, monkeypatch):
    hashed, checked = [], []
    real_hash, real_check = store.hash_password, store.check_password
    monkeypatch.setattr(store, "hash_password", lambda pw: hashed.append(pw) or real_hash(pw))
    monkeypatch.setattr(store, "check_password", lambda pw, h: checked.append(pw) or real_check(pw, h))
    monkeypatch.setattr(store, "_BOOTSTRAP_HASHES", {})

    async def stored() -> str:
        return await pool.fetchval("SELECT password_hash FROM users WHERE name = 'admin'")

    await store.bootstrap(pool, "first")
    first = await stored()
    await pool.execute("DELETE FROM users WHERE name = 'admin'")   # as a fresh database would be
    await store.bootstrap(pool, "first")
    await store.bootstrap(pool, "first")
    assert (hashed, checked) == (["first"], []) and await stored() == first   # made once, known since
    await store.bootstrap(pool, "second")    # the configured password changed: honoured
    assert hashed == ["first", "second"] and checked == ["second"]
    assert real_check("second", await stored())
    await pool.execute("UPDATE users SET password_hash = $1 WHERE name = 'admin'", first)
    await store.bootstrap(pool, "second")    # a hash this process did not make of it: checked
    assert real_check("second", await stored()) and checked == ["second", "second"]
