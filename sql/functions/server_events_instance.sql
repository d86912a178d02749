-- Servers' changes for the event stream (0069 server_events): the fields it shows, as the
-- change committed them, and a wake-up for the stream's sequencer. One INSERT per statement
-- (a coalesced write changes many servers at once), from its transition tables: an update
-- only of the servers where one of those fields changed, a soft-deleted row's later updates
-- and a purge of it not at all (its delete was already told). A move between cells
-- (db/cells.py) copies then deletes the same server: it sets nova_async.quiet_events for its
-- transactions, so that neither the copy nor the delete reaches clients, who saw the server
-- all along. The rows of a statement are one batch (0076): `pos` says their order, the
-- sequencer numbers the batch.
CREATE OR REPLACE FUNCTION server_events_instance() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    this_batch bigint;
    told bigint;
BEGIN
    IF current_setting('nova_async.quiet_events', true) = 'on' THEN
        RETURN NULL;
    END IF;
    this_batch := nextval('server_event_batches_id_seq');
    IF TG_OP = 'DELETE' THEN
        INSERT INTO server_events (batch, pos, kind, instance_uuid, project_id, deleted)
        SELECT this_batch, row_number() OVER (ORDER BY o.uuid), 'deleted', o.uuid, o.project_id, true
          FROM old_rows o WHERE o.deleted_at IS NULL;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO server_events (batch, pos, kind, instance_uuid, project_id, name, vm_state, task_state,
                                   power_state, host, locked, image_ref, flavor_name, network_info, created,
                                   updated, deleted)
        SELECT this_batch, row_number() OVER (ORDER BY n.launch_index, n.uuid), 'server', n.uuid, n.project_id,
               n.display_name, n.vm_state, n.task_state, n.power_state, n.host, n.locked, n.image_ref,
               n.flavor->>'name', n.network_info, n.created_at, coalesce(n.updated_at, n.created_at),
               n.deleted_at IS NOT NULL
          FROM new_rows n;
    ELSE
        INSERT INTO server_events (batch, pos, kind, instance_uuid, project_id, name, vm_state, task_state,
                                   power_state, host, locked, image_ref, flavor_name, network_info, created,
                                   updated, deleted)
        SELECT this_batch, row_number() OVER (ORDER BY n.uuid), 'server', n.uuid, n.project_id, n.display_name,
               n.vm_state, n.task_state, n.power_state, n.host, n.locked, n.image_ref, n.flavor->>'name',
               n.network_info, n.created_at, coalesce(n.updated_at, n.created_at), n.deleted_at IS NOT NULL
          FROM new_rows n JOIN old_rows o ON o.uuid = n.uuid
         WHERE o.deleted_at IS NULL
           AND (o.display_name, o.vm_state, o.task_state, o.power_state, o.host, o.locked, o.image_ref,
                o.flavor, o.network_info, o.deleted_at)
               IS DISTINCT FROM
               (n.display_name, n.vm_state, n.task_state, n.power_state, n.host, n.locked, n.image_ref,
                n.flavor, n.network_info, n.deleted_at);
    END IF;
    GET DIAGNOSTICS told = ROW_COUNT;
    IF told > 0 THEN
        INSERT INTO server_event_batches (id, size) VALUES (this_batch, told);
        PERFORM pg_notify('nova_async_server_events', '');
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER instances_server_events_insert AFTER INSERT ON instances
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION server_events_instance();
CREATE OR REPLACE TRIGGER instances_server_events_update AFTER UPDATE ON instances
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION server_events_instance();
CREATE OR REPLACE TRIGGER instances_server_events_delete AFTER DELETE ON instances
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION server_events_instance();
