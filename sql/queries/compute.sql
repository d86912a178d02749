-- The compute role's own queries: its service and compute-node rows, and what it must
-- reconcile at start-up. Instance state changes go through sql/queries/instances.sql.

-- name: upsert_service
-- $1 is a fresh id, used only when this host has never registered. $5–$7: the release this
-- service runs, the highest migration it ships and the versions of the messages it receives
-- (0070; bus/caps.py).
INSERT INTO services (id, host, binary_name, topic, last_seen_up, release, schema_level, message_caps)
VALUES ($1, $2, $3, $4, now(), $5, $6, $7)
ON CONFLICT (host, binary_name) DO UPDATE
   SET topic = EXCLUDED.topic, last_seen_up = now(), updated_at = now(), release = EXCLUDED.release,
       schema_level = EXCLUDED.schema_level, message_caps = EXCLUDED.message_caps
RETURNING *, (xmax = 0) AS created;  -- created: inserted now (service.create), not updated

-- name: upsert_compute_node
-- $1 is a fresh uuid, used only for a new hypervisor_hostname: a node keeps its uuid (and
-- so its resource provider) across restarts.
INSERT INTO compute_nodes (uuid, host, hypervisor_hostname, hypervisor_type, hypervisor_version,
                           vcpus, memory_mb, local_gb, service_id, cpu_info)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (hypervisor_hostname) DO UPDATE
   SET host = EXCLUDED.host, hypervisor_type = EXCLUDED.hypervisor_type, cpu_info = EXCLUDED.cpu_info,
       hypervisor_version = EXCLUDED.hypervisor_version, vcpus = EXCLUDED.vcpus,
       memory_mb = EXCLUDED.memory_mb, local_gb = EXCLUDED.local_gb,
       service_id = EXCLUDED.service_id, updated_at = now()
RETURNING uuid, failed_builds;

-- name: heartbeat
-- Every compute service of this process at once ($1 ids): they live and die together.
UPDATE services SET last_seen_up = now() WHERE id = ANY($1::uuid[]);

-- name: disable_for_libvirt
-- The compute services $1 turned away from while their libvirt connections are down ($2 why,
-- one each), as Nova does: the reason starts "AUTO: " so that the connection's return enables
-- it again. A service an admin disabled keeps the admin's reason.
UPDATE services s SET disabled = true, disabled_reason = w.reason, updated_at = now()
  FROM unnest($1::uuid[], $2::text[]) AS w(id, reason)
 WHERE s.id = w.id AND NOT s.disabled;

-- name: enable_after_libvirt
-- ...and enabled again once they are back ($1), unless disabled for another reason.
UPDATE services SET disabled = false, disabled_reason = NULL, updated_at = now()
 WHERE id = ANY($1::uuid[]) AND disabled AND disabled_reason LIKE 'AUTO: %';

-- name: live_instances
-- Which of the uuids $1 still have an instance (on any host: simulated hosts share a disk).
SELECT uuid FROM instances WHERE uuid = ANY($1::uuid[]) AND deleted_at IS NULL;

-- name: instance_hosts
-- The live instances among the uuids $1, with the host each is placed on.
SELECT uuid, host FROM instances WHERE uuid = ANY($1::uuid[]) AND deleted_at IS NULL;

-- name: unfinished_on_host
-- Work a restart interrupted on host $1, with the request id of the action it belongs to.
SELECT i.uuid, i.vm_state, i.task_state, i.preserve_ephemeral,
       (SELECT a.request_id FROM instance_actions a
         WHERE a.instance_uuid = i.uuid
         ORDER BY a.start_time DESC, a.id DESC LIMIT 1) AS request_id
  FROM instances i
 WHERE i.host = $1 AND i.deleted_at IS NULL
   AND (i.task_state IN ('deleting', 'rebuilding') OR i.vm_state = 'building')
 ORDER BY i.created_at;

-- name: settled_instances
-- Instances on host $1 that no action is changing: the ones whose power state is compared
-- with what their guests are doing.
SELECT uuid, vm_state, power_state FROM instances
 WHERE host = $1 AND deleted_at IS NULL AND task_state IS NULL
   AND vm_state IN ('active', 'stopped', 'paused', 'suspended');

-- name: sync_power_state
-- Record what the guest was seen doing, unless an action started (or the instance moved or
-- changed state) since it was read.
UPDATE instances SET vm_state = $3, power_state = $4, updated_at = now()
 WHERE uuid = $1 AND host = $2 AND deleted_at IS NULL AND task_state IS NULL AND vm_state = $5
RETURNING uuid;

-- name: bridge_in_use
-- Whether an instance on host $1 other than $2 has a port on bridge $3.
SELECT EXISTS (
    SELECT 1 FROM instances
     WHERE host = $1 AND uuid <> $2 AND deleted_at IS NULL
       AND network_info @> jsonb_build_array(jsonb_build_object('bridge', $3::text)));

-- name: build_failed
UPDATE compute_nodes SET failed_builds = failed_builds + 1 WHERE uuid = $1;

-- name: reset_failed_builds
UPDATE compute_nodes SET failed_builds = 0 WHERE uuid = $1 AND failed_builds > 0;

