-- The public event stream (api/event_stream.py) over each cell's server_events (0069).

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
