"""GET /compute/v2.1/events, read as a client reads it (aiohttp streaming, the harness's real
HTTP stack): a server's life arrives in order with ids, a reconnect with Last-Event-ID gets
exactly what it missed, since=oldest replays, projects stay apart as in GET /servers, bad
cursors are 400s, a cursor older than the backlog is a reset, and 1,000 servers changing at
once reach two streams each change exactly once, in each server's order."""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
import uuid

import pytest

from nova_async.api.event_views import parse_cursor
from tests.harness import running
from tests.waiting import until
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok

cloud = test_server_lifecycle.cloud
WAIT = 60.0   # how long a test waits for an event before it fails (not a measurement)


class Sse:
    """One open stream: `next()` is its next event as (id, type, data), keepalives skipped."""

    def __init__(self, resp) -> None:
        self.resp = resp
        self.seen: list[tuple[str, str, dict]] = []
        self.last_id: str | None = None     # as EventSource keeps it
        self.keepalives = 0

    async def next(self, timeout: float = WAIT) -> tuple[str, str, dict]:
        fields: dict[str, str] = {}
        async with asyncio.timeout(timeout):
            while True:
                line = (await self.resp.content.readline()).decode()
                if line == "":
                    raise EOFError("the stream ended")
                line = line.rstrip("\n")
                if line == "":
                    if "id" in fields:
                        self.last_id = fields["id"]
                    if "event" in fields:
                        # An event without an id (a notification) keeps the last one, as in EventSource.
                        got = (fields.get("id", self.last_id), fields["event"], json.loads(fields["data"]))
                        self.seen.append(got)
                        return got
                    fields = {}
                    continue
                if line.startswith(":"):
                    self.keepalives += 1
                    continue
                name, _, value = line.partition(": ")
                fields[name] = value

    async def until(self, match, timeout: float = WAIT) -> tuple[str, str, dict]:
        while True:
            got = await self.next(timeout)
            if match(*got):
                return got

    async def close(self) -> None:
        self.resp.close()


async def open_stream(h, headers, query: str = "", last_id: str | None = None) -> Sse:
    extra = {"Last-Event-ID": last_id} if last_id else {}
    resp = await h.http.get(f"{V}/events{query}", headers={**headers, **extra})
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    return Sse(resp)


def positions(cursor: str) -> tuple[int, ...]:
    return tuple(v for _, v in sorted(parse_cursor(cursor).items()))


def server_is(sid: str, status: str):
    return lambda _id, kind, data: kind == "server" and data["id"] == sid and data.get("status") == status


async def test_a_servers_life_arrives_in_order_and_a_reconnect_gets_exactly_what_it_missed(cloud):
    h = cloud
    watch = await open_stream(h, h.alice)
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    sid = created["server"]["id"]
    await watch.until(server_is(sid, "ACTIVE"))
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers=h.alice, json={"os-stop": None}), 202)
    await watch.until(server_is(sid, "SHUTOFF"))
    await ok(await h.http.delete(f"{V}/servers/{sid}", headers=h.alice), 204)
    await watch.until(lambda _i, kind, data: kind == "server" and data.get("deleted"))
    seen = watch.seen
    await watch.close()

    kinds = {kind for _, kind, _ in seen}
    assert kinds == {"server", "action"}
    assert all(data.get("id", data.get("server_id")) == sid for _, _, data in seen)
    # ids move forward, never back; statuses in the order they happened
    assert [positions(i) for i, _, _ in seen] == sorted(positions(i) for i, _, _ in seen)
    assert len({i for i, _, _ in seen}) == len(seen)
    statuses = [d["status"] for _, k, d in seen if k == "server" and not d["deleted"]]
    order = [s for i, s in enumerate(statuses) if i == 0 or statuses[i - 1] != s]
    assert order.index("BUILD") < order.index("ACTIVE") < order.index("SHUTOFF")
    first_server = next(d for _, k, d in seen if k == "server")
    assert first_server["name"] == "vm1" and first_server["tenant_id"] == "proj-a"
    assert "OS-EXT-SRV-ATTR:host" not in first_server
    actions = [d for _, k, d in seen if k == "action"]
    assert {"create", "stop"} <= {a["action"] for a in actions}
    assert {"request_id", "start_time", "finish_time", "message", "event", "result"} <= set(actions[0])
    # the build's network, disks and spawn, recorded together once they have ended, arrive
    # as one change of the action, between the build's start and end: with the last to start
    latest = [a["event"] for a in actions if a["action"] == "create"]
    build = latest.index("compute_build_and_run_instance")
    assert latest[build:build + 3] == ["compute_build_and_run_instance", "compute_spawn",
                                       "compute_build_and_run_instance"]
    assert seen[-1][2] == {"id": sid, "tenant_id": "proj-a", "deleted": True}

    # Reconnecting with an id replays exactly what came after it, by header or by since=.
    middle = len(seen) // 2
    again = await open_stream(h, h.alice, last_id=seen[middle][0])
    for expected in seen[middle + 1:]:
        assert await again.next() == expected
    await again.close()
    again = await open_stream(h, h.alice, f"?since={seen[middle][0]}")
    assert await again.next() == seen[middle + 1]
    await again.close()
    # ... and since=oldest everything still kept.
    oldest = await open_stream(h, h.alice, "?since=oldest")
    for expected in seen:
        assert await oldest.next() == expected
    await oldest.close()


async def test_projects_see_only_their_own_as_get_servers_shows(cloud):
    h = cloud
    alice, bob = await open_stream(h, h.alice), await open_stream(h, h.bob)
    admin_all = await open_stream(h, h.admin, "?all_tenants=1")
    admin_own = await open_stream(h, h.admin)
    sid = (await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202))["server"]["id"]
    _, _, for_admin = await admin_all.until(server_is(sid, "ACTIVE"))
    _, _, for_alice = await alice.until(server_is(sid, "ACTIVE"))
    assert for_admin["OS-EXT-SRV-ATTR:host"] and "OS-EXT-SRV-ATTR:host" not in for_alice
    assert {k: v for k, v in for_admin.items() if k != "OS-EXT-SRV-ATTR:host"} == for_alice
    assert for_alice["addresses"]["net1"][0]["addr"].startswith("10.0.0.")
    # Bob's own server is what he sees, and only it; the admin without all_tenants sees its own.
    [bobs] = await insert_servers(h.cell1, 1, "proj-b")
    await admin_all.until(lambda _i, kind, d: kind == "server" and d["id"] == bobs)
    _, _, for_bob = await bob.next()
    assert for_bob["id"] == bobs and for_bob["tenant_id"] == "proj-b"
    for stream in (alice, bob, admin_all, admin_own):
        await stream.close()
    assert not [e for e in admin_own.seen if e[2].get("tenant_id") in ("proj-a", "proj-b")]
    assert not [e for e in alice.seen if bobs in json.dumps(e[2])]
    # Only admins may ask for every project, as GET /servers; a fault's details likewise.
    for path in (f"{V}/events?all_tenants=1", f"{V}/servers?all_tenants=1"):
        resp = await h.http.get(path, headers=h.bob)
        assert resp.status == 403 and "forbidden" in await resp.json()
    # ?server= narrows to one server
    one = await open_stream(h, h.alice, f"?since=oldest&server={sid}")
    got = [await one.next() for _ in range(3)]
    assert all(d.get("id", d.get("server_id")) == sid for _, _, d in got)
    await one.close()


async def test_a_fault_shows_its_details_to_admins_only(cloud):
    h = cloud
    big = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "huge", "ram": 8192, "vcpus": 1, "disk": 1}}), 200)
    alice, admin = await open_stream(h, h.alice), await open_stream(h, h.admin, "?all_tenants=1")
    sid = (await ok(await h.http.post(V + "/servers", headers=h.alice,
                                      json=boot_body(h, flavorRef=big["flavor"]["id"])), 202))["server"]["id"]
    _, _, fault = await alice.until(lambda _i, kind, d: kind == "fault")
    _, _, admin_fault = await admin.until(lambda _i, kind, d: kind == "fault")
    assert fault["server_id"] == sid and "No valid host" in fault["message"]
    assert fault["code"] == 500 and "details" not in fault and "details" in admin_fault
    # The server moved to cell0 on the way: clients see it in ERROR, never deleted.
    await alice.until(server_is(sid, "ERROR"))
    await alice.close()
    await admin.close()
    assert not [d for _, k, d in alice.seen if k == "server" and d["deleted"]]
    # Deleted now, in cell0; replayed, its events from both cells come in the order they
    # happened (BUILD to ERROR in cell1, the delete in cell0), whatever order the cells sort in.
    await ok(await h.http.delete(f"{V}/servers/{sid}", headers=h.alice), 204)
    watch = await open_stream(h, h.alice, f"?since=oldest&server={sid}")
    got = [await watch.next()]
    while not got[-1][2].get("deleted"):
        got.append(await watch.next())
    await watch.close()
    statuses = [d["status"] for _, k, d in got if k == "server" and not d["deleted"]]
    assert statuses[0] == "BUILD" and statuses[-1] == "ERROR"
    assert "fault" in [k for _, k, _ in got[1:-1]]


@pytest.mark.parametrize("cursor", ["x", "v1", "v1.", "v2.00000000-1", "v1.0000000-1", "v1.00000000-01",
                                    "v1.00000000-1.00000000-2", "v1.00000000--1", "v1.ABCDEF00-1",
                                    "v1.00000000-1" + ".00000000-1" * 400])
async def test_a_malformed_cursor_is_a_400_in_the_compute_fault_format(pool, tmp_path, cursor):
    async with running(pool, ["api"], tmp_path) as h:
        for how in ({"headers": {**h.alice, "Last-Event-ID": cursor}},
                    {"headers": h.alice, "params": {"since": cursor}}):
            resp = await h.http.get(f"{V}/events", **how)
            assert resp.status == 400, await resp.text()
            assert "cursor" in (await resp.json())["badRequest"]["message"]
        resp = await h.http.get(f"{V}/events?server=nope", headers=h.alice)
        assert resp.status == 400 and "badRequest" in await resp.json()
        resp = await h.http.get(f"{V}/events?bogus=1", headers=h.alice)
        assert resp.status == 400


async def insert_servers(cell, count: int, project: str = "proj-a") -> list[str]:
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    await cell.execute(
        "INSERT INTO instances (uuid, display_name, project_id, user_id, reservation_id, flavor, request_spec,"
        " vm_state, task_state) SELECT u, 'bulk', $2, 'alice', 'r-bulk', '{\"name\": \"m1.small\"}',"
        " '{}', 'active', NULL FROM unnest($1::uuid[]) AS u", uuids, project)
    return uuids


async def test_a_cursor_older_than_the_backlog_is_a_reset_then_live(pool, tmp_path):
    async with running(pool, ["api"], tmp_path, api={"event_backlog": 5}) as h:
        watch = await open_stream(h, h.alice)
        [sid] = await insert_servers(h.cell1, 1)
        first, _, _ = await watch.next()
        for state in ("a", "b", "c", "d", "e", "f", "g"):
            await h.cell1.execute("UPDATE instances SET task_state = $2 WHERE uuid = $1", sid, state)
        last, _, data = await watch.until(lambda _i, _k, d: d.get("OS-EXT-STS:task_state") == "g")
        # The sequencer's safety pass keeps the newest 5 (one runs every few seconds).
        await until(lambda: h.cell1.fetchval("SELECT count(*) FROM server_events"), lambda n: n <= 5,
                    what="the backlog pruned to 5 events")
        again = await open_stream(h, h.alice, last_id=first)
        reset_id, kind, data = await again.next()
        assert kind == "reset" and "no longer kept" in data["reason"]
        assert positions(reset_id) >= positions(last)
        await h.cell1.execute("UPDATE instances SET task_state = 'h' WHERE uuid = $1", sid)
        _, kind, data = await again.next()
        assert kind == "server" and data["OS-EXT-STS:task_state"] == "h"
        # A cursor naming a cell this database does not have, or a position it never gave, is
        # another database's: a reset.
        other = await open_stream(h, h.alice, last_id="v1.0badce11-3")
        assert (await other.next())[1] == "reset"
        ahead = await open_stream(h, h.alice, last_id=last.rsplit("-", 1)[0] + "-999999")
        assert (await ahead.next())[1] == "reset"
        for stream in (watch, again, other, ahead):
            await stream.close()


async def test_a_thousand_servers_changing_at_once_reach_two_streams_exactly_once_in_order(pool, tmp_path):
    rounds, count, writers = 6, 1000, 4
    async with running(pool, ["api"], tmp_path) as h:
        uuids = await insert_servers(h.cell1, count)
        admin = await open_stream(h, h.admin, "?all_tenants=1")
        alice = await open_stream(h, h.alice)
        committed: dict[tuple[str, str], float] = {}

        async def writer(part: list[str]) -> None:
            # Each round is one transaction per writer; writers overlap, so commits interleave
            # with ids taken in another order.
            for r in range(rounds):
                async with h.cell1.acquire() as conn, conn.transaction():
                    await conn.execute("UPDATE instances SET task_state = $2 WHERE uuid = ANY($1::uuid[])",
                                       part, f"round-{r}")
                at = time.monotonic()
                for u in part:
                    committed[(u, f"round-{r}")] = at

        async def collect(stream: Sse) -> dict[str, list[tuple[str, float]]]:
            got: dict[str, list[tuple[str, float]]] = {}
            arrived = 0
            while arrived < rounds * count:
                _, kind, data = await stream.next()
                if kind == "server" and (data.get("OS-EXT-STS:task_state") or "").startswith("round-"):
                    got.setdefault(data["id"], []).append((data["OS-EXT-STS:task_state"], time.monotonic()))
                    arrived += 1
            return got

        readers = [asyncio.create_task(collect(s)) for s in (admin, alice)]
        step = count // writers
        await asyncio.gather(*(writer(uuids[i * step:(i + 1) * step]) for i in range(writers)))
        results = await asyncio.gather(*readers)
        for stream in (admin, alice):
            await stream.close()
        for name, got in zip(("admin", "alice"), results):
            assert set(got) == set(uuids)
            assert all([s for s, _ in got[u]] == [f"round-{r}" for r in range(rounds)] for u in uuids)
            latency = sorted(at - committed[(u, s)] for u in uuids for s, at in got[u])
            print(f"\n{name}: {len(latency)} changes, commit→event latency p50 "
                  f"{statistics.median(latency) * 1000:.1f} ms, p95 {latency[int(len(latency) * .95)] * 1000:.1f} ms")


async def test_a_stream_that_falls_behind_reads_back_what_it_missed_without_a_reset(pool, tmp_path):
    # A buffer of 5 events: one transaction of 50 changes overflows it at once.
    async with running(pool, ["api"], tmp_path, api={"event_buffer": 5}) as h:
        uuids = await insert_servers(h.cell1, 50)
        watch = await open_stream(h, h.alice)
        await h.cell1.execute("UPDATE instances SET task_state = 'burst' WHERE uuid = ANY($1::uuid[])", uuids)
        got = [await watch.until(lambda _i, _k, d: d.get("OS-EXT-STS:task_state") == "burst") for _ in uuids]
        assert {d["id"] for _, _, d in got} == set(uuids)
        assert "reset" not in {k for _, k, _ in watch.seen}
        assert [positions(i) for i, _, _ in got] == sorted({positions(i) for i, _, _ in got})
        await watch.close()


def parse_frames(text: str) -> list[tuple[str, str, dict]]:
    out = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":"))
        if "event" in fields:
            out.append((fields["id"], fields["event"], json.loads(fields["data"])))
    return out


async def test_two_api_processes_sequence_the_same_cell_and_both_streams_get_everything_once(pool, tmp_path):
    """A second API process is a second EventHub on the same databases: both take turns at
    numbering (an advisory lock), both follow, and each stream sees every change once."""
    from nova_async.api.event_stream import EventHub
    from nova_async.api.event_views import Audience

    rounds, count = 4, 300
    async with running(pool, ["api"], tmp_path) as h:
        stopping = asyncio.Event()
        other = EventHub(h.cells, h.deps.settings.api)
        following = asyncio.create_task(other.run(stopping), name="test:second-api-process")
        await other.started.wait()
        uuids = await insert_servers(h.cell1, count)
        here = await open_stream(h, h.admin, "?all_tenants=1")
        there = await other.open(Audience(project_id=None, server_id=None, is_admin=True), None)

        async def read_there() -> list[tuple[str, str, dict]]:
            got: list[tuple[str, str, dict]] = []
            async for text in there.frames():
                got += [e for e in parse_frames(text) if (e[2].get("OS-EXT-STS:task_state") or "").startswith("r")]
                if len(got) >= rounds * count:
                    return got
            return got

        async def read_here() -> list[tuple[str, str, dict]]:
            return [await here.until(lambda _i, _k, d: (d.get("OS-EXT-STS:task_state") or "").startswith("r"))
                    for _ in range(rounds * count)]

        readers = [asyncio.create_task(read_here()), asyncio.create_task(read_there())]

        async def writer(part: list[str]) -> None:
            for r in range(rounds):
                await h.cell1.execute("UPDATE instances SET task_state = $2 WHERE uuid = ANY($1::uuid[])", part, f"r{r}")

        await asyncio.gather(*(writer(uuids[i::3]) for i in range(3)))
        results = await asyncio.gather(*readers)
        there.close()
        await here.close()
        stopping.set()
        await following
        for got in results:
            per_server: dict[str, list[str]] = {}
            for _, _, d in got:
                per_server.setdefault(d["id"], []).append(d["OS-EXT-STS:task_state"])
            assert per_server == {u: [f"r{r}" for r in range(rounds)] for u in uuids}
        # both saw the same events at the same positions
        assert [i for i, _, _ in results[0]] == [i for i, _, _ in results[1]]


async def test_a_change_whose_notification_was_lost_arrives_with_the_next_safety_pass(pool, tmp_path):
    async with running(pool, ["api"], tmp_path) as h:
        watch = await open_stream(h, h.alice)
        sid = str(uuid.uuid4())
        # A row as a trigger writes it, but no NOTIFY: as if the listening connection missed it.
        await h.cell1.execute("WITH b AS (INSERT INTO server_event_batches (size) VALUES (1) RETURNING id)"
                              " INSERT INTO server_events (batch, pos, kind, instance_uuid, project_id, deleted)"
                              " SELECT b.id, 1, 'deleted', $1, 'proj-a', true FROM b", sid)
        _, kind, data = await watch.next()
        assert (kind, data) == ("server", {"id": sid, "tenant_id": "proj-a", "deleted": True})
        await watch.close()


async def test_keepalives_carry_the_cursor_past_events_a_client_may_not_see(pool, tmp_path):
    async with running(pool, ["api"], tmp_path, api={"event_keepalive": 0.2}) as h:
        alice = await open_stream(h, h.alice)
        [bobs] = await insert_servers(h.cell1, 1, "proj-b")
        for state in ("a", "b", "c"):
            await h.cell1.execute("UPDATE instances SET task_state = $2 WHERE uuid = $1", bobs, state)
        [alices] = await insert_servers(h.cell1, 1)
        _, _, data = await alice.next()
        assert data["id"] == alices
        before = alice.last_id
        # Bob's changes move alice's cursor on, and a keepalive tells her so (no event).
        await h.cell1.execute("UPDATE instances SET task_state = 'd' WHERE uuid = $1", bobs)
        async with asyncio.timeout(WAIT):
            while positions(alice.last_id) <= positions(before):
                with contextlib.suppress(TimeoutError):
                    got = await alice.next(timeout=0.5)
                    pytest.fail(f"alice got {got}")
        assert alice.keepalives >= 1
        # Reconnecting with it replays nothing; the next change of hers comes next.
        again = await open_stream(h, h.alice, last_id=alice.last_id)
        await h.cell1.execute("UPDATE instances SET task_state = 'e' WHERE uuid = $1", alices)
        _, _, data = await again.next()
        assert data["OS-EXT-STS:task_state"] == "e"
        for stream in (alice, again):
            await stream.close()


def notified(event_type: str, sid: str | None = None):
    return lambda _id, kind, data: kind == "notification" and data["event_type"] == event_type and (
        sid is None or data["payload"]["nova_object.data"].get("uuid") == sid)


async def test_notifications_ride_along_when_asked_for_live_and_by_project(cloud):
    h = cloud
    alice = await open_stream(h, h.alice, "?notifications=1")
    own = await open_stream(h, h.admin, "?notifications=1")   # an admin's own project only
    admin = await open_stream(h, h.admin, "?all_tenants=1&notifications=1")
    plain = await open_stream(h, h.alice)
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    sid = created["server"]["id"]
    cursor_id, kind, note = await alice.until(notified("instance.create.end", sid))
    assert note["publisher_id"].startswith("nova-compute:") and note["priority"] == "INFO"
    assert note["payload"]["nova_object.name"] == "InstanceCreatePayload"
    assert note["payload"]["nova_object.data"]["tenant_id"] == "proj-a"
    # No id of its own: the cursor is the last server event's, so a reconnect is unchanged.
    assert cursor_id == [i for i, k, _ in alice.seen if k != "notification"][-1]
    await admin.until(notified("instance.create.end", sid))
    await plain.until(server_is(sid, "ACTIVE"))

    # A stream without all_tenants hears its own project's servers, never another's (the hub
    # hands each notification to every stream in the same order: alice's came first).
    theirs = await ok(await h.http.post(V + "/servers", json=boot_body(h, networks="none"), headers={
        **h.admin, "OpenStack-API-Version": "compute 2.37"}), 202)
    await own.until(notified("instance.create.end", theirs["server"]["id"]))
    services = await ok(await h.http.get(V + "/os-services", headers=h.admin), 200)
    await ok(await h.http.put(V + "/os-services/disable", headers=h.admin,
                              json={"host": services["services"][0]["host"], "binary": "nova-compute"}), 200)
    await admin.until(notified("service.update"))
    await ok(await h.http.delete(f"{V}/servers/{sid}", headers=h.alice), 204)
    await alice.until(notified("instance.delete.end", sid))
    for stream in (alice, own, admin, plain):
        await stream.close()
    assert not any(k == "notification" and d["payload"]["nova_object.data"].get("uuid") == sid
                   for _, k, d in own.seen)
    assert not any(k == "notification" and d["event_type"].startswith("service.") for _, k, d in alice.seen)
    assert not any(k == "notification" for _, k, _ in plain.seen)


async def test_notifications_must_be_asked_for_plainly(cloud):
    resp = await cloud.http.get(f"{V}/events?notifications=maybe", headers=cloud.alice)
    assert resp.status == 400
    assert "notifications" in (await resp.json())["badRequest"]["message"]
