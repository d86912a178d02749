-- The scheduler's view of compute hosts: a compute node (its uuid is its resource provider's)
-- and the nova-compute service that runs it.

-- name: host_states
-- $1 provider uuids from placement's candidates, $2 service_down_time in seconds.
-- `up` is judged by the database clock, the one the heartbeats were written with.
-- The service is joined LATERAL (its LIMIT keeps the planner from flattening it back into a
-- plain join), a primary-key probe per node: joined plainly, the plan hashed every service of
-- the cloud for the fifty nodes of a decision.
SELECT cn.uuid, cn.host, cn.hypervisor_hostname, cn.hypervisor_type, cn.failed_builds,
       cn.vcpus, cn.memory_mb,
       s.id IS NOT NULL AS has_service,
       coalesce(s.zone, 'nova') AS zone,
       coalesce(s.disabled, false) AS disabled,
       s.disabled_reason,
       coalesce(s.forced_down, false) AS forced_down,
       (SELECT hm.cell_uuid::text FROM host_mappings hm WHERE hm.host = cn.host) AS cell,
       coalesce(s.last_seen_up >= now() - make_interval(secs => $2), false) AS up,
       coalesce((SELECT jsonb_agg(a.metadata ORDER BY a.id)
                   FROM aggregates a JOIN aggregate_hosts ah ON ah.aggregate_id = a.id
                  WHERE ah.host = cn.host AND a.deleted_at IS NULL), '[]') AS aggregate_metadata
  FROM compute_nodes cn
  LEFT JOIN LATERAL (
        SELECT * FROM services x
         WHERE x.id = coalesce(cn.service_id,
                               (SELECT y.id FROM services y
                                 WHERE y.host = cn.host AND y.binary_name = 'nova-compute'))
         LIMIT 1) s ON true
 WHERE cn.uuid = ANY($1::uuid[]);

-- name: building
-- Instances building now on each of the hosts $1 (asked of every cell).
SELECT host, count(*) AS building FROM instances
 WHERE host = ANY($1::text[]) AND deleted_at IS NULL AND vm_state = 'building'
 GROUP BY host;

-- name: count_hosts
SELECT count(*) FROM compute_nodes;

-- name: instance_hosts
-- Where the instances named by same_host / different_host hints are ($1 uuids).
SELECT uuid, host FROM instances WHERE uuid = ANY($1::uuid[]) AND deleted_at IS NULL;
