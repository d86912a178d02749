"""The volumes of Cinder's v3 API as clients drive them: create, show, list with filters and
pages, the SDK's name look-up, update, extend, delete; projects kept apart; bad input a 4xx
in Cinder's fault format."""

from __future__ import annotations

import pytest

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.volume import volumes
from tests.harness import running
from tests.integration.volume.helpers import V3, call, make_volume, settled


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["volume"], tmp_path) as harness:
        yield harness


async def test_versions_and_microversions(h):
    resp = await h.http.get("/volume/")
    assert resp.status == 300
    (v3,) = (await resp.json())["versions"]
    assert v3["id"] == "v3.0" and v3["min_version"] == "3.0" and v3["version"] >= "3.44"
    for path in ("/volume/v3", "/volume/v3/", "/volume/v3/proj-a", "/volume/v3/proj-a/"):
        resp = await h.http.get(path)
        assert resp.status == 200, path
    resp = await h.http.get(f"{V3}/volumes", headers={**h.alice, "OpenStack-API-Version": "volume 3.44"})
    assert resp.status == 200 and resp.headers["OpenStack-API-Version"] == "volume 3.44"
    resp = await h.http.get(f"{V3}/volumes", headers={**h.alice, "OpenStack-API-Version": "volume 3.999"})
    assert resp.status == 406 and "maximum is" in (await resp.json())["computeFault"]["message"]
    resp = await h.http.get(f"{V3}/volumes", headers={**h.alice, "OpenStack-API-Version": "volume x"})
    assert resp.status == 400 and "badRequest" in await resp.json()


async def test_create_show_list_update_delete(h):
    status, body = await call(h, "POST", "/proj-a/volumes", h.alice,
                              {"volume": {"size": 1, "name": "data1", "description": "d", "metadata": {"k": "v"}}})
    assert status == 202 and body["volume"]["status"] == "creating"
    await settled(h)
    vid = body["volume"]["id"]
    status, body = await call(h, "GET", f"/proj-a/volumes/{vid}", h.alice)
    vol = body["volume"]
    assert vol["status"] == "available" and vol["size"] == 1 and vol["bootable"] == "false"
    assert vol["os-vol-tenant-attr:tenant_id"] == "proj-a" and vol["volume_type"] == "__DEFAULT__"
    assert vol["attachments"] == [] and vol["metadata"] == {"k": "v"} and vol["encrypted"] is False
    assert "os-vol-host-attr:host" not in vol
    status, body = await call(h, "GET", f"/volumes/{vid}", h.admin)
    assert "os-vol-host-attr:host" in body["volume"]

    status, body = await call(h, "PUT", f"/volumes/{vid}", h.alice, {"volume": {"name": "renamed"}})
    assert status == 200 and body["volume"]["name"] == "renamed" and body["volume"]["description"] == "d"
    status, body = await call(h, "GET", "/volumes", h.alice)
    assert [v["name"] for v in body["volumes"]] == ["renamed"]

    status, _ = await call(h, "DELETE", f"/volumes/{vid}", h.alice)
    assert status == 202
    await settled(h)

    status, body = await call(h, "GET", f"/volumes/{vid}", h.alice)
    assert status == 404 and "itemNotFound" in body


async def test_volume_body_fields_follow_the_microversion_and_the_call(h):
    """As Cinder: the owner and the image metadata only in show and the detailed list; fields
    of later microversions only when asked for; nothing past this API's maximum (Tempest's
    schemas refuse any field they do not know)."""
    status, body = await call(h, "POST", "/proj-a/volumes", h.alice, {"volume": {"size": 1}})
    created = body["volume"]
    late = {"cluster_name", "consumes_quota", "volume_type_id", "shared_targets", "service_uuid"}
    assert status == 202 and not late & set(created)
    assert "os-vol-tenant-attr:tenant_id" not in created and "group_id" not in created
    await settled(h)
    vid = created["id"]
    status, body = await call(h, "GET", f"/proj-a/volumes/{vid}", h.alice)
    assert body["volume"]["os-vol-tenant-attr:tenant_id"] == "proj-a" and not late & set(body["volume"])
    status, body = await call(h, "GET", "/proj-a/volumes/detail", h.alice)
    assert body["volumes"][0]["os-vol-tenant-attr:tenant_id"] == "proj-a"
    status, body = await call(h, "PUT", f"/proj-a/volumes/{vid}", h.alice, {"volume": {"name": "n"}})
    assert status == 200 and "os-vol-tenant-attr:tenant_id" not in body["volume"]
    resp = await h.http.get(f"{V3}/proj-a/volumes/{vid}", headers={**h.alice, "OpenStack-API-Version": "volume 3.44"})
    shown = (await resp.json())["volume"]
    assert shown["group_id"] is None and "provider_id" not in shown and not late & set(shown)
    resp = await h.http.get(f"{V3}/volumes/{vid}", headers={**h.admin, "OpenStack-API-Version": "volume 3.44"})
    assert "provider_id" in (await resp.json())["volume"]


async def test_snapshot_body_fields_follow_the_microversion_and_the_call(h):
    """As Cinder: the owner and progress only in show and the detailed list; group_snapshot_id
    from 3.14 and user_id from 3.41; consumes_quota (3.65) never."""
    vol = await make_volume(h, h.alice, size=1)
    status, body = await call(h, "POST", "/snapshots", h.alice, {"snapshot": {"volume_id": vol["id"]}})
    created = body["snapshot"]
    assert status == 202 and not {"user_id", "group_snapshot_id", "consumes_quota", "progress",
                                  "os-extended-snapshot-attributes:project_id"} & set(created)
    await settled(h)
    status, body = await call(h, "GET", f"/snapshots/{created['id']}", h.alice)
    assert body["snapshot"]["os-extended-snapshot-attributes:project_id"] == "proj-a"
    assert "user_id" not in body["snapshot"] and "consumes_quota" not in body["snapshot"]
    status, body = await call(h, "GET", "/snapshots", h.alice)
    assert "os-extended-snapshot-attributes:progress" not in body["snapshots"][0]
    resp = await h.http.get(f"{V3}/snapshots/detail", headers={**h.alice, "OpenStack-API-Version": "volume 3.44"})
    [shown] = (await resp.json())["snapshots"]
    assert shown["user_id"] and shown["group_snapshot_id"] is None and "consumes_quota" not in shown


async def test_name_lookup_filters_and_pages(h):
    made = [await make_volume(h, h.alice, name=f"v{i}", size=i + 1, metadata={"n": str(i % 2)}) for i in range(4)]
    # the SDK's find: GET by name is a 404, then a list filtered by name
    status, body = await call(h, "GET", "/volumes/v2", h.alice)
    assert status == 404
    status, body = await call(h, "GET", "/volumes?name=v2", h.alice)
    assert [v["id"] for v in body["volumes"]] == [made[2]["id"]]
    status, body = await call(h, "GET", '/volumes/detail?metadata={"n": "1"}', h.alice)
    assert sorted(v["name"] for v in body["volumes"]) == ["v1", "v3"]
    status, body = await call(h, "GET", "/volumes/detail?status=available&sort=size:asc", h.alice)
    assert [v["size"] for v in body["volumes"]] == [1, 2, 3, 4]
    status, body = await call(h, "GET", "/volumes?sort_key=name&sort_dir=desc&limit=2", h.alice)
    assert [v["name"] for v in body["volumes"]] == ["v3", "v2"] and body["volumes_links"]
    marker = body["volumes"][-1]["id"]
    status, body = await call(h, "GET", f"/volumes?sort_key=name&sort_dir=desc&limit=2&marker={marker}", h.alice)
    assert [v["name"] for v in body["volumes"]] == ["v1", "v0"]
    status, body = await call(h, "GET", "/volumes?sort=nonsense", h.alice)
    assert status == 400 and "badRequest" in body
    # A key volumes have and snapshots do not is a 400 for snapshots (it was a 500).
    for path in ("/snapshots?sort=bootable", "/snapshots/detail?sort_key=availability_zone"):
        status, body = await call(h, "GET", path, h.alice)
        assert status == 400 and "badRequest" in body, (path, body)
    status, body = await call(h, "GET", "/snapshots?sort=volume_id:asc", h.alice)
    assert status == 200, body


async def test_projects_are_kept_apart(h):
    vol = await make_volume(h, h.alice, name="alices")
    status, body = await call(h, "GET", "/volumes/detail", h.bob)
    assert body["volumes"] == []
    for method in ("GET", "DELETE"):
        status, body = await call(h, method, f"/volumes/{vol['id']}", h.bob)
        assert status == 404, method
    status, body = await call(h, "PUT", f"/volumes/{vol['id']}", h.bob, {"volume": {"name": "x"}})
    assert status == 404
    status, body = await call(h, "GET", "/proj-a/volumes", h.bob)  # another project in the path
    assert status == 400 and body["badRequest"]["message"] == "Malformed request url"
    status, body = await call(h, "GET", "/volumes/detail?all_tenants=1", h.bob)
    assert body["volumes"] == []
    status, body = await call(h, "GET", "/volumes/detail?all_tenants=1", h.admin)
    assert [v["id"] for v in body["volumes"]] == [vol["id"]]


async def test_extend_and_actions(h):
    vol = await make_volume(h, h.alice, size=1)
    status, _ = await call(h, "POST", f"/volumes/{vol['id']}/action", h.alice, {"os-extend": {"new_size": 3}})
    assert status == 202
    await settled(h)
    status, body = await call(h, "GET", f"/volumes/{vol['id']}", h.alice)
    assert body["volume"]["size"] == 3 and body["volume"]["status"] == "available"
    status, body = await call(h, "POST", f"/volumes/{vol['id']}/action", h.alice, {"os-extend": {"new_size": 2}})
    assert status == 400 and "badRequest" in body
    status, _ = await call(h, "POST", f"/volumes/{vol['id']}/action", h.alice, {"os-set_bootable": {"bootable": True}})
    assert status == 200
    status, body = await call(h, "GET", f"/volumes/{vol['id']}", h.alice)
    assert body["volume"]["bootable"] == "true"
    status, body = await call(h, "POST", f"/volumes/{vol['id']}/action", h.alice,
                              {"os-reset_status": {"status": "error"}})
    assert status == 403 and "forbidden" in body
    status, _ = await call(h, "POST", f"/volumes/{vol['id']}/action", h.admin, {"os-reset_status": {"status": "error"}})
    assert status == 202
    status, body = await call(h, "GET", f"/volumes/{vol['id']}", h.alice)
    assert body["volume"]["status"] == "error"
    status, body = await call(h, "POST", f"/volumes/{vol['id']}/action", h.alice, {"os-frobnicate": {}})
    assert status == 400 and "no such action" in body["badRequest"]["message"]


async def test_metadata_endpoints(h):
    vol = await make_volume(h, h.alice, metadata={"a": "1"})
    status, body = await call(h, "POST", f"/volumes/{vol['id']}/metadata", h.alice, {"metadata": {"b": "2"}})
    assert status == 200 and body["metadata"] == {"a": "1", "b": "2"}
    status, body = await call(h, "PUT", f"/volumes/{vol['id']}/metadata", h.alice, {"metadata": {"c": "3"}})
    assert body["metadata"] == {"c": "3"}
    status, _ = await call(h, "DELETE", f"/volumes/{vol['id']}/metadata/c", h.alice)
    assert status == 200
    status, body = await call(h, "GET", f"/volumes/{vol['id']}/metadata", h.alice)
    assert body["metadata"] == {}


@pytest.mark.parametrize("body", [
    None, [], {"volume": {}}, {"volume": {"size": 0}}, {"volume": {"size": -1}}, {"volume": {"size": "x"}},
    {"volume": {"size": 2**40}}, {"volume": {"size": 1, "volume_type": "gold"}},
    {"volume": {"size": 1, "snapshot_id": "nope"}}, {"volume": {"size": 1, "source_volid": "nope"}},
    {"volume": {"size": 1, "multiattach": True}}, {"volume": {"size": 1, "metadata": {"k": 1}}},
    {"volume": {"size": 1, "name": "x" * 300}}, {"volume": {"size": 1, "bogus": 1}},
    {"volume": {"size": 1, "availability_zone": "mars"}}, {"volume": {"size": 2000}},
])
async def test_bad_create_is_a_4xx_in_cinders_format(h, body):
    resp = await h.http.post(f"{V3}/volumes", json=body, headers=h.alice) if body is not None else \
        await h.http.post(f"{V3}/volumes", data=b"{not json", headers=h.alice)
    assert 400 <= resp.status < 500
    fault = await resp.json()
    (name,) = fault
    assert fault[name]["code"] == resp.status and fault[name]["message"]


async def test_types_and_limits(h):
    status, body = await call(h, "GET", "/types", h.alice)
    (vtype,) = body["volume_types"]
    assert vtype["name"] == "__DEFAULT__"
    status, body = await call(h, "GET", f"/types/{vtype['id']}", h.alice)
    assert status == 200 and body["volume_type"]["id"] == vtype["id"]
    await make_volume(h, h.alice, size=2)
    status, body = await call(h, "GET", "/limits", h.alice)
    absolute = body["limits"]["absolute"]
    assert absolute["maxTotalVolumes"] == 10 and absolute["totalVolumesUsed"] == 1
    assert absolute["totalGigabytesUsed"] == 2 and absolute["maxTotalVolumeGigabytes"] == 1000



async def test_a_volume_gone_between_a_deletes_look_and_its_lock_is_a_404(h, monkeypatch):
    """A delete that finds the volume, then meets it gone when it locks it (another delete's
    background work finished in between), is a 404, not a 500 (the fuzzer found it). The gap
    is made certain by removing the row right after the delete's first look."""
    api = h.roles["volume"].api
    created = await h.http.post("/volume/v3/volumes", headers=h.alice, json={"volume": {"size": 1}})
    vid = (await created.json())["volume"]["id"]
    await h.roles["volume"].work.idle()
    first_look = volumes.get

    async def look_then_vanish(api_, ctx, volume_id):
        row = await first_look(api_, ctx, volume_id)
        await api_.pool.execute("DELETE FROM volumes WHERE id = $1", row["id"])
        return row
    monkeypatch.setattr(volumes, "get", look_then_vanish)
    with pytest.raises(errors.NotFound):
        await volumes.delete(api, RequestContext(user_id="alice", project_id="proj-a"), vid, cascade=False)
