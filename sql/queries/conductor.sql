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
-- already) its event $3 started (`event_id`), in one statement.
WITH i AS (
    SELECT * FROM instances WHERE uuid = ANY ($1::uuid[]) AND deleted_at IS NULL
), ev AS (
    INSERT INTO instance_action_events (action_id, event)
    SELECT a.id, $3 FROM instance_actions a JOIN i ON a.instance_uuid = i.uuid
     WHERE a.request_id = $2 AND i.vm_state = 'building' AND i.host IS NULL
       AND i.task_state IS DISTINCT FROM 'deleting' AND NOT (i.uuid = ANY ($4::uuid[]))
    RETURNING id, action_id
)
SELECT i.*, (SELECT ev.id FROM ev JOIN instance_actions a ON a.id = ev.action_id
              WHERE a.instance_uuid = i.uuid) AS event_id
  FROM i
 ORDER BY i.launch_index;

-- name: set_host_after
-- instances.set_host, with the Success of the scheduling event ($4) that chose the host.
WITH done AS (
    UPDATE instance_action_events SET finish_time = now(), result = 'Success' WHERE id = $4
)
UPDATE instances
   SET host = $2, node = $3, task_state = 'spawning', updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS DISTINCT FROM 'deleting'
RETURNING *;

-- name: drop_event
DELETE FROM instance_action_events WHERE id = $1;
