-- What a notification tells of: an instance as it is now, with its volumes.

-- name: instance
-- The columns a payload shows (not the request spec or user data, which can be large), deleted
-- or not (delete.end tells of a deleted instance), and its volume mappings in the same round
-- trip, in the order Nova lists them.
SELECT i.uuid, i.display_name, i.description, i.hostname, i.project_id, i.user_id, i.reservation_id,
       i.flavor, i.image_ref, i.network_info, i.host, i.node, i.vm_state, i.task_state, i.power_state,
       i.key_name, i.key_data, i.metadata, i.availability_zone, i.locked, i.progress, i.auto_disk_config,
       i.tags, i.rescue_image_ref, i.launched_at, i.terminated_at, i.created_at, i.updated_at, i.deleted_at,
       coalesce((SELECT jsonb_agg(jsonb_build_object(
                          'device_name', b.device_name, 'boot_index', b.boot_index,
                          'delete_on_termination', b.delete_on_termination,
                          'volume_id', b.volume_id, 'tag', b.tag)
                        ORDER BY b.boot_index NULLS LAST, b.created_at, b.id)
                   FROM block_device_mappings b
                  WHERE b.instance_uuid = i.uuid AND b.volume_id IS NOT NULL), '[]'::jsonb) AS notification_bdms
  FROM instances i
 WHERE i.uuid = $1;
