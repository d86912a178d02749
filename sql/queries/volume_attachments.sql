-- Volume attachments (volume/attachments.py): every change of an attachment and of its
-- volume's status happens in one transaction that holds the volume's row locked, so a
-- reserve, a volume delete and an extend of the same volume take turns.

-- name: lock_volume
SELECT * FROM volumes WHERE id = $1 FOR UPDATE;

-- name: reserve_volume
-- A volume that is available becomes reserved; a multiattach volume already reserved,
-- attaching or in use keeps its status. Anything else (creating, deleting, extending, in
-- use and not multiattach…) matches no row: a 409 for the caller.
UPDATE volumes SET status = CASE WHEN status = 'available' THEN 'reserved' ELSE status END, updated_at = now()
WHERE id = $1 AND (status = 'available' OR (multiattach AND status IN ('reserved', 'attaching', 'in-use')))
RETURNING *;

-- name: insert_attachment
INSERT INTO volume_attachments (id, volume_id, instance_uuid, project_id, multiattach, attach_mode, made_by)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING *;

-- name: get_attachment
-- The attachment with the status and project of its volume.
SELECT a.*, v.status AS volume_status, v.project_id AS volume_project
  FROM volume_attachments a JOIN volumes v ON v.id = a.volume_id
 WHERE a.id = $1;

-- name: volume_of_attachment
SELECT volume_id FROM volume_attachments WHERE id = $1;

-- name: lock_attachment
-- The attachment, locked, with its volume's status; the caller has locked the volume first
-- (lock_volume): every change here and a volume delete lock volume before attachment, so
-- none of them waits for another in a circle.
SELECT a.*, v.status AS volume_status, v.project_id AS volume_project
  FROM volumes v JOIN volume_attachments a ON a.volume_id = v.id
 WHERE a.id = $1
   FOR UPDATE OF a;

-- name: set_volume_status
-- The volume from one of the states $2 to $3.
UPDATE volumes SET status = $3, updated_at = now()
WHERE id = $1 AND status = ANY($2::text[])
RETURNING *;

-- name: connect_attachment
-- The host's connector and what it gets: reserved → attaching (again for a repeated update;
-- an attached one keeps its status and takes the new connector, as a live migration does).
UPDATE volume_attachments
   SET status = CASE WHEN status = 'attached' THEN 'attached' ELSE 'attaching' END,
       connector = $2, connection_info = $3, attached_host = $4, mountpoint = $5, updated_at = now()
 WHERE id = $1 AND status IN ('reserved', 'attaching', 'attached')
RETURNING *;

-- name: set_attachment_status
UPDATE volume_attachments
   SET status = $3, updated_at = now(),
       attached_at = CASE WHEN $3 = 'attached' THEN coalesce(attached_at, now()) ELSE attached_at END
 WHERE id = $1 AND status = ANY($2::text[])
RETURNING *;

-- name: delete_attachment
DELETE FROM volume_attachments WHERE id = $1 RETURNING *;

-- name: settle_volume_after_delete
-- The attachment gone, the volume's status follows what is left: available with none, else
-- the most advanced of the others (a multiattach volume). A volume in a state that is not
-- about attachments (extending, error…) keeps it: that change settles it when it ends.
UPDATE volumes SET updated_at = now(), status = coalesce(
           (SELECT CASE WHEN bool_or(a.status IN ('attached', 'detaching')) THEN 'in-use'
                        WHEN bool_or(a.status = 'attaching') THEN 'attaching'
                        ELSE 'reserved' END
              FROM volume_attachments a WHERE a.volume_id = volumes.id HAVING count(*) > 0),
           'available')
WHERE id = $1 AND status IN ('reserved', 'attaching', 'in-use', 'detaching')
RETURNING *;

-- name: can_delete_volume
-- What a volume delete's conditional UPDATE must also hold (see attachments.can_delete).
SELECT NOT EXISTS (SELECT 1 FROM volume_attachments WHERE volume_id = $1);

-- name: of_instance
SELECT a.*, v.status AS volume_status, v.project_id AS volume_project
  FROM volume_attachments a JOIN volumes v ON v.id = a.volume_id
 WHERE a.instance_uuid = $1
 ORDER BY a.created_at, a.id;

-- name: visible
-- Attachments of the volumes of project $1 (every project's when $1 is NULL), optionally of
-- one volume ($2), one instance ($3) or in one status ($4).
SELECT a.*, v.status AS volume_status, v.project_id AS volume_project
  FROM volume_attachments a JOIN volumes v ON v.id = a.volume_id
 WHERE ($1::text IS NULL OR v.project_id = $1)
   AND ($2::uuid IS NULL OR a.volume_id = $2)
   AND ($3::uuid IS NULL OR a.instance_uuid = $3)
   AND ($4::text IS NULL OR a.status = $4)
 ORDER BY a.created_at DESC, a.id DESC;

-- name: of_volume
SELECT a.*, v.status AS volume_status, v.project_id AS volume_project
  FROM volume_attachments a JOIN volumes v ON v.id = a.volume_id
 WHERE a.volume_id = $1
 ORDER BY a.created_at, a.id;

-- name: stale_reserved
-- Attachments compute reserved more than $1 seconds ago: an API that died between the
-- reserve and writing the block device mapping leaves one behind.
SELECT id, volume_id, instance_uuid FROM volume_attachments
 WHERE status = 'reserved' AND made_by = 'compute' AND updated_at < now() - make_interval(secs => $1)
 ORDER BY created_at;

-- name: instance_maps_volume
-- (cell database) Whether the instance has a block device mapping for the volume.
SELECT EXISTS (SELECT 1 FROM block_device_mappings WHERE instance_uuid = $1 AND volume_id = $2);
