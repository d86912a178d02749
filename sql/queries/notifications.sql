-- What a notification tells of: an instance as it is now, with its volumes.

-- name: instance
-- The row (deleted or not: delete.end tells of a deleted one) and its volume mappings in the
-- same round trip, in the order Nova lists them.
SELECT i.*,
       coalesce((SELECT jsonb_agg(jsonb_build_object(
                          'device_name', b.device_name, 'boot_index', b.boot_index,
                          'delete_on_termination', b.delete_on_termination,
                          'volume_id', b.volume_id, 'tag', b.tag)
                        ORDER BY b.boot_index NULLS LAST, b.created_at, b.id)
                   FROM block_device_mappings b
                  WHERE b.instance_uuid = i.uuid AND b.volume_id IS NOT NULL), '[]'::jsonb) AS notification_bdms
  FROM instances i
 WHERE i.uuid = $1;
