"""Cinder's attachments API (3.27+, os-complete 3.44) as a client that attaches volumes itself
drives it: create, update with a connector, complete, show, list, delete; a project sees the
attachments of its own volumes only; bad input is a 4xx in Cinder's fault format."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.volume.attach_support import add_volume, volume_service, volume_status
from tests.integration.volume.helpers import call

MV = {"OpenStack-API-Version": "volume 3.44"}
CONNECTOR = {"host": "compute-1", "initiator": "iqn.test", "mountpoint": "/dev/vdb"}


@pytest.fixture
async def h(pool, tmp_path):
    async with volume_service(pool, tmp_path) as harness:
        harness.alice.update(MV)
        harness.bob.update(MV)
        harness.admin.update(MV)
        yield harness


async def test_reserve_connect_complete_delete(h):
    vid, iid = await add_volume(h), str(uuid.uuid4())
    status, body = await call(h, "POST", "/proj-a/attachments", h.alice,
                              {"attachment": {"volume_uuid": vid, "instance_uuid": iid}})
    assert status == 200, body
    att = body["attachment"]
    assert (att["status"], att["instance"], att["volume_id"], att["attach_mode"]) == ("reserved", iid, vid, "rw")
    assert att["attached_at"] is None and att["detached_at"] is None and att["connection_info"] == {}
    assert await volume_status(h, vid) == "reserved"

    status, body = await call(h, "PUT", f"/attachments/{att['id']}", h.alice, {"attachment": {"connector": CONNECTOR}})
    assert status == 200, body
    info = body["attachment"]["connection_info"]
    assert body["attachment"]["status"] == "attaching" and info["driver_volume_type"] == "file"
    assert info["data"]["volume_id"] == vid and info["data"]["device_path"].endswith(vid)

    status, body = await call(h, "POST", f"/attachments/{att['id']}/action", h.alice, {"os-complete": None})
    assert status == 204, body
    status, body = await call(h, "GET", f"/attachments/{att['id']}", h.alice)
    assert body["attachment"]["status"] == "attached" and body["attachment"]["attached_at"]
    status, body = await call(h, "GET", f"/volumes/{vid}", h.alice)
    vol = body["volume"]
    assert vol["status"] == "in-use"
    assert [(a["attachment_id"], a["server_id"], a["device"]) for a in vol["attachments"]] == \
        [(att["id"], iid, "/dev/vdb")]

    status, body = await call(h, "GET", f"/attachments?volume_id={vid}", h.alice)
    assert body == {"attachments": [{"id": att["id"], "status": "attached", "instance": iid, "volume_id": vid}]}
    status, body = await call(h, "GET", f"/attachments/detail?instance_id={iid}", h.alice)
    assert [a["id"] for a in body["attachments"]] == [att["id"]] and "connection_info" in body["attachments"][0]

    status, body = await call(h, "DELETE", f"/attachments/{att['id']}", h.alice)
    assert status == 200 and body == {"attachments": []}
    assert await volume_status(h, vid) == "available"
    status, body = await call(h, "GET", f"/attachments/{att['id']}", h.alice)
    assert status == 404 and "itemNotFound" in body


async def test_create_with_a_connector_connects_at_once(h):
    vid, iid = await add_volume(h), str(uuid.uuid4())
    status, body = await call(h, "POST", "/attachments", h.alice,
                              {"attachment": {"volume_uuid": vid, "instance_uuid": iid, "connector": CONNECTOR}})
    assert status == 200 and body["attachment"]["status"] == "attaching", body
    assert body["attachment"]["connection_info"]["data"]["device_path"]
    assert await volume_status(h, vid) == "attaching"
    # the volume is taken: a second attachment is a 409
    status, body = await call(h, "POST", "/attachments", h.alice,
                              {"attachment": {"volume_uuid": vid, "instance_uuid": str(uuid.uuid4())}})
    assert status == 409 and "conflictingRequest" in body


async def test_projects_see_their_own_volumes_attachments_only(h):
    vid, iid = await add_volume(h, project_id="proj-a"), str(uuid.uuid4())
    status, body = await call(h, "POST", "/attachments", h.bob, {"attachment": {"volume_uuid": vid, "instance_uuid": iid}})
    assert status == 404 and "itemNotFound" in body
    status, body = await call(h, "POST", "/attachments", h.alice, {"attachment": {"volume_uuid": vid, "instance_uuid": iid}})
    aid = body["attachment"]["id"]

    for method, path, payload in (("GET", f"/attachments/{aid}", None),
                                  ("PUT", f"/attachments/{aid}", {"attachment": {"connector": CONNECTOR}}),
                                  ("POST", f"/attachments/{aid}/action", {"os-complete": None}),
                                  ("DELETE", f"/attachments/{aid}", None)):
        status, body = await call(h, method, path, h.bob, payload)
        assert status == 404 and "itemNotFound" in body, (method, path, body)
    for path in ("/attachments", "/attachments/detail", f"/attachments?volume_id={vid}",
                 "/attachments?all_tenants=1"):
        status, body = await call(h, "GET", path, h.bob)
        assert status == 200 and body == {"attachments": []}, path
    status, body = await call(h, "GET", "/proj-a/attachments", h.bob)
    assert status == 400   # another project in the path
    assert await volume_status(h, vid) == "reserved"

    status, body = await call(h, "GET", f"/attachments/{aid}", h.admin)
    assert status == 200
    status, body = await call(h, "GET", "/attachments?all_tenants=1", h.admin)
    assert [a["id"] for a in body["attachments"]] == [aid]


async def test_bad_input_is_a_4xx(h):
    vid = await add_volume(h)
    iid = str(uuid.uuid4())
    status, body = await call(h, "POST", "/attachments", h.alice, {"attachment": {"volume_uuid": vid, "instance_uuid": iid}})
    aid = body["attachment"]["id"]
    cases = [
        ("POST", "/attachments", None, 400),
        ("POST", "/attachments", [], 400),
        ("POST", "/attachments", {"attachment": None}, 400),
        ("POST", "/attachments", {"attachment": {"volume_uuid": vid}}, 400),
        ("POST", "/attachments", {"attachment": {"instance_uuid": iid}}, 400),
        ("POST", "/attachments", {"attachment": {"volume_uuid": "x", "instance_uuid": iid}}, 400),
        ("POST", "/attachments", {"attachment": {"volume_uuid": vid, "instance_uuid": 7}}, 400),
        ("POST", "/attachments", {"attachment": {"volume_uuid": vid, "instance_uuid": iid, "connector": "h"}}, 400),
        ("POST", "/attachments", {"attachment": {"volume_uuid": vid, "instance_uuid": iid, "connector": {}}}, 400),
        ("POST", "/attachments", {"attachment": {"volume_uuid": vid, "instance_uuid": iid, "mode": "rx"}}, 400),
        ("POST", "/attachments", {"attachment": {"volume_uuid": vid, "instance_uuid": iid, "extra": 1}}, 400),
        ("POST", "/attachments", {"attachment": {"volume_uuid": str(uuid.uuid4()), "instance_uuid": iid}}, 404),
        ("POST", "/attachments", {"attachment": {"volume_uuid": vid, "instance_uuid": iid}}, 409),
        ("PUT", f"/attachments/{aid}", {"attachment": {}}, 400),
        ("PUT", f"/attachments/{aid}", {"attachment": {"connector": {"host": ""}}}, 400),
        ("PUT", f"/attachments/{aid}", {"attachment": {"connector": {"host": 5}}}, 400),
        ("PUT", f"/attachments/{uuid.uuid4()}", {"attachment": {"connector": CONNECTOR}}, 404),
        ("PUT", "/attachments/not-a-uuid", {"attachment": {"connector": CONNECTOR}}, 404),
        ("POST", f"/attachments/{aid}/action", {"os-reboot": None}, 400),
        ("POST", f"/attachments/{aid}/action", {}, 400),
        ("POST", f"/attachments/{aid}/action", "os-complete", 400),
        ("POST", f"/attachments/{aid}/action", {"os-complete": None, "os-x": None}, 400),
        ("GET", "/attachments/not-a-uuid", None, 404),
        ("GET", f"/attachments/{uuid.uuid4()}", None, 404),
        ("DELETE", f"/attachments/{uuid.uuid4()}", None, 404),
        ("DELETE", "/attachments/%00", None, 400),
        ("GET", "/attachments?limit=-1", None, 400),
        ("GET", "/attachments?marker=nope", None, 404),
        ("GET", "/attachments?volume_id=not-a-uuid", None, 200),
        ("GET", "/attachments?sort=name", None, 400),
        ("GET", "/attachments?sort=size:asc", None, 400),
        ("GET", "/attachments?sort=status:asc", None, 200),
        ("GET", "/attachments?sort=status:sideways", None, 400),
        ("GET", "/attachments?status=%00", None, 400),
        ("GET", "/attachments?instance_id=%C3%28", None, 200),
        ("GET", "/attachments?sort_key=bootable", None, 400),
    ]
    for method, path, payload, expected in cases:
        status, body = await call(h, method, path, h.alice, payload)
        assert status == expected, (method, path, payload, status, body)
        if status >= 400:
            (fault,) = body.values()
            assert fault["code"] == status, body
    resp = await h.http.post("/volume/v3/attachments", data=b"{not json", headers={**h.alice,
                                                                                    "Content-Type": "application/json"})
    assert resp.status == 400
    assert await volume_status(h, vid) == "reserved"


async def test_older_microversions_have_no_attachments(h):
    vid = await add_volume(h)
    old = {"X-Auth-Token": "alice:proj-a", "OpenStack-API-Version": "volume 3.26"}
    status, body = await call(h, "POST", "/attachments", old,
                              {"attachment": {"volume_uuid": vid, "instance_uuid": str(uuid.uuid4())}})
    assert status == 404 and "itemNotFound" in body
    status, body = await call(h, "GET", "/attachments", {"X-Auth-Token": "alice:proj-a"})
    assert status == 404
    at_27 = {**old, "OpenStack-API-Version": "volume 3.27"}
    status, body = await call(h, "POST", "/attachments", at_27,
                              {"attachment": {"volume_uuid": vid, "instance_uuid": str(uuid.uuid4()),
                                              "connector": CONNECTOR}})
    assert status == 200
    aid = body["attachment"]["id"]
    status, body = await call(h, "POST", f"/attachments/{aid}/action", at_27, {"os-complete": None})
    assert status == 404    # os-complete is 3.44
    assert await volume_status(h, vid) == "attaching"
