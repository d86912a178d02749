-- An instance's block device mappings (Nova's block_device_mapping), in its cell database.

-- name: insert
INSERT INTO block_device_mappings (id, instance_uuid, source_type, destination_type, boot_index, device_name,
                                   disk_bus, device_type, guest_format, image_id, snapshot_id, volume_id,
                                   volume_size, volume_type, delete_on_termination, tag, attachment_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
RETURNING *;

-- name: of_instance
SELECT * FROM block_device_mappings WHERE instance_uuid = $1
 ORDER BY boot_index NULLS LAST, created_at, id;

-- name: of_instances
-- of_instance for the builds that read theirs at once, coalesced (db/coalesce.py, many: $1
-- one uuid per call, `ord` the call's place).
SELECT b.*, w.ord FROM unnest($1::uuid[]) WITH ORDINALITY AS w(uuid, ord)
  JOIN block_device_mappings b ON b.instance_uuid = w.uuid
 WHERE b.instance_uuid = ANY ($1::uuid[])
 ORDER BY w.ord, b.boot_index NULLS LAST, b.created_at, b.id;

-- name: export_of_instance
-- An instance's mappings as JSON, moved with it into another cell (db/cells.py move).
SELECT coalesce(jsonb_agg(to_jsonb(b)), '[]') FROM block_device_mappings b WHERE instance_uuid = $1;

-- name: import_rows
INSERT INTO block_device_mappings
SELECT (jsonb_populate_record(NULL::block_device_mappings, b)).* FROM jsonb_array_elements($1::jsonb) AS b;

-- name: volumes_of_instances
SELECT instance_uuid, volume_id, delete_on_termination, device_name, tag, id
  FROM block_device_mappings
 WHERE instance_uuid = ANY ($1::uuid[]) AND destination_type = 'volume' AND volume_id IS NOT NULL
 ORDER BY instance_uuid, created_at, id;

-- name: get
SELECT * FROM block_device_mappings WHERE id = $1;

-- name: get_by_volume
SELECT * FROM block_device_mappings WHERE instance_uuid = $1 AND volume_id = $2;

-- name: attached_volume
-- The mapping that attaches volume $1 to a live server, with that server's host (none: NULL).
SELECT b.*, i.host FROM block_device_mappings b JOIN instances i ON i.uuid = b.instance_uuid
 WHERE b.volume_id = $1 AND b.destination_type = 'volume' AND i.deleted_at IS NULL;

-- name: set_volume
UPDATE block_device_mappings SET volume_id = $2, attachment_id = $3, updated_at = now()
 WHERE id = $1
RETURNING *;

-- name: set_connection
UPDATE block_device_mappings SET connection_info = $2, updated_at = now()
 WHERE id = $1
RETURNING *;

-- name: delete
DELETE FROM block_device_mappings WHERE id = $1;

-- name: volumes_on_host
-- The attached (or being attached/detached) volumes of the instances a host runs that no
-- other work holds (compute/volumes.py recover): builds and tasks recover on their own.
SELECT b.* FROM block_device_mappings b JOIN instances i ON i.uuid = b.instance_uuid
 WHERE i.host = $1 AND i.deleted_at IS NULL AND i.vm_state <> 'building' AND i.task_state IS NULL
   AND b.destination_type = 'volume' AND b.attachment_id IS NOT NULL
 ORDER BY b.instance_uuid, b.created_at, b.id;

-- name: set_delete_on_termination
UPDATE block_device_mappings SET delete_on_termination = $2, updated_at = now()
 WHERE id = $1
RETURNING *;
