"""0076: the event stream's rows numbered by batch. A site upgraded with events in its backlog
keeps them: the numbered ones at their positions (a reconnecting client's cursor still
means what it meant), the ones the sequencer had not reached yet numbered next, in the
order they were written, and new changes after them. Pruning drops whole batches."""

import uuid

from nova_async.api.event_stream import SEQUENCER_LOCK
from nova_async.db.migrate import migrate
from nova_async.db.queries import queries
from tests.integration.db.test_migrate import new_database, replay  # noqa: F401 (fixture)

Q = queries("server_events")


async def test_a_backlog_keeps_its_positions_and_its_waiting_rows_are_numbered_next(new_database):  # noqa: F811
    site = await new_database()
    await replay(site, upto=75)
    servers = [str(uuid.uuid4()) for _ in range(5)]
    # positions 1-3 were pruned; 4-6 kept; two rows committed that no pass numbered yet
    for seq, server in zip([4, 5, 6, None, None], servers):
        await site.execute("INSERT INTO server_events (seq, kind, instance_uuid, project_id, deleted)"
                           " VALUES ($1, 'deleted', $2, 'proj', true)", seq, server)
    await site.execute("UPDATE server_event_counter SET last = 6")

    await migrate(site)

    assert await site.fetchval(Q.oldest) == 4
    numbered = await site.fetch(Q.sequence, SEQUENCER_LOCK)
    assert [(r["seq"], r["instance_uuid"]) for r in numbered] == [(7, servers[3]), (8, servers[4])]
    assert await site.fetchval(Q.head) == 8

    await site.execute(
        "INSERT INTO instances (uuid, display_name, project_id, user_id, reservation_id, flavor, request_spec,"
        " vm_state) VALUES ($1, 'vm', 'proj', 'user', 'r-1', '{}', '{}', 'building')", later := str(uuid.uuid4()))
    assert [r["seq"] for r in await site.fetch(Q.sequence, SEQUENCER_LOCK)] == [9]
    rows = await site.fetch(Q.read, 3, 9, None, None, 100)
    assert [(r["seq"], r["instance_uuid"]) for r in rows] == list(zip(range(4, 10), [*servers, later]))
    # a page from the middle of a batch, and one project's or server's rows only
    assert [r["seq"] for r in await site.fetch(Q.read, 4, 9, None, None, 2)] == [5, 6]
    assert [r["seq"] for r in await site.fetch(Q.read, 0, 9, "other", None, 100)] == []
    assert [r["seq"] for r in await site.fetch(Q.read, 0, 9, None, servers[4], 100)] == [8]

    # keeping the newest 2 positions drops the batches wholly before them: 4-6, not 7-8
    await site.execute(Q.prune, 2)
    assert await site.fetchval(Q.oldest) == 7
    assert [r["seq"] for r in await site.fetch(Q.read, 0, 9, None, None, 100)] == [7, 8, 9]
    assert await site.fetchval("SELECT count(*) FROM server_events") == 3
