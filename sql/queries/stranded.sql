-- What a dead node leaves behind (conductor/stranded.py): work on compute hosts that have
-- stopped reporting, and boot requests nobody scheduled. `down` is judged by the database
-- clock, as os-services does.

-- name: up_compute_hosts
-- Compute hosts with a heartbeat in the last $1 seconds and not forced down.
SELECT host FROM services
 WHERE binary_name = 'nova-compute'
   AND NOT forced_down AND last_seen_up >= now() - make_interval(secs => $1);

-- name: down_compute_hosts
-- Compute hosts without a heartbeat for over $1 seconds, or forced down by an admin.
SELECT host FROM services
 WHERE binary_name = 'nova-compute'
   AND (forced_down OR last_seen_up IS NULL OR last_seen_up < now() - make_interval(secs => $1));

-- name: fail_stranded_builds
-- Run in each cell: builds on the down hosts $1 end in ERROR, with a fault naming the host,
-- each once (whoever updates the row first). Returns them with the request id of their
-- latest action, so that it can be ended.
WITH failed AS (
    UPDATE instances
       SET vm_state = 'error', task_state = NULL, updated_at = now()
     WHERE host = ANY($1::text[]) AND deleted_at IS NULL AND vm_state = 'building'
       AND task_state IS DISTINCT FROM 'deleting'
    RETURNING uuid, host
), faulted AS (
    INSERT INTO instance_faults (instance_uuid, code, message, details, host)
    SELECT uuid, 500, 'Compute host ' || host || ' went down while building the server', '', host
      FROM failed
)
SELECT f.uuid, f.host,
       (SELECT a.request_id FROM instance_actions a
         WHERE a.instance_uuid = f.uuid
         ORDER BY a.start_time DESC, a.id DESC LIMIT 1) AS request_id
  FROM failed f;

-- name: forgotten_boots
-- Run in each cell: boot requests given no host and left unchanged for over $1 seconds (the
-- process that accepted them died before it handed them on), per request.
SELECT array_agg(i.uuid ORDER BY i.launch_index) AS uuids,
       min(i.project_id) AS project_id, min(i.user_id) AS user_id, a.request_id
  FROM instances i
  JOIN instance_actions a ON a.instance_uuid = i.uuid AND a.action = 'create'
 WHERE i.deleted_at IS NULL AND i.vm_state = 'building' AND i.host IS NULL
   AND i.task_state IS DISTINCT FROM 'deleting'
   AND coalesce(i.updated_at, i.created_at) < now() - make_interval(secs => $1)
 GROUP BY i.reservation_id, a.request_id;

-- name: end_open_events
-- The steps of instance $1's action of request $2 its dead host left open end in Error, $3 why.
UPDATE instance_action_events e
   SET finish_time = now(), result = 'Error', traceback = $3
  FROM instance_actions a
 WHERE a.instance_uuid = $1 AND a.request_id = $2 AND e.action_id = a.id AND e.finish_time IS NULL;

-- name: stranded_deletes
-- Run in each cell: deletes handed to the down hosts $1 that they never finished, with the
-- request id of each delete.
SELECT i.uuid, i.host,
       (SELECT a.request_id FROM instance_actions a
         WHERE a.instance_uuid = i.uuid AND a.action = 'delete'
         ORDER BY a.start_time DESC, a.id DESC LIMIT 1) AS request_id
  FROM instances i
 WHERE i.host = ANY($1::text[]) AND i.deleted_at IS NULL AND i.task_state = 'deleting';

-- name: end_stranded_tasks
-- Run in each cell: the tasks $2 (power actions) the down hosts $1 were doing end undone,
-- the server left as last recorded; a rebuild (a task in $3) ends in ERROR with a fault, as
-- Nova's compute sets it at its restart. Each once. Returns them with the task and the
-- request id of their latest action.
WITH stuck AS (
    SELECT uuid, host, task_state FROM instances
     WHERE host = ANY($1::text[]) AND deleted_at IS NULL AND vm_state <> 'building'
       AND (task_state = ANY($2::text[]) OR task_state = ANY($3::text[]))
       FOR UPDATE SKIP LOCKED
), ended AS (
    UPDATE instances i
       SET task_state = NULL, updated_at = now(),
           vm_state = CASE WHEN s.task_state = ANY($3::text[]) THEN 'error' ELSE i.vm_state END
      FROM stuck s
     WHERE i.uuid = s.uuid AND i.task_state = s.task_state
    RETURNING i.uuid, s.host, s.task_state, i.vm_state
), faulted AS (
    INSERT INTO instance_faults (instance_uuid, code, message, details, host)
    SELECT uuid, 500, 'Compute host ' || host || ' went down while rebuilding the server', '', host
      FROM ended WHERE vm_state = 'error'
)
SELECT e.uuid, e.host, e.task_state, e.vm_state,
       (SELECT a.request_id FROM instance_actions a
         WHERE a.instance_uuid = e.uuid
         ORDER BY a.start_time DESC, a.id DESC LIMIT 1) AS request_id
  FROM ended e;

-- name: end_forgotten_tasks
-- Run in each cell: power actions (tasks $2) on the live hosts $1, unchanged for over $3
-- seconds and never begun there (no compute step under the server's latest action: the API
-- process that set the task died before its cast left), end undone, the server as last
-- recorded. Each once. Returns them with the task and the request id of that action.
WITH stuck AS (
    SELECT i.uuid, i.host, i.task_state, a.request_id FROM instances i
     CROSS JOIN LATERAL (
            SELECT id, request_id FROM instance_actions
             WHERE instance_uuid = i.uuid ORDER BY start_time DESC, id DESC LIMIT 1) a
     WHERE i.host = ANY($1::text[]) AND i.deleted_at IS NULL AND i.vm_state <> 'building'
       AND i.task_state = ANY($2::text[])
       AND i.updated_at < now() - make_interval(secs => $3)
       AND NOT EXISTS (SELECT 1 FROM instance_action_events e
                        WHERE e.action_id = a.id AND e.event LIKE 'compute\_%')
       FOR UPDATE OF i SKIP LOCKED
)
UPDATE instances i SET task_state = NULL, updated_at = now()
  FROM stuck s
 WHERE i.uuid = s.uuid AND i.task_state = s.task_state
RETURNING i.uuid, s.host, s.task_state, s.request_id;

-- name: deleted_servers
-- Run in each cell: instances deleted between $2 and $1 seconds ago.
SELECT uuid FROM instances
 WHERE deleted_at < now() - make_interval(secs => $1)
   AND deleted_at > now() - make_interval(secs => $2);

-- name: never_hosted
-- Run in cell0 (instances that never got a host): those last changed between $2 and $1
-- seconds ago and not deleted (deleted_servers has those).
SELECT uuid FROM instances
 WHERE deleted_at IS NULL
   AND coalesce(updated_at, created_at) < now() - make_interval(secs => $1)
   AND coalesce(updated_at, created_at) > now() - make_interval(secs => $2);

-- name: forgotten_deletes
-- Run in each cell: deletes of servers on the hosts $1 (up) left unchanged for over $2 seconds
-- and never begun there (no terminate step under the delete: the API process that marked them
-- died before its cast to the host left), with the request id of each delete.
SELECT i.uuid, i.host, a.request_id, i.project_id, i.user_id
  FROM instances i
  CROSS JOIN LATERAL (
        SELECT id, request_id FROM instance_actions
         WHERE instance_uuid = i.uuid AND action = 'delete'
         ORDER BY start_time DESC, id DESC LIMIT 1) a
 WHERE i.host = ANY($1::text[]) AND i.deleted_at IS NULL AND i.task_state = 'deleting'
   AND i.updated_at < now() - make_interval(secs => $2)
   AND NOT EXISTS (SELECT 1 FROM instance_action_events e
                    WHERE e.action_id = a.id AND e.event = 'compute_terminate_instance');


-- name: forgotten_rebuilds
-- Run in each cell: rebuilds of servers on the hosts $1 (up) left unchanged for over $2 seconds
-- and never begun there (no compute step under the rebuild: the API process that claimed the
-- server and recorded its new image died before its cast to the host left), with the request
-- id of each rebuild and whether it keeps the ephemeral disk.
SELECT i.uuid, i.host, a.request_id, i.project_id, i.user_id, i.preserve_ephemeral
  FROM instances i
  CROSS JOIN LATERAL (
        SELECT id, request_id FROM instance_actions
         WHERE instance_uuid = i.uuid
         ORDER BY start_time DESC, id DESC LIMIT 1) a
 WHERE i.host = ANY($1::text[]) AND i.deleted_at IS NULL AND i.task_state = 'rebuilding'
   AND i.updated_at < now() - make_interval(secs => $2)
   AND NOT EXISTS (SELECT 1 FROM instance_action_events e
                    WHERE e.action_id = a.id AND e.event LIKE 'compute\_%');
