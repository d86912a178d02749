-- An instance action, one of its events, or a fault written, for the event stream (0069
-- server_events): the fields the stream shows, as written (an action with its latest event;
-- one of its events with its action). A deleted action or fault is not an event: they go
-- with their server, whose delete is. Quiet during a move, as server_events_instance.
CREATE OR REPLACE FUNCTION server_events_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('nova_async.quiet_events', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'instance_actions' THEN
        INSERT INTO server_events (kind, instance_uuid, project_id, ref_id, request_id, action, start_time,
                                   finish_time, message, event, result)
        SELECT 'action', NEW.instance_uuid, NEW.project_id, NEW.id, NEW.request_id, NEW.action, NEW.start_time,
               NEW.finish_time, NEW.message, e.event, e.result
          FROM (SELECT 1) one
          LEFT JOIN LATERAL (SELECT event, result FROM instance_action_events
                              WHERE action_id = NEW.id ORDER BY id DESC LIMIT 1) e ON true;
    ELSIF TG_TABLE_NAME = 'instance_action_events' THEN
        INSERT INTO server_events (kind, instance_uuid, project_id, ref_id, request_id, action, start_time,
                                   finish_time, message, event, result)
        SELECT 'action', a.instance_uuid, a.project_id, a.id, a.request_id, a.action, a.start_time,
               a.finish_time, a.message, NEW.event, NEW.result
          FROM instance_actions a WHERE a.id = NEW.action_id;
    ELSE
        INSERT INTO server_events (kind, instance_uuid, project_id, ref_id, code, message, details, created)
        SELECT 'fault', i.uuid, i.project_id, NEW.id, NEW.code, NEW.message, NEW.details, NEW.created_at
          FROM instances i WHERE i.uuid = NEW.instance_uuid;
    END IF;
    PERFORM pg_notify('nova_async_server_events', '');
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER instance_actions_server_events_insert AFTER INSERT ON instance_actions
    FOR EACH ROW EXECUTE FUNCTION server_events_record();
CREATE OR REPLACE TRIGGER instance_actions_server_events_update AFTER UPDATE ON instance_actions
    FOR EACH ROW WHEN ((OLD.finish_time, OLD.message) IS DISTINCT FROM (NEW.finish_time, NEW.message))
    EXECUTE FUNCTION server_events_record();
CREATE OR REPLACE TRIGGER instance_action_events_server_events_insert AFTER INSERT ON instance_action_events
    FOR EACH ROW EXECUTE FUNCTION server_events_record();
CREATE OR REPLACE TRIGGER instance_action_events_server_events_update AFTER UPDATE ON instance_action_events
    FOR EACH ROW WHEN ((OLD.finish_time, OLD.result) IS DISTINCT FROM (NEW.finish_time, NEW.result))
    EXECUTE FUNCTION server_events_record();
CREATE OR REPLACE TRIGGER instance_faults_server_events AFTER INSERT ON instance_faults
    FOR EACH ROW EXECUTE FUNCTION server_events_record();
