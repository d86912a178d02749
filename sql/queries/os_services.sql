-- The compute API's admin views of services and hypervisors. `up` is judged by the
-- database clock, the one the heartbeats were written with; $1 is service_down_time.

-- name: services
SELECT s.*, coalesce(s.last_seen_up >= now() - make_interval(secs => $1), false) AS up
  FROM services s
 WHERE ($2::text IS NULL OR s.host = $2) AND ($3::text IS NULL OR s.binary_name = $3)
 ORDER BY s.binary_name, s.host;

-- name: hypervisors
SELECT n.*, s.host AS service_host, s.id AS service_uuid, s.disabled, s.disabled_reason,
       coalesce(s.last_seen_up >= now() - make_interval(secs => $1), false) AS up
  FROM compute_nodes n
  LEFT JOIN services s ON s.id = n.service_id
 ORDER BY n.hypervisor_hostname;

-- name: update_service
-- Set what an admin asked for ($3–$5; NULL leaves a column as it is), by id ($1) or by
-- host ($6) and binary ($7). $2 is service_down_time. A reason is dropped on enabling.
UPDATE services s
   SET disabled = coalesce($3, s.disabled),
       disabled_reason = CASE WHEN coalesce($3, s.disabled) THEN coalesce($4, s.disabled_reason) END,
       forced_down = coalesce($5, s.forced_down),
       updated_at = now()
 WHERE ($1::uuid IS NOT NULL AND s.id = $1) OR ($1::uuid IS NULL AND s.host = $6 AND s.binary_name = $7)
RETURNING s.*, coalesce(s.last_seen_up >= now() - make_interval(secs => $2), false) AS up;

-- name: zone_services
-- Every service with its zone, for os-availability-zone. $1 is service_down_time.
SELECT s.host, s.binary_name, s.zone, s.disabled, s.forced_down, s.last_seen_up, s.updated_at,
       coalesce(s.last_seen_up >= now() - make_interval(secs => $1), false) AS up
  FROM services s
 ORDER BY s.zone, s.host, s.binary_name;

-- name: node_usage
-- Run in each cell: what the live instances on each node take, counted from their flavors as
-- Nova's resource tracker counts them, how many there are, and how many are busy with a task.
SELECT node,
       count(*)::int AS running_vms,
       sum((flavor->>'vcpus')::int)::int AS vcpus_used,
       sum((flavor->>'memory_mb')::int)::int AS memory_mb_used,
       sum((flavor->>'root_gb')::int + coalesce((flavor->>'ephemeral_gb')::int, 0)
           + ceil(coalesce((flavor->>'swap')::int, 0) / 1024.0)::int)::int AS local_gb_used,
       (count(*) FILTER (WHERE task_state IS NOT NULL))::int AS current_workload
  FROM instances
 WHERE deleted_at IS NULL AND node IS NOT NULL
 GROUP BY node;

-- name: node_servers
-- Run in each cell: the live instances on the nodes named in $1, oldest first.
SELECT node, uuid, display_name
  FROM instances
 WHERE deleted_at IS NULL AND node = ANY($1::text[])
 ORDER BY created_at, uuid;

-- name: host_usage_by_project
-- Run in each cell: what the live instances on host $1 take, per project.
SELECT project_id,
       sum((flavor->>'vcpus')::int)::int AS cpu,
       sum((flavor->>'memory_mb')::int)::int AS memory_mb,
       sum((flavor->>'root_gb')::int + coalesce((flavor->>'ephemeral_gb')::int, 0))::int AS disk_gb
  FROM instances
 WHERE deleted_at IS NULL AND host = $1
 GROUP BY project_id
 ORDER BY project_id;

-- name: compute_host_exists
SELECT EXISTS (SELECT 1 FROM compute_nodes WHERE host = $1);

-- name: get_service
-- $2 is service_down_time.
SELECT s.*, coalesce(s.last_seen_up >= now() - make_interval(secs => $2), false) AS up
  FROM services s
 WHERE s.id = $1;

-- name: compute_node_uuids
SELECT uuid FROM compute_nodes WHERE service_id = $1 ORDER BY uuid;

-- name: host_in_use
-- Run in each cell: what still ties compute host $1 to this cell — live instances on it, and
-- moves from or to it that have not ended (Nova refuses to delete the service for either).
SELECT (SELECT count(*) FROM instances WHERE deleted_at IS NULL AND host = $1) AS instances,
       (SELECT count(*) FROM migrations
         WHERE (source_compute = $1 OR dest_compute = $1)
           AND status NOT IN ('confirmed', 'reverted', 'error'))   -- as the index migrations_open
         AS migrations;

-- name: delete_service
-- The service and (ON DELETE CASCADE) its compute nodes; a compute service's host's cell
-- mapping goes with it (a conductor or scheduler on the same host has none of its own).
WITH gone AS (DELETE FROM services WHERE id = $1 RETURNING *),
     unmapped AS (
       DELETE FROM host_mappings h
        USING gone
        WHERE h.host = gone.host AND gone.binary_name = 'nova-compute'
          AND NOT EXISTS (SELECT 1 FROM services s
                           WHERE s.host = gone.host AND s.id <> gone.id AND s.binary_name = 'nova-compute'))
SELECT * FROM gone;

-- name: compute_up
-- Whether the compute service of host $2 is up ($1 is service_down_time); NULL: there is none.
SELECT s.last_seen_up >= now() - make_interval(secs => $1) AND NOT s.forced_down
  FROM services s
 WHERE s.host = $2 AND s.binary_name = 'nova-compute';

-- name: upsert_control_service
-- The record of a control role of one process (common/service_records.py): $2 host, $3
-- binary, $4 topic, $5 release, $6 highest migration shipped; $1 a fresh id, used only the
-- first time. Nova shows these services in the zone `internal`.
INSERT INTO services (id, host, binary_name, topic, zone, last_seen_up, release, schema_level)
VALUES ($1, $2, $3, $4, 'internal', now(), $5, $6)
ON CONFLICT (host, binary_name) DO UPDATE
   SET topic = EXCLUDED.topic, last_seen_up = now(), updated_at = now(), release = EXCLUDED.release,
       schema_level = EXCLUDED.schema_level
RETURNING *, (xmax = 0) AS created;

-- name: heartbeat
-- The records $1 up as of now; those found (an admin may have deleted one).
UPDATE services SET last_seen_up = now() WHERE id = ANY($1::uuid[]) RETURNING id;
