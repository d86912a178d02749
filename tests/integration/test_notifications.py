"""Nova's versioned notifications as a process's listeners, subscribers and file get them:
a server booted, stopped, started and deleted through the API (two simulated hosts), a
subscriber that fails beside one that works, and the switch that turns them off. (A build
that fails: tests/integration/compute/test_compute.py.)"""

from __future__ import annotations

import asyncio
import json

from nova_async.notifications.feed import Feed
from tests.integration.compute.support import new_volume, volume_status
from tests.integration.compute.test_volume_attach import attach, attachments_url
from tests.integration.test_server_actions import START, STOP, boot, drive
from tests.integration.test_server_lifecycle import MV, V, ok, sim_cloud, wait_status
from tests.integration.test_server_lifecycle import ROLES as CLOUD_ROLES

ACTION = ("InstanceActionPayload", "1.9")


async def heard_until(notes: asyncio.Queue, server_id: str, event_type: str) -> list:
    """Every notification about `server_id` up to and including the first `event_type`."""
    seen = []
    async with asyncio.timeout(30):
        while True:
            note = await notes.get()
            if note.data.get("uuid") == server_id:
                seen.append(note)
                if note.event_type == event_type:
                    return seen


def kind(note) -> tuple[str, str]:
    return note.payload["nova_object.name"], note.payload["nova_object.version"]


async def test_a_servers_life_in_notifications(pool, tmp_path):
    async with sim_cloud(pool, tmp_path) as h:
        with h.bus.listen() as notes:
            server_id, host = await boot(h)
            built = await heard_until(notes, server_id, "instance.create.end")
            await drive(h, server_id, STOP, "SHUTOFF")
            stopped = await heard_until(notes, server_id, "instance.power_off.end")
            await drive(h, server_id, START, "ACTIVE")
            started = await heard_until(notes, server_id, "instance.power_on.end")
            await ok(await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice), 204)
            deleted = await heard_until(notes, server_id, "instance.delete.end")

    types = [n.event_type for n in built]
    assert types.index("instance.create.start") < types.index("instance.create.end")
    assert "instance.update" in types
    end = built[-1]
    assert kind(end) == ("InstanceCreatePayload", "1.13")
    assert (end.priority, end.publisher_id) == ("INFO", f"nova-compute:{host}")
    assert end.data["state"] == "active" and end.data["power_state"] == "running"
    assert end.data["flavor"]["nova_object.data"]["flavorid"] == h.flavor
    assert end.data["block_devices"] == [] and end.data["fault"] is None
    assert end.data["request_id"].startswith("req-") and end.data["availability_zone"] == "nova"

    # The stop: instance.update tells each state change as it is seen (the task state the API
    # set, then the end state), around the action's start and end.
    assert [n.event_type for n in stopped if n.event_type.startswith("instance.power_off")] == [
        "instance.power_off.start", "instance.power_off.end"]
    assert all(kind(n) == ACTION for n in stopped if n.event_type.startswith("instance.power_off"))
    changes = [n.data["state_update"]["nova_object.data"] for n in stopped if n.event_type == "instance.update"]
    assert {"old_state": "active", "state": "active", "old_task_state": None,
            "new_task_state": "powering-off"} in changes
    assert {"old_state": "active", "state": "stopped", "old_task_state": "powering-off",
            "new_task_state": None} in changes
    assert stopped[-1].data["state"] == "stopped" and stopped[-1].data["power_state"] == "shutdown"
    assert started[-1].data["state"] == "active" and started[-1].data["power_state"] == "running"

    assert [n.event_type for n in deleted if n.event_type.startswith(("instance.delete", "instance.shutdown"))] == [
        "instance.delete.start", "instance.shutdown.start", "instance.shutdown.end", "instance.delete.end"]
    assert deleted[-1].data["deleted_at"] is not None and deleted[-1].data["state"] == "deleted"


async def test_subscribers_and_the_file_get_every_notification(pool, tmp_path):
    path = tmp_path / "notes" / "all.jsonl"
    async with sim_cloud(pool, tmp_path) as h:
        feed = Feed(h.bus, file=path)
        got: list[str] = []
        ended = asyncio.Event()

        async def broken(note) -> None:
            raise RuntimeError("a subscriber's bug")

        async def creates(note) -> None:
            got.append(note.event_type)
            if note.event_type == "instance.create.end":
                ended.set()

        feed.subscribe(broken)
        feed.subscribe(creates, "instance.create.")
        stop = asyncio.Event()
        feeding = asyncio.create_task(feed.run(stop), name="test:feed")
        try:
            await asyncio.sleep(0)  # the feed listens before the boot
            server_id, _ = await boot(h)
            async with asyncio.timeout(30):
                await ended.wait()
        finally:
            stop.set()
            await feeding
    assert got == ["instance.create.start", "instance.create.end"]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert {"message_id", "publisher_id", "event_type", "priority", "payload", "timestamp"} == set(lines[0])
    ours = [n["event_type"] for n in lines if n["payload"]["nova_object.data"].get("uuid") == server_id]
    assert ours[-1] == "instance.create.end" and "instance.create.start" in ours


async def test_turned_off_nothing_is_sent(pool, tmp_path):
    async with sim_cloud(pool, tmp_path, notifications={"enabled": False}) as h:
        with h.bus.listen() as notes:
            server_id, _ = await boot(h)
            await ok(await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice), 204)
            await wait_status(h, server_id, "GONE")
            assert notes.empty()


async def test_volume_attach_and_detach_in_notifications(pool, tmp_path):
    async with sim_cloud(pool, tmp_path, CLOUD_ROLES + ["volume"]) as h:
        server_id, _ = await boot(h)
        volume_id = await new_volume(h, name="data")
        with h.bus.listen() as notes, h.bus.listen() as everything:
            await ok(await attach(h, server_id, volume_id), 200)
            attached = await heard_until(notes, server_id, "instance.volume_attach.end")
            await volume_status(h, volume_id, "in-use")
            resp = await h.http.delete(attachments_url(server_id, volume_id), headers={**h.alice, **MV})
            assert resp.status == 202, await resp.text()
            detached = await heard_until(notes, server_id, "instance.volume_detach.end")
            await volume_status(h, volume_id, "available")
            heard = [everything.get_nowait() for _ in range(everything.qsize())]
    volume_notes = [n for n in heard if n.event_type.startswith("volume.")]
    assert {"volume.attach.end", "volume.detach.end"} <= {n.event_type for n in volume_notes}
    end = attached[-1]
    assert kind(end) == ("InstanceActionVolumePayload", "1.7") and end.data["volume_id"] == volume_id
    assert [b["nova_object.data"]["volume_id"] for b in end.data["block_devices"]] == [volume_id]
    assert kind(detached[-1]) == ("InstanceActionVolumePayload", "1.7")
    assert detached[-1].data["volume_id"] == volume_id
    for note in volume_notes:   # the volume service's own: our VolumePayload, from cinder-volume:<host>
        assert note.payload["nova_object.name"] == "VolumePayload" and note.data["volume_id"] == volume_id
        assert note.publisher_id.startswith("cinder-volume:")
