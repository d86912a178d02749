-- Instance usage over a period, for os-simple-tenant-usage.

-- name: instances_in_period
-- Run in each cell: the instances that ran at some time in [$1, $2), of the project $3 (NULL:
-- every project), deleted ones too, with their flavor; oldest first.
SELECT uuid, display_name, project_id, flavor, vm_state, launched_at, terminated_at, created_at
  FROM instances
 WHERE launched_at IS NOT NULL AND launched_at < $2
   AND (terminated_at IS NULL OR terminated_at > $1)
   AND ($3::text IS NULL OR project_id = $3)
 ORDER BY created_at, uuid;
