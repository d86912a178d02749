"""The steps of instance actions recorded for many instances at once (db/instances.py `events`,
the coalesced start_event and finish_event): each call's step goes under its own instance's
action, whatever order the calls and the actions are in."""

from __future__ import annotations

import uuid

from nova_async.db import instances
from tests.integration.compute.support import add_instance


async def test_steps_begun_together_each_go_under_their_own_action(cell1):
    made = [await add_instance(cell1, host=None) for _ in range(6)]
    calls = list(reversed(made))                    # calls in the opposite order of the actions' ids
    no_action = (str(uuid.uuid4()), "req-none")     # no such instance: no action, no step
    rows = await instances.START_EVENT.each(
        cell1, [(u, r, f"step-{u[:8]}", f"host-{u[:8]}") for u, r in calls] + [(*no_action, "step-x", None)])
    assert rows[-1] is None
    for (instance_uuid, request_id), row in zip(calls, rows):
        found = await cell1.fetchrow(
            "SELECT a.instance_uuid::text, a.request_id, e.event, e.host FROM instance_action_events e"
            " JOIN instance_actions a ON a.id = e.action_id WHERE e.id = $1", row["id"])
        assert tuple(found) == (instance_uuid, request_id, f"step-{instance_uuid[:8]}", f"host-{instance_uuid[:8]}")

    await instances.FINISH_EVENT.each(cell1, [(row["id"], "Success" if i % 2 else "Error", None)
                                              for i, row in enumerate(rows[:-1])])
    results = await cell1.fetch("SELECT a.instance_uuid::text AS uuid, e.result FROM instance_action_events e"
                                " JOIN instance_actions a ON a.id = e.action_id")
    assert {r["uuid"]: r["result"] for r in results} == {
        u: "Success" if i % 2 else "Error" for i, (u, _) in enumerate(calls)}
