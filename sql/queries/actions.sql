-- Server actions (reboot, stop, start, pause, …): the API's claim and compute's recovery.

-- name: begin
-- Claim instance $1 for an action: only from one of the vm_states $3 and with no task
-- under way, so of two concurrent actions exactly one gets a row back.
UPDATE instances SET task_state = $2, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS NULL AND host IS NOT NULL
   AND vm_state = ANY($3::text[])
RETURNING *;

-- name: release
-- Undo `begin` when the work could not be handed to compute.
UPDATE instances SET task_state = NULL, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = $2
RETURNING uuid;

-- name: interrupted_on_host
-- Instances on host $1 a restart caught in one of the task_states $2, with the request id
-- of their latest action (the one that set it).
SELECT i.uuid, i.task_state,
       (SELECT a.request_id FROM instance_actions a
         WHERE a.instance_uuid = i.uuid
         ORDER BY a.start_time DESC, a.id DESC LIMIT 1) AS request_id
  FROM instances i
 WHERE i.host = $1 AND i.deleted_at IS NULL AND i.task_state = ANY($2::text[])
 ORDER BY i.updated_at;

-- name: set_lock
UPDATE instances SET locked = $2, locked_by = $3, locked_reason = $4, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL RETURNING uuid;
