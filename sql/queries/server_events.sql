-- The public event stream (api/event_stream.py) over each cell's server_events (0069), numbered
-- by batch (0076): a row's position is its batch's first plus its place in it.

-- name: sequence
-- A pass of the sequencer, with the rows it numbered (sql/functions/server_events_sequence.sql):
-- $1 its lock.
SELECT * FROM server_events_sequence($1);

-- name: number
-- A pass of the sequencer, positions only (sql/functions/server_events_number.sql): $1 its lock.
SELECT first, last FROM server_events_number($1);

-- name: head
-- The last position given (every position up to it is committed).
SELECT last FROM server_event_counter;

-- name: oldest
SELECT min(first) FROM server_event_batches;

-- name: prune
-- Keep the newest $1 positions, and the rest of a batch that holds one of them: the batches
-- wholly before them go, with their rows.
WITH gone AS (
    DELETE FROM server_event_batches
     WHERE first <= (SELECT last FROM server_event_counter) - $1
       AND first + size - 1 <= (SELECT last FROM server_event_counter) - $1
    RETURNING id
)
DELETE FROM server_events WHERE batch = ANY (ARRAY(SELECT id FROM gone));

-- name: read
-- Positions ($1, $2], of one project ($3) and one server ($4) when given, oldest first: the
-- numbered batches from the one that holds position $1 + 1 to the one that holds $2.
SELECT b.first + e.pos - 1 AS seq, e.kind, e.instance_uuid::text, e.project_id, e.name, e.vm_state,
       e.task_state, e.power_state, e.host, e.locked, e.image_ref, e.flavor_name, e.network_info, e.created,
       e.updated, e.deleted, e.request_id, e.action, e.start_time, e.finish_time, e.message, e.event, e.result,
       e.code, e.details, e.created_at
  FROM server_event_batches b JOIN server_events e ON e.batch = b.id
 WHERE b.first >= coalesce((SELECT max(f.first) FROM server_event_batches f WHERE f.first <= $1 + 1), 0)
   AND b.first <= $2
   AND e.pos > $1 - b.first + 1 AND e.pos <= $2 - b.first + 1
   AND ($3::text IS NULL OR e.project_id = $3)
   AND ($4::uuid IS NULL OR e.instance_uuid = $4)
 ORDER BY b.first, e.pos
 LIMIT $5;
