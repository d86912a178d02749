-- The conductor's own reads.

-- name: unscheduled_batches
-- Boot requests accepted but never given a host (a restart interrupted them), per request.
SELECT i.reservation_id, i.project_id, i.user_id, a.request_id,
       array_agg(i.uuid ORDER BY i.launch_index) AS uuids
  FROM instances i
  JOIN instance_actions a ON a.instance_uuid = i.uuid AND a.action = 'create'
 WHERE i.deleted_at IS NULL AND i.vm_state = 'building' AND i.host IS NULL
 GROUP BY i.reservation_id, i.project_id, i.user_id, a.request_id;
