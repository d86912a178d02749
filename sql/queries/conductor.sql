-- The conductor's own reads.

-- name: unscheduled_batches
-- Boot requests accepted but never given a host (a restart interrupted them), per request.
SELECT i.reservation_id, i.project_id, i.user_id, a.request_id,
       array_agg(i.uuid ORDER BY i.launch_index) AS uuids
  FROM instances i
  JOIN instance_actions a ON a.instance_uuid = i.uuid AND a.action = 'create'
 WHERE i.deleted_at IS NULL AND i.vm_state = 'building' AND i.host IS NULL
 GROUP BY i.reservation_id, i.project_id, i.user_id, a.request_id;

-- name: unhosted_deletes
-- Deletes of instances no host holds (never scheduled, or scheduling failed) that were marked
-- `deleting` and not finished: the API or this role stopped in between.
SELECT uuid FROM instances
 WHERE deleted_at IS NULL AND host IS NULL AND task_state = 'deleting' AND vm_state <> 'building';

-- name: rows_to_schedule
-- The rows of instances being scheduled in this cell, coalesced (db/coalesce.py: $1 one
-- uuid per call, `ord` the call's place; $2 the scheduling step, shared). `open_step`: the
-- instance's scheduling step is recorded as begun and not failed, and yet it has no host:
-- the conductor doing it died, before it ended or between its end and the host's write.
SELECT i.*, w.ord, EXISTS (SELECT 1 FROM instance_actions a
                             JOIN instance_action_events e ON e.action_id = a.id
                            WHERE a.instance_uuid = i.uuid AND e.event = $2
                              AND (e.finish_time IS NULL OR e.result = 'Success')) AS open_step
  FROM unnest($1::uuid[]) WITH ORDINALITY AS w(uuid, ord)
  JOIN instances i ON i.uuid = w.uuid
 WHERE i.uuid = ANY ($1::uuid[]) AND i.deleted_at IS NULL;

-- name: set_hosts
-- instances.set_host (where an instance lives, unless a delete got there first), coalesced
-- (db/coalesce.py): each $n is an array, one element per instance, and `ord` says which
-- instance a row is.
WITH w AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[]) WITH ORDINALITY AS w(uuid, host, node, ord)
)
UPDATE instances i
   SET host = w.host, node = w.node, task_state = 'spawning', updated_at = now()
  FROM w
 WHERE i.uuid = ANY ($1::uuid[]) AND i.uuid = w.uuid
   AND i.deleted_at IS NULL AND i.task_state IS DISTINCT FROM 'deleting'
RETURNING i.*, w.ord;

-- name: builds_never_begun
-- Of the instances $1, those given a host whose build that host never began: still building
-- as the conductor left them (task_state 'spawning'), and no build step recorded under any of
-- their actions. A conductor that died between writing the host and casting the build left
-- them so; its request, redelivered, casts the build again.
SELECT i.uuid, i.host, i.node FROM instances i
 WHERE i.uuid = ANY ($1::uuid[]) AND i.deleted_at IS NULL AND i.host IS NOT NULL
   AND i.vm_state = 'building' AND i.task_state = 'spawning'
   AND NOT EXISTS (SELECT 1 FROM instance_actions a
                     JOIN instance_action_events e ON e.action_id = a.id
                    WHERE a.instance_uuid = i.uuid AND e.event = 'compute_build_and_run_instance');

-- name: take_over_steps
-- The scheduling step $2 of instances $1 was begun and never got as far as the host: a
-- conductor that held them died (or lost its lock) mid-way, and the one now holding them
-- schedules them again. That attempt's records go (its step, open or ended, and the
-- scheduler's decision $3 it never used), so each step shows once in the server's actions:
-- the one that counted. A failed attempt (Error) stays: it was tried, and is tried again.
DELETE FROM instance_action_events e
 USING instance_actions a
 WHERE a.id = e.action_id AND a.instance_uuid = ANY ($1::uuid[])
   AND ((e.event = $2 AND (e.finish_time IS NULL OR e.result = 'Success')) OR e.event = $3);

-- name: forget_decisions
-- The scheduler's decision $2 for instances $1 in the request $3 whose answer was lost (the
-- scheduler copy that made it died with it): the conductor asks again, and only the decision
-- that counts is shown.
DELETE FROM instance_action_events e
 USING instance_actions a
 WHERE a.id = e.action_id AND a.instance_uuid = ANY ($1::uuid[]) AND a.request_id = $3
   AND e.event = $2;
