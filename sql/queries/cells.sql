-- Cells v2: the API database's mappings (cell_mappings, host_mappings, instance_mappings),
-- and moving an instance that has not been built from one cell's database to another's.

-- name: ensure_cell
INSERT INTO cell_mappings (uuid, name, database_connection) VALUES ($1, $2, $3)
ON CONFLICT (name) DO NOTHING;

-- name: cells
SELECT uuid::text, name, database_connection, disabled FROM cell_mappings ORDER BY name;

-- name: host_cell
SELECT cell_uuid::text FROM host_mappings WHERE host = $1;

-- name: map_host
-- A host keeps the cell it was first mapped to (Nova's discover_hosts does not move hosts).
INSERT INTO host_mappings (host, cell_uuid) VALUES ($1, $2) ON CONFLICT (host) DO NOTHING
RETURNING cell_uuid::text;

-- name: instance_cell
SELECT cell_uuid::text FROM instance_mappings WHERE instance_uuid = $1;

-- name: instance_cell_and_project
SELECT cell_uuid::text, project_id FROM instance_mappings WHERE instance_uuid = $1;

-- name: instance_cells
SELECT instance_uuid::text, cell_uuid::text FROM instance_mappings WHERE instance_uuid = ANY ($1::uuid[]);

-- name: map_instances
INSERT INTO instance_mappings (instance_uuid, cell_uuid, project_id, user_id)
SELECT u, $2, $3, $4 FROM unnest($1::uuid[]) AS u;

-- name: remap_instance
UPDATE instance_mappings SET cell_uuid = $2, updated_at = now() WHERE instance_uuid = $1;

-- name: export_instance
-- An instance with its faults, actions and their events, as JSON, to be written into another
-- cell's database.
SELECT to_jsonb(i) AS instance,
       coalesce((SELECT jsonb_agg(to_jsonb(f)) FROM instance_faults f WHERE f.instance_uuid = i.uuid),
                '[]') AS faults,
       coalesce((SELECT jsonb_agg(to_jsonb(a)) FROM instance_actions a WHERE a.instance_uuid = i.uuid),
                '[]') AS actions,
       coalesce((SELECT jsonb_agg(to_jsonb(e)) FROM instance_action_events e
                   JOIN instance_actions a ON a.id = e.action_id WHERE a.instance_uuid = i.uuid),
                '[]') AS events
  FROM instances i
 WHERE i.uuid = $1;

-- name: lock_instance
SELECT uuid FROM instances WHERE uuid = $1 FOR UPDATE;

-- name: drop_instance
DELETE FROM instances WHERE uuid = $1;

-- name: import_instance
-- What export_instance gave ($1 instance, $2 faults, $3 actions, $4 events). Faults, actions
-- and events take new ids from this database's sequences; events follow their action.
WITH inst AS (
    INSERT INTO instances SELECT (jsonb_populate_record(NULL::instances, $1::jsonb)).*
    RETURNING uuid
), faults AS (
    INSERT INTO instance_faults
    SELECT (jsonb_populate_record(NULL::instance_faults,
                                  f || jsonb_build_object('id', nextval(pg_get_serial_sequence('instance_faults', 'id'))))).*
      FROM jsonb_array_elements($2::jsonb) AS f, inst
), a AS (
    SELECT x AS old, nextval(pg_get_serial_sequence('instance_actions', 'id')) AS new_id
      FROM jsonb_array_elements($3::jsonb) AS x
), actions AS (
    INSERT INTO instance_actions
    SELECT (jsonb_populate_record(NULL::instance_actions, a.old || jsonb_build_object('id', a.new_id))).*
      FROM a, inst
)
INSERT INTO instance_action_events
SELECT (jsonb_populate_record(NULL::instance_action_events,
                              e || jsonb_build_object('id', nextval(pg_get_serial_sequence('instance_action_events', 'id')),
                                                      'action_id', a.new_id))).*
  FROM jsonb_array_elements($4::jsonb) AS e
  JOIN a ON (a.old->>'id')::bigint = (e->>'action_id')::bigint;

-- name: unsettled_instances
-- Instances in this cell that were never built (no host): the ones a crash could have left
-- half-moved between cells, or written without their mapping.
SELECT uuid::text, created_at < now() - interval '60 seconds' AS old
  FROM instances WHERE host IS NULL AND deleted_at IS NULL;

-- name: forget_instances
DELETE FROM instances WHERE uuid = ANY ($1::uuid[]);

-- name: legacy_instances
-- Instances written before cells existed, still in the API database.
SELECT uuid::text, project_id, user_id FROM instances;

-- name: forget_deleted_members
-- Group memberships of servers deleted before cells (the API database's instances).
DELETE FROM server_group_members m USING instances i
 WHERE i.uuid = m.instance_uuid AND i.deleted_at IS NOT NULL;

-- name: export_table
-- Every row of table {table} as JSON ({table} is one of a fixed list in db/cells.py).
SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') FROM {table} t;

-- name: import_table
INSERT INTO {table} SELECT (jsonb_populate_record(NULL::{table}, x)).* FROM jsonb_array_elements($1::jsonb) AS x;

-- name: catch_up_sequence
-- After rows came in with their ids: the sequence of {table}.id continues after them.
SELECT setval(pg_get_serial_sequence('{table}', 'id'), greatest(coalesce(max(id), 0), 1)) FROM {table};

-- name: adopt_mappings
INSERT INTO instance_mappings (instance_uuid, cell_uuid, project_id, user_id)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[])
ON CONFLICT (instance_uuid) DO UPDATE SET cell_uuid = EXCLUDED.cell_uuid, updated_at = now();

-- name: add_cell
INSERT INTO cell_mappings (uuid, name, database_connection) VALUES ($1, $2, $3)
ON CONFLICT (name) DO NOTHING RETURNING uuid::text;

-- name: cell_summary
-- Each cell with the hosts mapped to it and the instances mapped to it.
SELECT c.uuid::text, c.name, c.database_connection, c.disabled,
       (SELECT count(*) FROM host_mappings h WHERE h.cell_uuid = c.uuid) AS hosts,
       (SELECT count(*) FROM instance_mappings m WHERE m.cell_uuid = c.uuid) AS instances
  FROM cell_mappings c
 ORDER BY c.name;

-- name: host_list
SELECT h.host, c.name AS cell FROM host_mappings h JOIN cell_mappings c ON c.uuid = h.cell_uuid
 ORDER BY c.name, h.host;

-- name: quiet_events
-- For the rest of this transaction, what it writes to instances and their records is not an
-- event (sql/functions/server_events_instance.sql): a move's copy and delete of a server.
SELECT set_config('nova_async.quiet_events', 'on', true);
