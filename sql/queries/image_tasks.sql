-- Glance's tasks (image/tasks.py). Tasks are few and short-lived: a list returns every
-- match and image/tasks.py orders and pages it, as image.sql's list does.

-- name: insert_task
-- $5: the process that runs it (its incarnation; NULL without session locks).
INSERT INTO image_tasks (id, type, owner, input, worker)
VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- name: get_task
SELECT * FROM image_tasks WHERE id = $1;

-- name: list_tasks
-- $1 admin, $2 the caller's project, then the optional type and status filters.
SELECT * FROM image_tasks
 WHERE ($1 OR owner = $2)
   AND ($3::text IS NULL OR type = $3)
   AND ($4::text IS NULL OR status = $4);

-- name: list_image_tasks
SELECT * FROM image_tasks WHERE image_id = $1 ORDER BY created_at DESC, id;

-- name: start_task
UPDATE image_tasks SET status = 'processing', updated_at = now()
 WHERE id = $1 AND status = 'pending'
RETURNING *;

-- name: set_task_image
UPDATE image_tasks SET image_id = $2, updated_at = now() WHERE id = $1;

-- name: finish_task
-- $2 'success' or 'failure'. Glance keeps a finished task for task_time_to_live (48 h).
UPDATE image_tasks
   SET status = $2, result = $3, message = $4, updated_at = now(),
       expires_at = now() + interval '48 hours'
 WHERE id = $1 AND status IN ('pending', 'processing')
RETURNING *;

-- name: unfinished_task_workers
SELECT DISTINCT worker FROM image_tasks
 WHERE status IN ('pending', 'processing') AND worker IS NOT NULL;

-- name: fail_unfinished_tasks
-- Tasks whose process is gone, cut off pending or processing: those of the dead incarnations
-- $2, and with $3 those no process recorded (a start's recovery).
UPDATE image_tasks
   SET status = 'failure', result = NULL, message = $1 || status || '.', updated_at = now(),
       expires_at = now() + interval '48 hours'
 WHERE status IN ('pending', 'processing') AND (worker = ANY($2::uuid[]) OR (worker IS NULL AND $3))
RETURNING *;

-- name: delete_task_image
-- The image an unfinished import made, unless its data arrived after all: made by the
-- task, never offered to anyone whole, so protection set in its properties does not keep it.
DELETE FROM images WHERE id = $1 AND status IN ('queued', 'saving')
RETURNING id;
