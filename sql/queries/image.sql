-- Images (Glance v2 subset). Who may see what is decided here, in one place per query:
-- $admin sees all; everyone sees public and community images; owners see their own; the
-- members of a shared image see it (in lists: those whose answer is the asked member_status).

-- name: insert_image
INSERT INTO images (id, name, disk_format, container_format, visibility, min_disk, min_ram,
                    protected, os_hidden, owner, tags, properties)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
RETURNING *;

-- name: get_image
SELECT * FROM images WHERE id = $1;

-- name: get_image_for_update
SELECT * FROM images WHERE id = $1 FOR UPDATE;

-- name: list_images
-- $1 admin, $2 caller's project, $3 visibility filter (NULL: all but others' community
-- images; 'all': everything visible), $15 the member status that lists a shared image to a
-- member ('all': any), then optional filters. Every match comes back: the
-- caller's sort keys are chosen per request, so ordering, the marker and the page are
-- applied by store.list_images (an image catalogue is small).
SELECT * FROM images
 WHERE ($1 OR visibility IN ('public', 'community') OR owner = $2
        OR (visibility = 'shared'
            AND EXISTS (SELECT 1 FROM image_members m
                         WHERE m.image_id = images.id AND m.member = $2
                           AND ($15::text = 'all' OR m.status = $15))))
   AND (CASE WHEN $3::text IS NULL THEN visibility <> 'community' OR owner = $2
             WHEN $3 = 'all' THEN true
             ELSE visibility = $3 END)
   AND ($4::uuid[] IS NULL OR id = ANY($4))
   AND ($5::text[] IS NULL OR name = ANY($5))
   AND ($6::text[] IS NULL OR status = ANY($6))
   AND ($7::boolean IS NULL OR os_hidden = $7)
   AND ($8::text IS NULL OR owner = $8)
   AND ($9::text[] IS NULL OR tags @> $9)
   AND properties @> $10::jsonb
   AND ($11::text[] IS NULL OR disk_format = ANY($11))
   AND ($12::text[] IS NULL OR container_format = ANY($12))
   AND ($13::bigint IS NULL OR size >= $13)
   AND ($14::bigint IS NULL OR size <= $14);

-- name: start_upload
-- Only a queued image takes data; 'saving' keeps a second upload out meanwhile. $2: the
-- process doing it (its incarnation; NULL without session locks).
UPDATE images SET status = 'saving', worker = $2, updated_at = now()
 WHERE id = $1 AND status = 'queued'
RETURNING *;

-- name: finish_upload
UPDATE images
   SET status = 'active', size = $2, virtual_size = $3, checksum = $4,
       os_hash_algo = $5, os_hash_value = $6, updated_at = now()
 WHERE id = $1 AND status = 'saving'
RETURNING *;

-- name: abort_upload
UPDATE images SET status = 'queued', updated_at = now()
 WHERE id = $1 AND status = 'saving';

-- name: update_image
UPDATE images
   SET name = $2, visibility = $3, min_disk = $4, min_ram = $5, protected = $6,
       os_hidden = $7, tags = $8, properties = $9, disk_format = $10,
       container_format = $11, owner = $12, updated_at = now()
 WHERE id = $1
RETURNING *;

-- name: delete_image
DELETE FROM images WHERE id = $1 RETURNING id;

-- name: uploads_in_progress
SELECT id, worker FROM images WHERE status = 'saving';

-- name: reset_interrupted_uploads
-- Uploads whose process is gone: those of the dead incarnations $1, and with $2 those no
-- process recorded (a start's recovery: rows from before workers were recorded).
UPDATE images SET status = 'queued', worker = NULL, updated_at = now()
 WHERE status = 'saving' AND (worker = ANY($1::uuid[]) OR (worker IS NULL AND $2))
RETURNING id;

-- name: list_for_compute
-- The compute API's image list (its proxy, before 2.36): what the caller ($1 admin, $2
-- project) may see but others' community images, and shared ones only once accepted (Glance's
-- default list, which Nova's proxy asks for), by exact name ($3), statuses
-- ($4), at least this min_ram and min_disk ($5, $6), holding these properties ($7), changed
-- at or after $8; after the marker ($9, $10), at most $11.
SELECT * FROM images
 WHERE ($1 OR visibility = 'public' OR owner = $2
        OR (visibility = 'shared'
            AND EXISTS (SELECT 1 FROM image_members m
                         WHERE m.image_id = images.id AND m.member = $2 AND m.status = 'accepted')))
   AND ($3::text IS NULL OR name = $3)
   AND ($4::text[] IS NULL OR status = ANY($4))
   AND min_ram >= $5 AND min_disk >= $6
   AND properties @> $7::jsonb
   AND ($8::timestamptz IS NULL OR coalesce(updated_at, created_at) >= $8)
   AND ($9::timestamptz IS NULL OR (created_at, id) < ($9, $10::uuid))
 ORDER BY created_at DESC, id DESC
 LIMIT $11;

-- name: set_properties
UPDATE images SET properties = $2::jsonb, updated_at = now() WHERE id = $1 RETURNING *;

-- name: set_image_tags
-- The image's row is locked by the caller (get_image_for_update) while it decides the list.
UPDATE images SET tags = $2, updated_at = now() WHERE id = $1;

-- name: set_image_status
UPDATE images SET status = $2, updated_at = now() WHERE id = $1 RETURNING *;

-- Image members: the projects a shared image is offered to, and their answers.

-- name: get_member
SELECT * FROM image_members WHERE image_id = $1 AND member = $2;

-- name: list_members
-- $2 NULL: every member (the owner, an admin); else only that project's own membership.
SELECT * FROM image_members
 WHERE image_id = $1 AND ($2::text IS NULL OR member = $2)
 ORDER BY created_at, member;

-- name: count_members
SELECT count(*) FROM image_members WHERE image_id = $1;

-- name: insert_member
INSERT INTO image_members (image_id, member) VALUES ($1, $2) RETURNING *;

-- name: set_member_status
UPDATE image_members SET status = $3, updated_at = now()
 WHERE image_id = $1 AND member = $2
RETURNING *;

-- name: delete_member
DELETE FROM image_members WHERE image_id = $1 AND member = $2 RETURNING member;
