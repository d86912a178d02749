-- The volume role's queries (nova_async/volume/): volumes, snapshots, their quotas.
-- Every change of state is a conditional UPDATE from the states it may leave
-- (`status = ANY($n)`); zero rows back means another request got there first.

-- name: insert_volume
-- $16: the process that makes it (its incarnation; NULL without session locks), `worker`
-- below wherever a volume or snapshot enters creating, deleting or extending.
INSERT INTO volumes (id, project_id, user_id, name, description, size, volume_type, availability_zone,
                     bootable, snapshot_id, source_volid, image_id, metadata, backend, host, worker)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
RETURNING *;

-- name: get_volume
SELECT * FROM volumes WHERE id = $1;

-- name: lock_volume
SELECT * FROM volumes WHERE id = $1 FOR UPDATE;

-- name: find_volumes
-- A project's volumes (all projects' when $1 is NULL), with the filters the API takes; the
-- caller sorts and pages (a project holds at most its quota of volumes).
SELECT * FROM volumes
WHERE ($1::text IS NULL OR project_id = $1)
  AND ($2::text IS NULL OR name = $2)
  AND ($3::text IS NULL OR status = $3)
  AND ($4::jsonb IS NULL OR metadata @> $4)
  AND ($5::boolean IS NULL OR bootable = $5);

-- name: attachments_of_volumes
SELECT * FROM volume_attachments WHERE volume_id = ANY($1::uuid[]) ORDER BY created_at, id;

-- name: set_volume_status
-- One volume from one of the states $2 to $3; the new `error` is $4 (NULL clears it).
UPDATE volumes SET status = $3, error = $4, updated_at = now()
WHERE id = $1 AND status = ANY($2::text[])
RETURNING *;

-- name: begin_volume_work
-- One volume from one of the states $2 into the change $3 (deleting), done by the process $4.
UPDATE volumes SET status = $3, error = NULL, worker = $4, updated_at = now()
WHERE id = $1 AND status = ANY($2::text[])
RETURNING *;

-- name: take_over_volume
-- Recovery: the volume whose change ($2) the dead process $3 (NULL: none recorded) left is
-- this process's ($4) to finish; NULL back when another copy took it first or it moved on.
UPDATE volumes SET worker = $4, updated_at = now()
WHERE id = $1 AND status = $2 AND worker IS NOT DISTINCT FROM $3
RETURNING *;

-- name: finish_create
-- A volume made: creating → available, bootable (and what the image said) when from an image.
UPDATE volumes SET status = 'available', error = NULL, bootable = bootable OR $2,
                   image_metadata = $3, updated_at = now()
WHERE id = $1 AND status = 'creating'
RETURNING *;

-- name: begin_extend
UPDATE volumes SET status = 'extending', new_size = $3, worker = $4, updated_at = now()
WHERE id = $1 AND status = ANY($2::text[])
RETURNING *;

-- name: finish_extend
-- Back to in-use when the volume has an attachment, else available.
UPDATE volumes SET size = new_size, new_size = NULL, error = NULL, updated_at = now(),
                   status = CASE WHEN EXISTS (SELECT 1 FROM volume_attachments a WHERE a.volume_id = volumes.id)
                                 THEN 'in-use' ELSE 'available' END
WHERE id = $1 AND status = 'extending'
RETURNING *;

-- name: undo_extend
UPDATE volumes SET new_size = NULL, error = $2, updated_at = now(),
                   status = CASE WHEN EXISTS (SELECT 1 FROM volume_attachments a WHERE a.volume_id = volumes.id)
                                 THEN 'in-use' ELSE 'error_extending' END
WHERE id = $1 AND status = 'extending'
RETURNING *;

-- name: update_volume
UPDATE volumes SET name = $2, description = $3, metadata = $4, updated_at = now()
WHERE id = $1
RETURNING *;

-- name: set_bootable
UPDATE volumes SET bootable = $2, updated_at = now() WHERE id = $1 RETURNING *;

-- name: reset_volume_status
UPDATE volumes SET status = $2, updated_at = now() WHERE id = $1 RETURNING *;

-- name: delete_volume_row
DELETE FROM volumes WHERE id = $1 AND status = 'deleting';

-- name: volumes_in
-- Volumes in the middle of a change (recovery takes those whose process died).
SELECT * FROM volumes WHERE status = ANY($1::text[]) ORDER BY created_at;

-- name: volume_attachment_count
SELECT count(*) FROM volume_attachments WHERE volume_id = $1;

-- name: attached_hosts
-- Where a volume is attached now: compute hosts to tell of a new size.
SELECT instance_uuid, attached_host FROM volume_attachments
WHERE volume_id = $1 AND attached_host IS NOT NULL AND status IN ('attaching', 'attached');

-- snapshots ---------------------------------------------------------------------------

-- name: insert_snapshot
INSERT INTO volume_snapshots (id, volume_id, project_id, user_id, name, description, size, metadata, backend,
                              worker)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
RETURNING *;

-- name: get_snapshot
SELECT * FROM volume_snapshots WHERE id = $1;

-- name: find_snapshots
SELECT * FROM volume_snapshots
WHERE ($1::text IS NULL OR project_id = $1)
  AND ($2::text IS NULL OR name = $2)
  AND ($3::text IS NULL OR status = $3)
  AND ($4::uuid IS NULL OR volume_id = $4)
  AND ($5::jsonb IS NULL OR metadata @> $5);

-- name: snapshots_of_volume
SELECT * FROM volume_snapshots WHERE volume_id = $1 ORDER BY created_at;

-- name: set_snapshot_status
UPDATE volume_snapshots SET status = $3, error = $4, updated_at = now()
WHERE id = $1 AND status = ANY($2::text[])
RETURNING *;

-- name: set_volume_snapshots_status
-- A cascading delete: every snapshot of the volume from $2 to $3 (all or nothing is the
-- caller's check), by the process $4.
UPDATE volume_snapshots SET status = $3, worker = $4, updated_at = now()
WHERE volume_id = $1 AND status = ANY($2::text[])
RETURNING id;

-- name: begin_snapshot_work
UPDATE volume_snapshots SET status = $3, error = NULL, worker = $4, updated_at = now()
WHERE id = $1 AND status = ANY($2::text[])
RETURNING *;

-- name: take_over_snapshot
-- As take_over_volume.
UPDATE volume_snapshots SET worker = $4, updated_at = now()
WHERE id = $1 AND status = $2 AND worker IS NOT DISTINCT FROM $3
RETURNING *;

-- name: update_snapshot
UPDATE volume_snapshots SET name = $2, description = $3, metadata = $4, updated_at = now()
WHERE id = $1
RETURNING *;

-- name: delete_snapshot_row
DELETE FROM volume_snapshots WHERE id = $1 AND status = 'deleting';

-- name: snapshots_in
SELECT * FROM volume_snapshots WHERE status = ANY($1::text[]) ORDER BY created_at;

-- quotas ------------------------------------------------------------------------------

-- name: lock_project_quota
-- Creates and extends of one project wait for each other, so that a count and the change
-- that follows it are never overtaken (quotas.check).
SELECT pg_advisory_xact_lock(hashtextextended('nova-async:volume-quota:' || $1::text, 0));

-- name: project_usage
-- Gigabytes count volumes and snapshots, as Cinder's do; a volume being extended counts at
-- the size it is growing to.
SELECT (SELECT count(*) FROM volumes WHERE project_id = $1)::int AS volumes,
       (SELECT count(*) FROM volume_snapshots WHERE project_id = $1)::int AS snapshots,
       ((SELECT coalesce(sum(greatest(size, coalesce(new_size, 0))), 0) FROM volumes WHERE project_id = $1)
        + (SELECT coalesce(sum(size), 0) FROM volume_snapshots WHERE project_id = $1))::int AS gigabytes;

-- name: quota_limits
SELECT resource, hard_limit FROM volume_quotas WHERE project_id = $1;

-- name: set_quota_limit
INSERT INTO volume_quotas (project_id, resource, hard_limit) VALUES ($1, $2, $3)
ON CONFLICT (project_id, resource) DO UPDATE SET hard_limit = EXCLUDED.hard_limit;

-- name: delete_quota_limits
DELETE FROM volume_quotas WHERE project_id = $1;
