-- Resize (migrations) and createImage (instance_snapshots): the API's claims, the
-- conductor's and compute's steps, and what recovery looks for after a restart.

-- name: begin_resize
-- Claim instance $1 for a resize: only from active or stopped, with no task under way; $2 its
-- new disk config (AUTO: true) when not NULL.
UPDATE instances SET task_state = 'resize_prep', auto_disk_config = coalesce($2, auto_disk_config),
       updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS NULL AND host IS NOT NULL
   AND vm_state IN ('active', 'stopped')
RETURNING *;

-- name: insert_migration
-- $11: 'resize', or 'migration' (a cold migration: the flavor unchanged, another host, the
-- one named in $12 when one is).
INSERT INTO migrations (uuid, instance_uuid, status, source_compute, source_node, old_flavor,
                        new_flavor, old_request_spec, old_vm_state, project_id, user_id, migration_type,
                        requested_dest)
VALUES ($1, $2, 'pre-migrating', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
RETURNING *;

-- name: get_migration
SELECT * FROM migrations WHERE uuid = $1;

-- name: migrations_of
SELECT * FROM migrations WHERE instance_uuid = $1 ORDER BY id DESC;

-- name: set_migration_status
-- Move migration $1 to status $2, only from one of the statuses $3.
UPDATE migrations SET status = $2, updated_at = now()
 WHERE uuid = $1 AND status = ANY($3::text[])
RETURNING *;

-- name: set_migration_dest
UPDATE migrations SET dest_compute = $2, dest_node = $3, updated_at = now()
 WHERE uuid = $1 AND status = 'pre-migrating'
RETURNING *;

-- name: begin_confirm
-- The finished resize of instance $1 (VERIFY_RESIZE, no task) becomes 'confirming'; of a
-- confirm and a revert racing, exactly one gets the row.
UPDATE migrations m SET status = 'confirming', updated_at = now()
  FROM instances i
 WHERE m.instance_uuid = $1 AND m.status = 'finished' AND i.uuid = m.instance_uuid
   AND i.deleted_at IS NULL AND i.vm_state = 'resized' AND i.task_state IS NULL
RETURNING m.*;

-- name: begin_revert_migration
UPDATE migrations m SET status = 'reverting', updated_at = now()
  FROM instances i
 WHERE m.instance_uuid = $1 AND m.status = 'finished' AND i.uuid = m.instance_uuid
   AND i.deleted_at IS NULL AND i.vm_state = 'resized' AND i.task_state IS NULL
RETURNING m.*;

-- name: resize_task
-- Move instance $1 to task_state $2, only from one of the task_states $3.
UPDATE instances SET task_state = $2, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = ANY($3::text[])
RETURNING *;

-- name: release_resize
-- A resize that could not go ahead: no task, the vm_state it had (active or stopped).
UPDATE instances SET task_state = NULL, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = ANY($2::text[])
RETURNING uuid;

-- name: begin_finish
-- The destination takes the instance over with its new flavor.
UPDATE instances
   SET host = $2, node = $3, flavor = $4, request_spec = $5, task_state = 'resize_finish',
       updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IN ('resize_migrated', 'resize_finish')
RETURNING *;

-- name: set_resized
UPDATE instances SET vm_state = 'resized', task_state = NULL, power_state = $2, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = 'resize_finish'
RETURNING uuid;

-- name: set_confirmed
-- After a confirm: active when the guest runs, stopped when it does not (Nova's rule).
UPDATE instances
   SET vm_state = CASE WHEN power_state = 1 THEN 'active' ELSE 'stopped' END, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND vm_state = 'resized'
RETURNING uuid;

-- name: set_reverted
UPDATE instances
   SET host = $2, node = $3, flavor = $4, request_spec = $5, vm_state = $6, power_state = $7,
       task_state = NULL, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = 'resize_reverting'
RETURNING uuid;

-- name: unfinished_resizes
-- Resize steps a restart interrupted that host $1 must redo: the instance's task_state says
-- which step, the host it is recorded on says where; with the request id of its action.
SELECT i.uuid, i.task_state, m.uuid AS migration_uuid,
       (SELECT a.request_id FROM instance_actions a
         WHERE a.instance_uuid = i.uuid
         ORDER BY a.start_time DESC, a.id DESC LIMIT 1) AS request_id
  FROM instances i
  JOIN LATERAL (SELECT * FROM migrations x WHERE x.instance_uuid = i.uuid
                 ORDER BY x.id DESC LIMIT 1) m ON true
 WHERE i.host = $1 AND i.deleted_at IS NULL
   AND i.task_state IN ('resize_migrating', 'resize_migrated', 'resize_finish', 'resize_reverting')
UNION ALL
-- a confirm runs on the source host
SELECT i.uuid, 'confirming', m.uuid,
       (SELECT a.request_id FROM instance_actions a
         WHERE a.instance_uuid = i.uuid
         ORDER BY a.start_time DESC, a.id DESC LIMIT 1)
  FROM migrations m JOIN instances i ON i.uuid = m.instance_uuid AND i.deleted_at IS NULL
 WHERE m.status = 'confirming' AND m.source_compute = $1;

-- name: unscheduled_resizes
-- Resizes accepted but never handed to a compute host (the conductor's part was interrupted).
SELECT i.uuid, i.project_id, i.user_id, m.uuid AS migration_uuid,
       (SELECT a.request_id FROM instance_actions a
         WHERE a.instance_uuid = i.uuid
         ORDER BY a.start_time DESC, a.id DESC LIMIT 1) AS request_id
  FROM instances i
  JOIN LATERAL (SELECT * FROM migrations x WHERE x.instance_uuid = i.uuid
                 ORDER BY x.id DESC LIMIT 1) m ON true
 WHERE i.deleted_at IS NULL AND i.task_state = 'resize_prep' AND m.status = 'pre-migrating';

-- name: due_for_confirm
-- Finished resizes whose source is host $1, waiting longer than $2 seconds for the user.
SELECT m.uuid, m.instance_uuid, i.project_id, i.user_id FROM migrations m
  JOIN instances i ON i.uuid = m.instance_uuid
 WHERE m.status = 'finished' AND m.source_compute = $1 AND i.deleted_at IS NULL
   AND i.vm_state = 'resized' AND i.task_state IS NULL
   AND m.updated_at < now() - make_interval(secs => $2);

-- name: migration_consumers
-- Every migration of instance $1: its allocations in placement must go with the instance.
SELECT uuid FROM migrations WHERE instance_uuid = $1;

-- name: begin_snapshot
UPDATE instances SET task_state = 'image_snapshot', updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS NULL AND host IS NOT NULL
   AND vm_state IN ('active', 'stopped', 'paused', 'suspended')
RETURNING *;

-- name: insert_snapshot
INSERT INTO instance_snapshots (image_id, instance_uuid, request_id) VALUES ($1, $2, $3);

-- name: delete_snapshot
DELETE FROM instance_snapshots WHERE image_id = $1;

-- name: get_snapshot
SELECT * FROM instance_snapshots WHERE image_id = $1;

-- name: interrupted_snapshots
-- Snapshots of instances on host $1 a restart interrupted.
SELECT s.image_id, s.instance_uuid, s.request_id, i.task_state
  FROM instance_snapshots s JOIN instances i ON i.uuid = s.instance_uuid
 WHERE i.host = $1 AND i.deleted_at IS NULL;

-- name: begin_revert_instance
UPDATE instances SET task_state = 'resize_reverting', updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND vm_state = 'resized' AND task_state IS NULL
RETURNING *;

-- name: list_migrations
-- GET /os-migrations: $1 instance, $2 status, $3 host (source or destination), $4 type,
-- $5 project.
SELECT * FROM migrations
 WHERE ($1::uuid IS NULL OR instance_uuid = $1)
   AND ($2::text IS NULL OR status = $2)
   AND ($3::text IS NULL OR source_compute = $3 OR dest_compute = $3)
   AND ($4::text IS NULL OR migration_type = $4)
   AND ($5::text IS NULL OR project_id = $5)
 ORDER BY created_at DESC, id DESC;
