"""Key pairs: upload or generate, list/show/delete per user, quotas, and the key a boot
names landing in the guest's config drive."""

from __future__ import annotations

import pytest

from nova_async.api.keypair_store import fingerprint, generate
from nova_async.compute.build import drive_content
from nova_async.compute.config_drive import meta_data
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud
K = V + "/os-keypairs"
V22, V292, V210 = ({"OpenStack-API-Version": f"compute {v}"} for v in ("2.2", "2.92", "2.10"))
PUBLIC, _ = generate()


def test_fingerprints_are_md5_of_the_key_blob():
    assert len(fingerprint(PUBLIC).split(":")) == 16
    for bad in ("ssh-rsa", "ssh-rsa !!!", "not-a-type AAAA", "ssh-rsa " + PUBLIC.split()[1]):
        with pytest.raises(Exception, match="invalid"):
            fingerprint(bad)


async def test_upload_generate_list_show_delete(cloud):
    h = cloud
    up = await ok(await h.http.post(K, headers={**h.alice, **V22}, json={
        "keypair": {"name": "laptop", "public_key": PUBLIC}}), 201)
    assert up["keypair"] | {"fingerprint": None} == {"name": "laptop", "public_key": PUBLIC, "type": "ssh",
                                                    "user_id": "alice", "fingerprint": None}
    made = await ok(await h.http.post(K, headers=h.alice, json={"keypair": {"name": "made"}}), 200)
    assert made["keypair"]["private_key"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    listed = (await ok(await h.http.get(K, headers=h.alice), 200))["keypairs"]
    assert [k["keypair"]["name"] for k in listed] == ["laptop", "made"]
    assert all("private_key" not in k["keypair"] for k in listed)
    assert (await ok(await h.http.get(K, headers=h.bob), 200))["keypairs"] == []
    shown = (await ok(await h.http.get(K + "/laptop", headers=h.alice), 200))["keypair"]
    assert (shown["user_id"], shown["deleted"]) == ("alice", False)
    assert (await h.http.get(K + "/laptop", headers=h.bob)).status == 404
    assert (await h.http.delete(K + "/laptop", headers={**h.alice, **V22})).status == 204
    assert (await h.http.delete(K + "/laptop", headers=h.alice)).status == 404
    # An admin acts for a user with user_id (2.10+); a member may not.
    assert (await h.http.get(K + "?user_id=alice", headers={**h.admin, **V210})).status == 200
    assert (await h.http.get(K + "?user_id=bob", headers={**h.alice, **V210})).status == 403


@pytest.mark.parametrize("headers, body, status", [
    (V22, {"keypair": {"name": "bad/name", "public_key": PUBLIC}}, 400),
    (V22, {"keypair": {"name": "", "public_key": PUBLIC}}, 400),
    (V22, {"keypair": {"name": "k", "public_key": "ssh-rsa garbage"}}, 400),
    (V22, {"keypair": {"name": "k", "public_key": PUBLIC, "type": "pgp"}}, 400),
    (V292, {"keypair": {"name": "k"}}, 400),                     # 2.92: no more generated keys
    (V292, {"keypair": {"name": "me@laptop", "public_key": PUBLIC}}, 201),
    (V22, {"keypair": {"name": "me@laptop", "public_key": PUBLIC}}, 400),
])
async def test_bad_keypairs(cloud, headers, body, status):
    h = cloud
    resp = await h.http.post(K, headers={**h.alice, **headers}, json=body)
    assert resp.status == status, await resp.text()


async def test_duplicates_and_quota(cloud):
    h = cloud
    await ok(await h.http.post(K, headers=h.alice, json={"keypair": {"name": "a", "public_key": PUBLIC}}), 200)
    assert (await h.http.post(K, headers=h.alice, json={"keypair": {"name": "a", "public_key": PUBLIC}})).status == 409
    await ok(await h.http.put(V + "/os-quota-sets/proj-a", headers=h.admin,
                              json={"quota_set": {"key_pairs": 1}}), 200)
    assert (await h.http.post(K, headers=h.alice, json={"keypair": {"name": "b", "public_key": PUBLIC}})).status == 403


async def test_the_key_a_boot_names_reaches_the_config_drive(cloud):
    h = cloud
    await ok(await h.http.post(K, headers=h.alice, json={"keypair": {"name": "laptop", "public_key": PUBLIC}}), 200)
    assert (await h.http.post(V + "/servers", headers=h.alice,
                              json=boot_body(h, key_name="nope"))).status == 400
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, key_name="laptop")), 202)
    server = await wait_status(h, created["server"]["id"], "ACTIVE")
    assert server["key_name"] == "laptop"
    row = await h.cell1.fetchrow("SELECT * FROM instances WHERE uuid = $1", server["id"])
    assert meta_data(drive_content(row, []))["public_keys"] == {"laptop": PUBLIC}
