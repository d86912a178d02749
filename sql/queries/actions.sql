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

-- name: begin_rebuild
-- Claim instance $1 for a rebuild (from active, stopped or error, no task under way) and
-- record what it will be rebuilt with; $3..$10 only change what the request gave ($11..$17);
-- $18 the disk config (AUTO: true) when not NULL; $19 whether the ephemeral disk is kept (0071).
UPDATE instances
   SET task_state = 'rebuilding', image_ref = $2, preserve_ephemeral = $19,
       display_name = CASE WHEN $11 THEN $3 ELSE display_name END,
       metadata     = CASE WHEN $12 THEN $4 ELSE metadata END,
       user_data    = CASE WHEN $13 THEN $5 ELSE user_data END,
       key_name     = CASE WHEN $14 THEN $6 ELSE key_name END,
       key_data     = CASE WHEN $14 THEN $7 ELSE key_data END,
       description  = CASE WHEN $15 THEN $8 ELSE description END,
       access_ip_v4 = CASE WHEN $16 THEN $9 ELSE access_ip_v4 END,
       access_ip_v6 = CASE WHEN $17 THEN $10 ELSE access_ip_v6 END,
       auto_disk_config = coalesce($18, auto_disk_config),
       updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS NULL AND host IS NOT NULL
   AND vm_state IN ('active', 'stopped', 'error')
RETURNING *;

-- name: reset_state
-- An admin's os-resetState: the vm_state it says, no task; not for a deleted instance.
UPDATE instances SET vm_state = $2, task_state = NULL, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL
RETURNING uuid;
