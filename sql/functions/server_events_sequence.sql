-- A pass of the sequencer (server_events_number.sql) that also answers the rows it numbered,
-- as server_events.sql `read` does, oldest first: for a process with streams to hand them to.
CREATE OR REPLACE FUNCTION server_events_sequence(lock_key bigint)
RETURNS TABLE (seq bigint, kind text, instance_uuid text, project_id text, name text, vm_state text,
               task_state text, power_state integer, host text, locked boolean, image_ref text,
               flavor_name text, network_info jsonb, created timestamptz, updated timestamptz,
               deleted boolean, request_id text, action text, start_time timestamptz,
               finish_time timestamptz, message text, event text, result text, code integer, details text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    pass record;
BEGIN
    -- Its own statement: the one below then sees the positions it gave.
    SELECT * INTO pass FROM server_events_number(lock_key);
    RETURN QUERY
    SELECT b.first + e.pos - 1, e.kind, e.instance_uuid::text, e.project_id, e.name, e.vm_state, e.task_state,
           e.power_state, e.host, e.locked, e.image_ref, e.flavor_name, e.network_info, e.created,
           e.updated, e.deleted, e.request_id, e.action, e.start_time, e.finish_time, e.message, e.event,
           e.result, e.code, e.details
      FROM server_event_batches b JOIN server_events e ON e.batch = b.id
     WHERE b.first BETWEEN pass.first AND pass.last
     ORDER BY b.first, e.pos;
END;
$$;
