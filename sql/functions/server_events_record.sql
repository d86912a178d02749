-- Instance actions, their events, and faults written, for the event stream (0069
-- server_events): the fields the stream shows, as written (an action with its latest event;
-- an event with its action, once per action and statement). One INSERT per statement, from
-- its transition tables (a coalesced write records many at once); an update only where what
-- is shown changed. A deleted action or fault is not an event: they go with their server,
-- whose delete is. The rows of a statement are one batch (0076): `pos` says their order, the
-- sequencer numbers the batch.
-- Quiet during a move, as server_events_instance.
CREATE OR REPLACE FUNCTION server_events_record() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    this_batch bigint;
    told bigint;
BEGIN
    IF current_setting('nova_async.quiet_events', true) = 'on' THEN
        RETURN NULL;
    END IF;
    this_batch := nextval('server_event_batches_id_seq');
    IF TG_TABLE_NAME = 'instance_actions' AND TG_OP = 'INSERT' THEN
        INSERT INTO server_events (batch, pos, kind, instance_uuid, project_id, ref_id, request_id, action,
                                   start_time, finish_time, message, event, result)
        SELECT this_batch, row_number() OVER (ORDER BY n.id), 'action', n.instance_uuid, n.project_id, n.id,
               n.request_id, n.action, n.start_time, n.finish_time, n.message, e.event, e.result
          FROM new_rows n
          LEFT JOIN LATERAL (SELECT event, result FROM instance_action_events
                              WHERE action_id = n.id ORDER BY id DESC LIMIT 1) e ON true;
    ELSIF TG_TABLE_NAME = 'instance_actions' THEN
        INSERT INTO server_events (batch, pos, kind, instance_uuid, project_id, ref_id, request_id, action,
                                   start_time, finish_time, message, event, result)
        SELECT this_batch, row_number() OVER (ORDER BY n.id), 'action', n.instance_uuid, n.project_id, n.id,
               n.request_id, n.action, n.start_time, n.finish_time, n.message, e.event, e.result
          FROM new_rows n JOIN old_rows o ON o.id = n.id
          LEFT JOIN LATERAL (SELECT event, result FROM instance_action_events
                              WHERE action_id = n.id ORDER BY id DESC LIMIT 1) e ON true
         WHERE (o.finish_time, o.message) IS DISTINCT FROM (n.finish_time, n.message);
    ELSIF TG_TABLE_NAME = 'instance_action_events' AND TG_OP = 'INSERT' THEN
        -- several events of one action in a statement (instances.Steps): the action once,
        -- with the last of them, as the statement committed it
        INSERT INTO server_events (batch, pos, kind, instance_uuid, project_id, ref_id, request_id, action,
                                   start_time, finish_time, message, event, result)
        SELECT this_batch, row_number() OVER (ORDER BY n.id), 'action', a.instance_uuid, a.project_id, a.id,
               a.request_id, a.action, a.start_time, a.finish_time, a.message, n.event, n.result
          FROM (SELECT DISTINCT ON (action_id) * FROM new_rows ORDER BY action_id, id DESC) n
          JOIN instance_actions a ON a.id = n.action_id;
    ELSIF TG_TABLE_NAME = 'instance_action_events' THEN
        INSERT INTO server_events (batch, pos, kind, instance_uuid, project_id, ref_id, request_id, action,
                                   start_time, finish_time, message, event, result)
        SELECT this_batch, row_number() OVER (ORDER BY n.id), 'action', a.instance_uuid, a.project_id, a.id,
               a.request_id, a.action, a.start_time, a.finish_time, a.message, n.event, n.result
          FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN instance_actions a ON a.id = n.action_id
         WHERE (o.finish_time, o.result) IS DISTINCT FROM (n.finish_time, n.result);
    ELSE
        INSERT INTO server_events (batch, pos, kind, instance_uuid, project_id, ref_id, code, message, details,
                                   created)
        SELECT this_batch, row_number() OVER (ORDER BY n.id), 'fault', i.uuid, i.project_id, n.id, n.code,
               n.message, n.details, n.created_at
          FROM new_rows n JOIN instances i ON i.uuid = n.instance_uuid;
    END IF;
    GET DIAGNOSTICS told = ROW_COUNT;
    IF told > 0 THEN
        INSERT INTO server_event_batches (id, size) VALUES (this_batch, told);
        PERFORM pg_notify('nova_async_server_events', '');
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER instance_actions_server_events_insert AFTER INSERT ON instance_actions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION server_events_record();
CREATE OR REPLACE TRIGGER instance_actions_server_events_update AFTER UPDATE ON instance_actions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION server_events_record();
CREATE OR REPLACE TRIGGER instance_action_events_server_events_insert AFTER INSERT ON instance_action_events
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION server_events_record();
CREATE OR REPLACE TRIGGER instance_action_events_server_events_update AFTER UPDATE ON instance_action_events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION server_events_record();
CREATE OR REPLACE TRIGGER instance_faults_server_events AFTER INSERT ON instance_faults
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION server_events_record();
