"""Attachments on the volume side, as compute drives them over the bus: reserve, connect,
complete, detach (begin, roll back, delete), what may not be reserved, twenty reserves of
one volume at once, a reserve racing a volume delete, the notifications, and the clean-up
of reserved attachments an API left behind."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest

from nova_async.common import errors
from nova_async.volume import attachments
from nova_async.volume.client import VolumeClient
from tests.integration.volume.attach_support import add_instance, add_volume, volume_service, volume_status
from tests.integration.volume.helpers import call, settled
from tests.waiting import until

CONNECTOR = {"host": "compute-1", "initiator": "iqn.test"}


@pytest.fixture
async def h(pool, tmp_path):
    async with volume_service(pool, tmp_path) as harness:
        yield harness


@pytest.fixture
def client(h):
    return VolumeClient(h.bus)


async def attachment_status(h, attachment_id: str) -> str | None:
    return await h.pool.fetchval("SELECT status FROM volume_attachments WHERE id = $1", attachment_id)


async def test_attach_then_detach(h, client):
    vid = await add_volume(h)
    iid = str(uuid.uuid4())
    with h.bus.listen() as notes:
        reserved = await client.reserve(vid, iid, "proj-a")
        aid = reserved.attachment_id
        assert reserved.volume.status == "reserved" and reserved.volume.id == vid
        assert await volume_status(h, vid) == "reserved" and await attachment_status(h, aid) == "reserved"

        connection = await client.connect(aid, CONNECTOR, mountpoint="/dev/vdb")
        assert connection.volume_id == vid and connection.disk_kind == "file" and connection.access_mode == "rw"
        assert os.path.getsize(connection.device_path) == 1024 ** 3
        assert await volume_status(h, vid) == "attaching"
        row = await h.pool.fetchrow("SELECT * FROM volume_attachments WHERE id = $1", aid)
        assert row["status"] == "attaching" and row["attached_host"] == "compute-1"
        assert row["mountpoint"] == "/dev/vdb" and row["connection_info"] == connection.as_cinder()

        await client.complete(aid)
        await client.complete(aid)   # repeated: fine
        assert await volume_status(h, vid) == "in-use" and await attachment_status(h, aid) == "attached"
        (record,) = await client.of_instance(iid)
        assert (record.attachment_id, record.volume_id, record.status, record.volume_status) == \
            (aid, vid, "attached", "in-use")
        assert record.connection_info["data"]["device_path"] == connection.device_path

        await client.begin_detach(aid)
        assert await volume_status(h, vid) == "detaching"
        await client.roll_detaching_back(aid)
        assert await volume_status(h, vid) == "in-use" and await attachment_status(h, aid) == "attached"
        await client.begin_detach(aid)
        await client.delete_attachment(aid)
        assert await volume_status(h, vid) == "available" and await attachment_status(h, aid) is None
        await client.delete_attachment(aid)   # idempotent
        assert await client.of_instance(iid) == []
        seen = []
        while not notes.empty():
            note = notes.get_nowait()
            if note.event_type.startswith("volume."):
                seen.append(note.event_type)
                assert note.data["volume_id"] == vid and note.data["instance_uuid"] == iid
    assert seen == ["volume.attach.start", "volume.attach.end", "volume.detach.start", "volume.detach.start",
                    "volume.detach.end"]


async def test_a_failed_attach_is_deleted_from_any_state(h, client):
    vid = await add_volume(h)
    for steps in ([], ["connect"]):
        info = await client.reserve(vid, str(uuid.uuid4()), "proj-a")
        if steps:
            await client.connect(info.attachment_id, CONNECTOR)
        await client.delete_attachment(info.attachment_id)
        assert await volume_status(h, vid) == "available"


async def test_what_cannot_be_reserved_or_moved(h, client):
    vid = await add_volume(h)
    with pytest.raises(errors.NotFound):
        await client.reserve(vid, str(uuid.uuid4()), "proj-b")          # another project's
    with pytest.raises(errors.NotFound):
        await client.reserve(str(uuid.uuid4()), str(uuid.uuid4()), "proj-a")
    with pytest.raises(errors.NotFound):
        await client.reserve("not-a-uuid", str(uuid.uuid4()), "proj-a")
    with pytest.raises(errors.InvalidInput):
        await client.reserve(vid, "not-a-uuid", "proj-a")
    for status in ("creating", "deleting", "extending", "in-use", "reserved", "error"):
        busy = await add_volume(h, status=status)
        with pytest.raises(errors.Conflict):
            await client.reserve(busy, str(uuid.uuid4()), "proj-a")
        assert await volume_status(h, busy) == status

    info = await client.reserve(vid, str(uuid.uuid4()), "proj-b", is_admin=True)   # an admin may
    aid = info.attachment_id
    with pytest.raises(errors.Conflict):
        await client.begin_detach(aid)        # not attached
    with pytest.raises(errors.Conflict):
        await client.reserve(vid, str(uuid.uuid4()), "proj-a")
    with pytest.raises(errors.InvalidInput):
        await client.connect(aid, {"initiator": "no host"})
    with pytest.raises(errors.NotFound):
        await client.connect(str(uuid.uuid4()), CONNECTOR)
    assert await volume_status(h, vid) == "reserved"
    # Completed without a connector, as Cinder allows (Nova's attach to a shelved offloaded
    # server): in-use, and connected later by whichever host runs the server.
    await client.complete(aid)
    assert await volume_status(h, vid) == "in-use"


async def test_the_database_refuses_a_second_attachment_whatever_the_status_says(h):
    # Were a volume's status wrong (an admin's reset-status), the unique index still holds
    # one attachment per volume, and that is a 409, not a 500.
    vid = await add_volume(h)
    api = h.roles["volume"].api
    await attachments.reserve(api, volume_id=vid, instance_uuid=str(uuid.uuid4()), project_id="proj-a",
                              is_admin=False, made_by="compute")
    await h.pool.execute("UPDATE volumes SET status = 'available' WHERE id = $1", vid)
    with pytest.raises(errors.Conflict):
        await attachments.reserve(api, volume_id=vid, instance_uuid=str(uuid.uuid4()), project_id="proj-a",
                                  is_admin=False, made_by="compute")
    assert await h.pool.fetchval("SELECT count(*) FROM volume_attachments WHERE volume_id = $1", vid) == 1


async def test_twenty_reserves_of_one_volume_one_wins(h, client):
    vid = await add_volume(h)
    results = await asyncio.gather(*(client.reserve(vid, str(uuid.uuid4()), "proj-a") for _ in range(20)),
                                   return_exceptions=True)
    won = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, errors.Conflict)]
    assert len(won) == 1 and len(refused) == 19, results
    assert await h.pool.fetchval("SELECT count(*) FROM volume_attachments WHERE volume_id = $1", vid) == 1
    assert await volume_status(h, vid) == "reserved"


async def test_a_reserve_racing_a_volume_delete_one_of_them_is_refused(h, client):
    # The delete as users send it (DELETE /volumes/{id}) against the reserve compute's API
    # sends, on ten volumes at once: for each, exactly one of the two goes through.
    vids = [await add_volume(h) for _ in range(10)]

    async def reserve(vid):
        try:
            await client.reserve(vid, str(uuid.uuid4()), "proj-a")
            return True
        except (errors.Conflict, errors.NotFound):   # NotFound: the delete had finished already
            return False

    async def delete(vid):
        status, body = await call(h, "DELETE", f"/volumes/{vid}", h.alice)
        assert status in (202, 400), body
        return status == 202

    outcomes = await asyncio.gather(*(asyncio.gather(reserve(v), delete(v)) for v in vids))
    await settled(h)
    for vid, (reserved, deleted) in zip(vids, outcomes):
        assert reserved != deleted, (vid, reserved, deleted)
        status = await volume_status(h, vid)
        assert status == ("reserved" if reserved else None), (vid, status)


async def test_the_delete_condition_never_races_a_reserve(h, client):
    # The condition every volume delete must hold (attachments.can_delete's docstring), as
    # one conditional UPDATE racing reserves.
    vids = [await add_volume(h) for _ in range(10)]

    async def delete(vid):
        return await h.pool.fetchval(
            "UPDATE volumes SET status = 'deleting' WHERE id = $1"
            " AND status = ANY('{available,error,error_deleting,error_extending}')"
            " AND NOT EXISTS (SELECT 1 FROM volume_attachments a WHERE a.volume_id = volumes.id) RETURNING id", vid)

    async def reserve(vid):
        try:
            return await client.reserve(vid, str(uuid.uuid4()), "proj-a")
        except errors.Conflict:
            return None

    outcomes = await asyncio.gather(*(asyncio.gather(reserve(v), delete(v)) for v in vids))
    for reserved, deleted in outcomes:
        assert (reserved is None) != (deleted is None)
    async with h.pool.acquire() as conn:
        assert [await attachments.can_delete(conn, v) for v in vids] == [r is None for r, _ in outcomes]


async def test_reserved_attachments_nothing_maps_are_cleaned_up(h, client):
    api, cells = h.roles["volume"].api, h.cells
    orphan_vol, mapped_vol, gone_vol, young_vol, by_hand_vol = [await add_volume(h) for _ in range(5)]
    orphan = await client.reserve(orphan_vol, await add_instance(h), "proj-a")       # no mapping
    instance = await add_instance(h)
    mapped = await client.reserve(mapped_vol, instance, "proj-a")
    await h.cells.default.pool.execute(
        "INSERT INTO block_device_mappings (id, instance_uuid, source_type, destination_type, volume_id,"
        " attachment_id) VALUES ($1, $2, 'volume', 'volume', $3, $4)",
        str(uuid.uuid4()), instance, mapped_vol, mapped.attachment_id)
    gone = await client.reserve(gone_vol, str(uuid.uuid4()), "proj-a")               # no such instance
    young = await client.reserve(young_vol, str(uuid.uuid4()), "proj-a")
    # a user's reservation through the volume API (Cinder's attachments, no connector yet)
    by_hand, _ = await attachments.reserve(api, volume_id=by_hand_vol, instance_uuid=str(uuid.uuid4()),
                                           project_id="proj-a", is_admin=False, made_by="volume-api")
    # Two minutes old, and the clean-up below counts one minute as stale: the role's own pass
    # (at its start, counting RESERVED_ORPHAN_AFTER) may run at any moment and must not get there first.
    assert attachments.RESERVED_ORPHAN_AFTER > 120
    await h.pool.execute("UPDATE volume_attachments SET updated_at = now() - interval '2 minutes'"
                         " WHERE id <> $1", young.attachment_id)

    removed = await attachments.clean_up_reserved(api, cells, older_than=60)
    assert sorted(removed) == sorted([orphan.attachment_id, gone.attachment_id])
    assert await volume_status(h, orphan_vol) == "available" and await volume_status(h, gone_vol) == "available"
    assert await volume_status(h, mapped_vol) == "reserved" and await volume_status(h, young_vol) == "reserved"
    assert await attachment_status(h, str(by_hand["id"])) == "reserved"   # its maker's to finish or delete
    assert await attachment_status(h, mapped.attachment_id) == "reserved"
    assert await attachments.clean_up_reserved(api, cells, older_than=60) == []


async def test_a_multiattach_volume_stays_in_use_until_its_last_attachment_goes(h, client):
    vid = await add_volume(h, multiattach=True)
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    a = await client.reserve(vid, first, "proj-a")
    await client.connect(a.attachment_id, CONNECTOR)
    await client.complete(a.attachment_id)
    b = await client.reserve(vid, second, "proj-a")
    assert await volume_status(h, vid) == "in-use"
    with pytest.raises(errors.Conflict):
        await client.reserve(vid, first, "proj-a")     # once per instance
    await client.connect(b.attachment_id, {"host": "compute-2"})
    await client.complete(b.attachment_id)
    await client.delete_attachment(a.attachment_id)
    assert await volume_status(h, vid) == "in-use"
    await client.delete_attachment(b.attachment_id)
    assert await volume_status(h, vid) == "available"


async def test_changes_of_one_attachment_at_once_end_in_a_409_or_404_never_an_error(h, client):
    # Every change locks the volume, then the attachment: no two wait for each other in a
    # circle (a deadlock would come back as a 500).
    vids = [await add_volume(h) for _ in range(8)]
    infos = [await client.reserve(v, str(uuid.uuid4()), "proj-a") for v in vids]
    calls = []
    for info in infos:
        aid = info.attachment_id
        calls += [client.connect(aid, CONNECTOR), client.complete(aid), client.begin_detach(aid),
                  client.delete_attachment(aid), client.reserve(info.volume.id, str(uuid.uuid4()), "proj-a"),
                  client.roll_detaching_back(aid), client.of_instance(str(uuid.uuid4()))]
    results = await asyncio.gather(*calls, return_exceptions=True)
    unexpected = [r for r in results if isinstance(r, BaseException)
                  and not isinstance(r, (errors.Conflict, errors.NotFound))]
    assert unexpected == []
    for vid in vids:
        left = await h.pool.fetch("SELECT status FROM volume_attachments WHERE volume_id = $1", vid)
        status = await volume_status(h, vid)
        # the volume's status agrees with what is left of its attachments
        expected = {(): "available", ("reserved",): "reserved", ("attaching",): "attaching",
                    ("attached",): "in-use", ("detaching",): "detaching"}[tuple(r["status"] for r in left)]
        assert status == expected, (vid, status, left)


async def test_the_role_cleans_up_at_start(pool, tmp_path):
    # An API stopped between a reserve and writing its mapping; the volume service restarts.
    async with volume_service(pool, tmp_path) as h:
        vid = await add_volume(h)
        info = await VolumeClient(h.bus).reserve(vid, str(uuid.uuid4()), "proj-a")
    await pool.execute("UPDATE volume_attachments SET updated_at = now() - interval '1 hour'")
    async with volume_service(pool, tmp_path) as h:
        await until(lambda: volume_status(h, vid), lambda s: s == "available", what="the orphan cleaned up")
        assert await attachment_status(h, info.attachment_id) is None
