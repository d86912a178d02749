-- Shelve (shelve, shelveOffload, unshelve) and rescue (rescue, unrescue): the API's claims,
-- the conductor's and compute's steps, and what recovery looks for after a restart.

-- name: begin_shelve
-- Claim instance $1 for a shelve from active, stopped, paused or suspended with no task under
-- way: task_state $2 ('shelving', or 'shelving_offloading' for a volume-backed server, which has
-- no disk to write into an image), the image it is written into $3 (NULL: none).
UPDATE instances SET task_state = $2, shelved_image_id = $3, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS NULL AND host IS NOT NULL
   AND vm_state IN ('active', 'stopped', 'paused', 'suspended')
RETURNING *;

-- name: begin_offload
UPDATE instances SET task_state = 'shelving_offloading', updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS NULL AND host IS NOT NULL
   AND vm_state = 'shelved'
RETURNING *;

-- name: begin_unshelve
-- Claim instance $1 for an unshelve (from shelved or shelved_offloaded); $2 its request spec
-- as the scheduler is to read it; when $3, its availability zone becomes $4 (NULL: unpinned).
UPDATE instances
   SET task_state = 'unshelving', request_spec = $2,
       availability_zone = CASE WHEN $3 THEN $4 ELSE availability_zone END, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS NULL
   AND vm_state IN ('shelved', 'shelved_offloaded')
RETURNING *;

-- name: set_task
-- Move instance $1 to task_state $2, only from one of the task_states $3.
UPDATE instances SET task_state = $2, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = ANY($3::text[])
RETURNING *;

-- name: set_shelved
-- The root disk is in its image: SHELVED, guest off ($3 its power state), on host $4; task_state
-- $2 (NULL, or 'shelving_offloading' when it is to leave the host at once).
UPDATE instances
   SET vm_state = 'shelved', task_state = $2, power_state = $3, shelved_at = now(), shelved_host = $4,
       updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL
   AND task_state IN ('shelving', 'shelving_image_pending_upload', 'shelving_image_uploading')
RETURNING *;

-- name: set_offloaded
-- Off its host: no host, no node, no guest; shelved_at and shelved_host say when and where
-- from (a volume-backed server comes here straight from its shelve).
UPDATE instances
   SET vm_state = 'shelved_offloaded', task_state = NULL, host = NULL, node = NULL, power_state = $2,
       shelved_at = coalesce(shelved_at, now()), shelved_host = coalesce(shelved_host, $3),
       updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = 'shelving_offloading'
RETURNING *;

-- name: set_unshelve_host
-- The conductor's pick for an offloaded server being unshelved.
UPDATE instances SET host = $2, node = $3, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = 'unshelving' AND vm_state = 'shelved_offloaded'
RETURNING *;

-- name: set_unshelved
-- ACTIVE again; shelved_image_id stays until that image is deleted (forget_shelved_image), so a
-- restart in between still finds it to delete (leftover_shelved_images).
UPDATE instances
   SET vm_state = 'active', task_state = NULL, power_state = 1, shelved_at = NULL,
       shelved_host = NULL, launched_at = coalesce(launched_at, now()), updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = 'unshelving'
RETURNING *;

-- name: unshelve_failed
-- An unshelve that did not happen: still shelved (offloaded: off any host again), no task.
UPDATE instances
   SET task_state = NULL,
       host = CASE WHEN vm_state = 'shelved_offloaded' THEN NULL ELSE host END,
       node = CASE WHEN vm_state = 'shelved_offloaded' THEN NULL ELSE node END,
       updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = 'unshelving'
RETURNING *;

-- name: release
-- No task any more (work that could not go ahead, or failed), from one of the task_states $2.
UPDATE instances SET task_state = NULL, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = ANY($2::text[])
RETURNING *;

-- name: forget_shelved_image
UPDATE instances SET shelved_image_id = NULL, updated_at = now()
 WHERE uuid = $1 AND shelved_image_id = $2;

-- name: leftover_shelved_images
-- Servers on host $1 unshelved whose shelved image a restart kept from being deleted.
SELECT uuid, shelved_image_id FROM instances
 WHERE host = $1 AND deleted_at IS NULL AND shelved_image_id IS NOT NULL AND task_state IS NULL
   AND vm_state NOT IN ('shelved', 'shelved_offloaded');

-- name: interrupted_on_host
-- Shelves, offloads, unshelves, rescues and unrescues a restart interrupted on host $1, with
-- the request id of their latest action.
SELECT i.uuid, i.vm_state, i.task_state, i.node, i.shelved_image_id,
       (SELECT a.request_id FROM instance_actions a
         WHERE a.instance_uuid = i.uuid
         ORDER BY a.start_time DESC, a.id DESC LIMIT 1) AS request_id
  FROM instances i
 WHERE i.host = $1 AND i.deleted_at IS NULL
   AND i.task_state IN ('shelving', 'shelving_image_pending_upload', 'shelving_image_uploading',
                        'shelving_offloading', 'unshelving', 'rescuing', 'unrescuing')
 ORDER BY i.updated_at;

-- name: unscheduled_unshelves
-- Unshelves of offloaded servers accepted but never given a host (the conductor's part was
-- interrupted).
SELECT i.uuid, i.project_id, i.user_id,
       (SELECT a.request_id FROM instance_actions a
         WHERE a.instance_uuid = i.uuid
         ORDER BY a.start_time DESC, a.id DESC LIMIT 1) AS request_id
  FROM instances i
 WHERE i.deleted_at IS NULL AND i.task_state = 'unshelving' AND i.vm_state = 'shelved_offloaded'
   AND i.host IS NULL;

-- name: due_for_offload
-- Servers shelved on host $1 longer than $2 seconds ago, with no task under way.
SELECT uuid, project_id, user_id FROM instances
 WHERE host = $1 AND deleted_at IS NULL AND vm_state = 'shelved' AND task_state IS NULL
   AND shelved_at < now() - make_interval(secs => $2);

-- name: begin_rescue
-- Claim instance $1 for a rescue (from active, stopped or error, no task under way), booting
-- from image $2.
UPDATE instances SET task_state = 'rescuing', rescue_image_ref = $2, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS NULL AND host IS NOT NULL
   AND vm_state IN ('active', 'stopped', 'error')
RETURNING *;

-- name: set_rescued
UPDATE instances SET vm_state = 'rescued', task_state = NULL, power_state = 1, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = 'rescuing'
RETURNING *;

-- name: begin_unrescue
UPDATE instances SET task_state = 'unrescuing', updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state IS NULL AND host IS NOT NULL
   AND vm_state = 'rescued'
RETURNING *;

-- name: set_unrescued
UPDATE instances
   SET vm_state = 'active', task_state = NULL, power_state = 1, rescue_image_ref = NULL, updated_at = now()
 WHERE uuid = $1 AND deleted_at IS NULL AND task_state = 'unrescuing'
RETURNING *;
