-- One pass of the event stream's sequencer (api/event_stream.py) in one statement: under the
-- sequencer's lock (held to the commit), the committed events that have no position yet get
-- the next ones, in id order, and the counter moves past them; every API process is told
-- when some did. Answers those rows as server_events.sql `read` does, in no particular order.
-- Each statement here takes a new snapshot: what a sequencer that held the lock before
-- committed is seen. Rows still uncommitted are not: they get theirs in a later pass, after
-- every row seen here, so a reader of `seq > cursor` never skips one.
CREATE OR REPLACE FUNCTION server_events_sequence(lock_key bigint)
RETURNS TABLE (seq bigint, kind text, instance_uuid text, project_id text, name text, vm_state text,
               task_state text, power_state integer, host text, locked boolean, image_ref text,
               flavor_name text, network_info jsonb, created timestamptz, updated timestamptz,
               deleted boolean, request_id text, action text, start_time timestamptz,
               finish_time timestamptz, message text, event text, result text, code integer, details text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    RETURN QUERY
    WITH pending AS (
        SELECT p.id, row_number() OVER (ORDER BY p.id) AS n FROM server_events p WHERE p.seq IS NULL
    ), moved AS (
        UPDATE server_event_counter c SET last = c.last + (SELECT count(*) FROM pending)
         WHERE EXISTS (SELECT FROM pending)
        RETURNING c.last - (SELECT count(*) FROM pending) AS base
    )
    UPDATE server_events e SET seq = moved.base + pending.n
      FROM pending, moved
     WHERE e.id = pending.id
    RETURNING e.seq, e.kind, e.instance_uuid::text, e.project_id, e.name, e.vm_state, e.task_state,
              e.power_state, e.host, e.locked, e.image_ref, e.flavor_name, e.network_info, e.created,
              e.updated, e.deleted, e.request_id, e.action, e.start_time, e.finish_time, e.message, e.event,
              e.result, e.code, e.details;
    IF FOUND THEN
        PERFORM pg_notify('nova_async_server_events_seq', '');
    END IF;
END;
$$;
