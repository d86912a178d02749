-- The conductor's own reads.

-- name: unscheduled_batches
-- Boot requests accepted but never given a host (a restart interrupted them), per request.
SELECT i.reservation_id, i.project_id, i.user_id, a.request_id,
       array_agg(i.uuid ORDER BY i.launch_index) AS uuids
  FROM instances i
  JOIN instance_actions a ON a.instance_uuid = i.uuid AND a.action = 'create'
 WHERE i.deleted_at IS NULL AND i.vm_state = 'building' AND i.host IS NULL
 GROUP BY i.reservation_id, i.project_id, i.user_id, a.request_id;

-- name: rows_to_schedule
-- The rows of a boot request ($1, request $2), and for each that is to be scheduled now
-- (building, no host, not being deleted, not among $4: those this conductor is scheduling
-- already) its events $3 (the conductor's, `event_id`) and $5 (the scheduler's,
-- `scheduler_event_id`) started, in one statement.
WITH i AS (
    SELECT * FROM instances WHERE uuid = ANY ($1::uuid[]) AND deleted_at IS NULL
), ev AS (
    INSERT INTO instance_action_events (action_id, event)
    SELECT a.id, e.name FROM instance_actions a JOIN i ON a.instance_uuid = i.uuid
     CROSS JOIN unnest(ARRAY[$3::text, $5::text]) WITH ORDINALITY AS e(name, ord)
     WHERE a.request_id = $2 AND i.vm_state = 'building' AND i.host IS NULL
       AND i.task_state IS DISTINCT FROM 'deleting' AND NOT (i.uuid = ANY ($4::uuid[]))
     ORDER BY a.id, e.ord
    RETURNING id, action_id, event
)
SELECT i.*,
       (SELECT ev.id FROM ev JOIN instance_actions a ON a.id = ev.action_id
         WHERE a.instance_uuid = i.uuid AND ev.event = $3) AS event_id,
       (SELECT ev.id FROM ev JOIN instance_actions a ON a.id = ev.action_id
         WHERE a.instance_uuid = i.uuid AND ev.event = $5) AS scheduler_event_id
  FROM i
 ORDER BY i.launch_index;

-- name: set_host_after
-- instances.set_host, with the Success of the scheduling events that chose the host ($4 the
-- conductor's, $5 the scheduler's; either may be NULL). Coalesced (db/coalesce.py): each $n
-- is an array, one element per instance, and `ord` says which instance a row is.
WITH w AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])
        WITH ORDINALITY AS w(uuid, host, node, conductor_event, scheduler_event, ord)
), done AS (
    UPDATE instance_action_events SET finish_time = now(), result = 'Success'
     WHERE id = ANY ($4::bigint[] || $5::bigint[])
)
UPDATE instances i
   SET host = w.host, node = w.node, task_state = 'spawning', updated_at = now()
  FROM w
 WHERE i.uuid = ANY ($1::uuid[]) AND i.uuid = w.uuid
   AND i.deleted_at IS NULL AND i.task_state IS DISTINCT FROM 'deleting'
RETURNING i.*, w.ord;

-- name: drop_events
DELETE FROM instance_action_events WHERE id = ANY ($1::bigint[]);

-- name: finish_events
UPDATE instance_action_events SET finish_time = now(), result = 'Success' WHERE id = ANY ($1::bigint[]);
