-- The compute API's reads and writes of instances (shared state changes live in instances.sql).

-- name: insert_many
-- Boot requests' instances (one user's) with their `create` actions, in one statement: one
-- element per instance in each of $1..$23 (api/server_create.py InstanceRows.columns() names
-- them: a request's own values repeated for each of its instances; the JSON ones, and the
-- tags, as JSON text). Returns the project's ($25) usage as this statement's snapshot saw it,
-- without the new instances: the caller adds them (the recount that catches a writer that did
-- not take the quota lock), counted as quotas.instance_usage counts; zeros when $24 is false
-- (no limit to check: nothing is counted, as no project is NULL).
WITH t AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::integer[], $5::text[], $6::text[], $7::text[],
                         $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
                         $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[],
                         $20::text[], $21::text[], $22::text[], $23::boolean[])
        AS t(uuid, name, hostname, launch_index, project_id, user_id, reservation_id, flavor, image_ref,
             request_spec, requested_networks, key_name, user_data, metadata, availability_zone, config_drive,
             access_ip_v4, access_ip_v6, key_data, tags, description, request_id, auto_disk_config)
), new AS (
    INSERT INTO instances (uuid, display_name, hostname, project_id, user_id, reservation_id, launch_index,
                           flavor, image_ref, request_spec, requested_networks, key_name, user_data, metadata,
                           availability_zone, config_drive, access_ip_v4, access_ip_v6, key_data, tags,
                           description, vm_state, task_state, auto_disk_config)
    SELECT t.uuid, t.name, t.hostname, t.project_id, t.user_id, t.reservation_id, t.launch_index, t.flavor::jsonb,
           t.image_ref, t.request_spec::jsonb, t.requested_networks::jsonb, t.key_name, t.user_data,
           t.metadata::jsonb, t.availability_zone, t.config_drive, t.access_ip_v4, t.access_ip_v6, t.key_data,
           ARRAY(SELECT jsonb_array_elements_text(t.tags::jsonb)), t.description, 'building', 'scheduling',
           t.auto_disk_config
      FROM t
    RETURNING uuid
), actions AS (
    INSERT INTO instance_actions (instance_uuid, request_id, action, project_id, user_id)
    SELECT t.uuid, t.request_id, 'create', t.project_id, t.user_id FROM new JOIN t ON t.uuid = new.uuid
    ON CONFLICT (instance_uuid, request_id) DO UPDATE SET updated_at = now()
)
SELECT instances, cores, ram FROM project_usage(CASE WHEN $24::bool THEN $25 END);

-- name: list
-- $1 project (NULL: every project), $2 name regex, $3 vm_states (NULL: any), $4 reservation id,
-- $5 host, $6 limit, $7/$8 marker (created_at, uuid) for paging, $9/$10 changed since/before
-- (either one lists deleted servers too, as Nova's polling clients expect), $11 flavor id,
-- $12 image id, $13 a regex one of its fixed IPs must match from its start (Nova's `ip`/`ip6`:
-- Python's re.match on each fixed address), $14 task_states (NULL: any; a status such as
-- REBOOT names vm_state and task_state both). {columns}: what the
-- caller shows (api/handlers/servers.py): a summary list needs three, a detail list every one and the fault.
SELECT {columns}
  FROM instances i
  -- the vm_state test inside: a one-time filter, so no other row probes instance_faults
  LEFT JOIN LATERAL (SELECT * FROM instance_faults WHERE i.vm_state = 'error' AND instance_uuid = i.uuid
                      ORDER BY id DESC LIMIT 1) f ON true
 WHERE (i.deleted_at IS NULL OR $9::timestamptz IS NOT NULL OR $10::timestamptz IS NOT NULL)
   AND ($9::timestamptz IS NULL OR i.updated_at >= $9)
   AND ($10::timestamptz IS NULL OR i.updated_at <= $10)
   AND ($1::text IS NULL OR i.project_id = $1)
   AND ($2::text IS NULL OR i.display_name ~ $2)
   AND ($3::text[] IS NULL OR i.vm_state = ANY ($3))
   AND ($14::text[] IS NULL OR i.task_state = ANY ($14))
   AND ($4::text IS NULL OR i.reservation_id = $4)
   AND ($5::text IS NULL OR i.host = $5)
   AND ($7::timestamptz IS NULL OR (i.created_at, i.uuid) < ($7, $8::uuid))
   AND ($11::text IS NULL OR i.flavor->>'id' = $11)
   AND ($12::text IS NULL OR i.image_ref = $12)
   AND ($13::text IS NULL OR EXISTS (
           SELECT 1 FROM jsonb_array_elements(i.network_info) vif,
                         jsonb_array_elements(coalesce(vif->'ips', '[]'::jsonb)) ip
            WHERE ip->>'address' ~ ('^(?:' || $13 || ')')))
 ORDER BY i.created_at DESC, i.uuid DESC
 LIMIT $6;

-- name: get_with_fault
-- One server as GET /servers/{id} shows it, with its latest fault.
SELECT i.*, f.message AS fault_message, f.code AS fault_code, f.details AS fault_details,
       f.created_at AS fault_created_at
  FROM instances i
  LEFT JOIN LATERAL (SELECT * FROM instance_faults WHERE instance_uuid = i.uuid
                      ORDER BY id DESC LIMIT 1) f ON i.vm_state = 'error'
 WHERE i.uuid = $1 AND i.deleted_at IS NULL;

-- name: marker
SELECT created_at, uuid FROM instances WHERE uuid = $1;

-- name: visible_uuids
-- Which of the instances $1 exist and the caller may name ($2 project; NULL: admin, any).
SELECT uuid FROM instances
 WHERE uuid = ANY($1::uuid[]) AND deleted_at IS NULL AND ($2::text IS NULL OR project_id = $2);

-- name: host_zone
-- The availability zone of compute host $1 (NULL when it has no service row).
SELECT zone FROM services WHERE binary_name = 'nova-compute' AND host = $1;

-- name: pin_zone
-- PUT /servers/{id} from 2.104: pin server $1 to availability zone $2, or unpin it (NULL),
-- for the server's row and for the request spec its later moves are scheduled by.
UPDATE instances
   SET availability_zone = $2,
       request_spec = jsonb_set(request_spec, '{availability_zone}', coalesce(to_jsonb($2::text), 'null'::jsonb)),
       updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL;

-- name: zone_exists
-- Whether some compute service is in availability zone $1.
SELECT EXISTS (SELECT 1 FROM services WHERE binary_name = 'nova-compute' AND zone = $1);

-- name: update
-- PUT /servers/{id}: each of $2..$6 only when $7..$11 says it was given; $12 the disk
-- config (AUTO: true), when not NULL.
UPDATE instances
   SET display_name = CASE WHEN $7 THEN $2 ELSE display_name END,
       hostname     = CASE WHEN $8 THEN $3 ELSE hostname END,
       description  = CASE WHEN $9 THEN $4 ELSE description END,
       access_ip_v4 = CASE WHEN $10 THEN $5 ELSE access_ip_v4 END,
       access_ip_v6 = CASE WHEN $11 THEN $6 ELSE access_ip_v6 END,
       auto_disk_config = coalesce($12, auto_disk_config),
       updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL
RETURNING uuid;
