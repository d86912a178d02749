-- A server's change for the event stream (0069 server_events): the fields it shows, as this
-- change committed them, and a wake-up for the stream's sequencer. An update only when one of
-- those fields changed (the triggers' WHEN), a soft-deleted row's later updates and a purge
-- of it not at all (its delete was already told). A move between cells (db/cells.py) copies
-- then deletes the same server: it sets nova_async.quiet_events for its transactions, so that
-- neither the copy nor the delete reaches clients, who saw the server all along.
CREATE OR REPLACE FUNCTION server_events_instance() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('nova_async.quiet_events', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        INSERT INTO server_events (kind, instance_uuid, project_id, deleted)
        VALUES ('deleted', OLD.uuid, OLD.project_id, true);
    ELSE
        INSERT INTO server_events (kind, instance_uuid, project_id, name, vm_state, task_state, power_state,
                                   host, locked, image_ref, flavor_name, network_info, created, updated, deleted)
        VALUES ('server', NEW.uuid, NEW.project_id, NEW.display_name, NEW.vm_state, NEW.task_state,
                NEW.power_state, NEW.host, NEW.locked, NEW.image_ref, NEW.flavor->>'name', NEW.network_info,
                NEW.created_at, coalesce(NEW.updated_at, NEW.created_at), NEW.deleted_at IS NOT NULL);
    END IF;
    PERFORM pg_notify('nova_async_server_events', '');
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER instances_server_events_insert AFTER INSERT ON instances
    FOR EACH ROW EXECUTE FUNCTION server_events_instance();
CREATE OR REPLACE TRIGGER instances_server_events_update AFTER UPDATE ON instances
    FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND
                       (OLD.display_name, OLD.vm_state, OLD.task_state, OLD.power_state, OLD.host, OLD.locked,
                        OLD.image_ref, OLD.flavor, OLD.network_info, OLD.deleted_at)
                       IS DISTINCT FROM
                       (NEW.display_name, NEW.vm_state, NEW.task_state, NEW.power_state, NEW.host, NEW.locked,
                        NEW.image_ref, NEW.flavor, NEW.network_info, NEW.deleted_at))
    EXECUTE FUNCTION server_events_instance();
CREATE OR REPLACE TRIGGER instances_server_events_delete AFTER DELETE ON instances
    FOR EACH ROW WHEN (OLD.deleted_at IS NULL) EXECUTE FUNCTION server_events_instance();
