-- The public event stream (api/event_stream.py) over each cell's server_events (0069).

-- name: lock_sequencer
-- One sequencer at a time per database, whichever API process comes: held to its commit.
SELECT pg_advisory_xact_lock($1);

-- name: sequence
-- Give the committed rows that have no position yet the next positions, in id order, and
-- move the counter past them; answers those rows as `read` does (in no particular order).
-- Rows still uncommitted are not seen: they get theirs in a later pass, after every row seen
-- here, so a reader of `seq > cursor` never skips one. Run under lock_sequencer, in its
-- transaction.
WITH pending AS (
    SELECT id, row_number() OVER (ORDER BY id) AS n FROM server_events WHERE seq IS NULL
), moved AS (
    UPDATE server_event_counter SET last = last + (SELECT count(*) FROM pending)
     WHERE EXISTS (SELECT FROM pending)
    RETURNING last - (SELECT count(*) FROM pending) AS base
)
UPDATE server_events e SET seq = moved.base + pending.n
  FROM pending, moved
 WHERE e.id = pending.id
RETURNING e.seq, e.kind, e.instance_uuid::text, e.project_id, e.name, e.vm_state, e.task_state, e.power_state,
          e.host, e.locked, e.image_ref, e.flavor_name, e.network_info, e.created, e.updated, e.deleted,
          e.request_id, e.action, e.start_time, e.finish_time, e.message, e.event, e.result, e.code, e.details;

-- name: announce
SELECT pg_notify('nova_async_server_events_seq', '');

-- name: head
-- The last position given (every position up to it is committed).
SELECT last FROM server_event_counter;

-- name: oldest
SELECT min(seq) FROM server_events;

-- name: prune
-- Keep the newest $1 positions.
DELETE FROM server_events WHERE seq <= (SELECT last FROM server_event_counter) - $1;

-- name: read
-- Positions ($1, $2], of one project ($3) and one server ($4) when given, oldest first.
SELECT seq, kind, instance_uuid::text, project_id, name, vm_state, task_state, power_state, host, locked,
       image_ref, flavor_name, network_info, created, updated, deleted, request_id, action, start_time,
       finish_time, message, event, result, code, details, created_at
  FROM server_events
 WHERE seq > $1 AND seq <= $2
   AND ($3::text IS NULL OR project_id = $3)
   AND ($4::uuid IS NULL OR instance_uuid = $4)
 ORDER BY seq
 LIMIT $5;
