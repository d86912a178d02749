-- A server's metadata and tags, changed under the row's lock so concurrent edits compose.

-- name: lock
SELECT uuid, project_id, metadata, tags, task_state, locked FROM instances
 WHERE uuid = $1 AND deleted_at IS NULL FOR UPDATE;

-- name: set_metadata
UPDATE instances SET metadata = $2, updated_at = now() WHERE uuid = $1 RETURNING metadata;

-- name: set_tags
UPDATE instances SET tags = $2, updated_at = now() WHERE uuid = $1 RETURNING tags;
