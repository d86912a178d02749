-- Instance rows, faults and the action log, shared by api, conductor and compute.

-- name: get
SELECT * FROM instances WHERE uuid = $1 AND deleted_at IS NULL;

-- name: get_for_update
-- The row, locked to the end of the caller's transaction.
SELECT * FROM instances WHERE uuid = $1 AND deleted_at IS NULL FOR UPDATE;

-- name: get_any
SELECT * FROM instances WHERE uuid = $1;

-- name: set_state
-- Compare-and-swap on task_state: $5 true means "only if task_state is still $6".
UPDATE instances
   SET vm_state = coalesce($2, vm_state),
       task_state = $3,
       power_state = coalesce($4, power_state),
       updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL
   AND (NOT $5 OR task_state IS NOT DISTINCT FROM $6)
RETURNING *;

-- name: set_host
-- The conductor records where an instance lives, unless a delete got there first.
UPDATE instances
   SET host = $2, node = $3, task_state = 'spawning', updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS DISTINCT FROM 'deleting'
RETURNING *;

-- name: set_active
-- The instance ACTIVE and RUNNING (launched now, unless it was before), unless a delete got
-- there first; $2 is the task_state it is left in (NULL, or 'powering-off' when a rebuild
-- stops it again). When it did become ACTIVE, also the end of the action of request $3 (a
-- build's; NULL: none). Coalesced (db/coalesce.py): each $n is an array, one element per
-- instance, and `ord` says which instance a row is.
WITH w AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[]) WITH ORDINALITY AS w(uuid, task_state, request_id, ord)
), active AS (
    UPDATE instances i
       SET vm_state = 'active', task_state = w.task_state, power_state = 1,
           launched_at = coalesce(i.launched_at, now()), updated_at = now()
      FROM w
     WHERE i.uuid = ANY ($1::uuid[]) AND i.uuid = w.uuid
       AND i.deleted_at IS NULL AND i.task_state IS DISTINCT FROM 'deleting'
    RETURNING i.*, w.ord
), finished AS (
    UPDATE instance_actions ia SET finish_time = now(), updated_at = now()
      FROM w JOIN active a ON a.ord = w.ord
     WHERE ia.instance_uuid = ANY ($1::uuid[]) AND ia.instance_uuid = w.uuid
       AND ia.request_id = w.request_id
)
SELECT * FROM active;

-- name: get_for_build
-- The instances $1 that compute is asked to build. Coalesced (db/coalesce.py): $1 is an
-- array, one element per instance, and `ord` says which instance a row is.
SELECT i.*, w.ord
  FROM unnest($1::uuid[]) WITH ORDINALITY AS w(uuid, ord)
  JOIN instances i ON i.uuid = w.uuid
 WHERE i.uuid = ANY ($1::uuid[]) AND i.deleted_at IS NULL;

-- name: set_config_drive
-- The instance $1 got a config drive though its request did not ask for one (its image or the
-- host wants it): recorded, as Nova's configdrive.update_instance does, so it shows.
UPDATE instances SET config_drive = 'True', updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL;

-- name: set_network_info
-- The ports of each instance $1 (as JSON text $2: an array of lists would be read as one
-- array of two dimensions). Coalesced (db/coalesce.py): each $n is an array, one element per
-- instance; `ord` as in set_active.
WITH w AS (
    SELECT * FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS w(uuid, network_info, ord)
)
UPDATE instances i SET network_info = w.network_info::jsonb, updated_at = now()
  FROM w
 WHERE i.uuid = ANY ($1::uuid[]) AND i.uuid = w.uuid AND i.deleted_at IS NULL
RETURNING w.ord;

-- name: mark_deleting
-- Returns the row as it was decided: the host tells the API who must finish the delete.
UPDATE instances SET task_state = 'deleting', updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL
RETURNING *;

-- name: mark_deleted
UPDATE instances
   SET vm_state = 'deleted', task_state = NULL, power_state = 0,
       terminated_at = now(), deleted_at = now(), updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL
RETURNING uuid;

-- name: add_fault
INSERT INTO instance_faults (instance_uuid, code, message, details, host)
VALUES ($1, $2, $3, $4, $5);

-- name: latest_fault
SELECT * FROM instance_faults WHERE instance_uuid = $1 ORDER BY id DESC LIMIT 1;

-- name: start_action
INSERT INTO instance_actions (instance_uuid, request_id, action, project_id, user_id, message)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (instance_uuid, request_id) DO UPDATE SET updated_at = now()
RETURNING id;

-- name: finish_action
UPDATE instance_actions SET finish_time = now(), updated_at = now(), message = coalesce($3, message)
 WHERE instance_uuid = $1 AND request_id = $2;

-- name: start_event
-- Event $3 of instance $1's action of request $2 started, on host $4; `id` is the event's
-- (no row: there is no such action). Coalesced (db/coalesce.py): each $n is an array, one
-- element per call, and `ord` says which call a row answers. Each call's action is one probe
-- of its unique key (LATERAL … LIMIT 1): as a join, the generic plan hashed the whole table
-- until it held tens of thousands of actions. An instance is in a statement once, so an
-- action is too, and `action_id` says which call an event row is.
WITH w AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[])
        WITH ORDINALITY AS w(uuid, request_id, event, host, ord)
), found AS (
    SELECT w.ord, w.event, w.host, a.id AS action_id FROM w
     CROSS JOIN LATERAL (SELECT a.id FROM instance_actions a
                          WHERE a.instance_uuid = w.uuid AND a.request_id = w.request_id LIMIT 1) a
), started AS (
    INSERT INTO instance_action_events (action_id, event, host)
    SELECT action_id, event, host FROM found ORDER BY ord
    RETURNING id, action_id
)
SELECT s.id, f.ord FROM started s JOIN found f ON f.action_id = s.action_id;

-- name: record_steps
-- Steps of instance $1's action of request $2 on host $3 that have ended, recorded at once
-- ($4: JSON text, an array of {event, start_time, finish_time, result, traceback} in the
-- order they started): one statement, one row each, where start_event and finish_event
-- would write each twice. No row: there is no such action. Coalesced, as start_event.
WITH w AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[])
        WITH ORDINALITY AS w(uuid, request_id, host, steps, ord)
), found AS (
    SELECT w.ord, w.host, w.steps, a.id AS action_id FROM w
     CROSS JOIN LATERAL (SELECT a.id FROM instance_actions a
                          WHERE a.instance_uuid = w.uuid AND a.request_id = w.request_id LIMIT 1) a
), recorded AS (
    INSERT INTO instance_action_events (action_id, event, host, start_time, finish_time, result, traceback)
    SELECT f.action_id, s.event, f.host, s.start_time, s.finish_time, s.result, s.traceback
      FROM found f
     CROSS JOIN LATERAL ROWS FROM (jsonb_to_recordset(f.steps::jsonb) AS (
               event text, start_time timestamptz, finish_time timestamptz, result text, traceback text))
           WITH ORDINALITY AS s(event, start_time, finish_time, result, traceback, n)
     ORDER BY f.ord, s.n
    RETURNING action_id
)
SELECT f.ord FROM found f WHERE f.action_id IN (SELECT action_id FROM recorded);

-- name: finish_event
-- Event $1 finished with result $2 (and traceback $3). Coalesced, as start_event.
WITH w AS (
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) WITH ORDINALITY AS w(id, result, traceback, ord)
)
UPDATE instance_action_events e SET finish_time = now(), result = w.result, traceback = w.traceback
  FROM w
 WHERE e.id = ANY ($1::bigint[]) AND e.id = w.id
RETURNING w.ord;

-- name: list_actions
SELECT * FROM instance_actions WHERE instance_uuid = $1 ORDER BY start_time DESC, id DESC;

-- name: get_action
SELECT * FROM instance_actions WHERE instance_uuid = $1 AND request_id = $2;

-- name: list_events
SELECT * FROM instance_action_events WHERE action_id = $1 ORDER BY id;

-- name: in_flight_builds
-- Instances a restart left half-built: no host yet (conductor resumes) or on a host.
SELECT * FROM instances
 WHERE deleted_at IS NULL AND (vm_state = 'building' OR task_state = 'deleting');

-- name: release_for_reschedule
-- A build failed on host $2: hand the instance back to the conductor with no host, unless a
-- delete took it over.
UPDATE instances
   SET host = NULL, node = NULL, task_state = 'scheduling', power_state = 0, updated_at = now()
 WHERE uuid = $1 AND host = $2 AND deleted_at IS NULL AND task_state IS DISTINCT FROM 'deleting'
RETURNING uuid;

-- name: replace_network_info
-- The ports of instance $1 as the network role recomputed them (its floating IPs).
UPDATE instances SET network_info = $2::jsonb, updated_at = now() WHERE uuid = $1 AND deleted_at IS NULL;

-- name: showing_floating_ips
-- The live instances whose network_info shows a floating IP on some port.
SELECT uuid FROM instances WHERE deleted_at IS NULL AND network_info @? '$[*].floating_ips';

-- name: get_many
-- The live instances $1, by launch index (what a boot wrote, for the post_create hooks).
SELECT * FROM instances WHERE uuid = ANY ($1::uuid[]) AND deleted_at IS NULL ORDER BY launch_index;
