-- Quotas: limits set per project, and usage counted from what exists.

-- name: limits
-- The project's limits: its own, else the default quota class's (sql/functions/project_limits.sql).
SELECT resource, hard_limit FROM project_limits($1);

-- name: set_limit
INSERT INTO quota_limits (project_id, resource, hard_limit) VALUES ($1, $2, $3)
ON CONFLICT (project_id, resource) DO UPDATE SET hard_limit = EXCLUDED.hard_limit, updated_at = now();

-- name: clear_limits
DELETE FROM quota_limits WHERE project_id = $1;

-- name: lock_project
-- Held to the end of the transaction: one project's quota checks and the writes they allow
-- happen one at a time, so concurrent requests cannot both take the last unit.
SELECT pg_advisory_xact_lock(hashtextextended('quota:' || $1, 0));

-- name: lock_for_boot
-- A boot's locks and limits in one round trip (the function: sql/functions/): the project's quota
-- lock shared, plus its counting lock when the limits read under it limit any of $2 (what the
-- boot adds to, with $3 their defaults). `limits`: the project's own limits as a JSON object;
-- `counting`: whether the boot must count (and now holds the counting lock).
SELECT limits, counting FROM quota_lock_for_boot($1, $2::text[], $3::int[]);

-- name: lock_to_count
-- The locks and limits of a request adding to resource $2 only (a server group), in one round
-- trip (the function: sql/functions/): the project's quota lock shared, plus that resource's
-- own counting lock when it is limited ($3: its default). As lock_for_boot answers.
SELECT limits, counting FROM quota_lock_to_count($1, $2, $3);

-- name: instance_usage
-- What a project's instances in this cell use, each counted once (a moving one with the
-- larger of its two flavors): sql/functions/project_usage.sql.
SELECT instances, cores, ram FROM project_usage($1);

-- name: server_groups_in_use
-- The project's server groups (in the API database), as its server group quota counts them.
SELECT count(*) FROM server_groups WHERE project_id = $1 AND deleted_at IS NULL;

-- name: class_limits
SELECT resource, hard_limit FROM quota_class_limits WHERE class_name = $1;

-- name: set_class_limit
INSERT INTO quota_class_limits (class_name, resource, hard_limit) VALUES ($1, $2, $3)
ON CONFLICT (class_name, resource) DO UPDATE SET hard_limit = EXCLUDED.hard_limit, updated_at = now();
