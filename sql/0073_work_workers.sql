-- phase: expand
-- 0073: which process does the work a row has in flight, so that recovery in another copy of
-- the role leaves a live process's work alone (several `serve` processes share this database).
-- `worker` is the incarnation (db/session_locks.py: a uuid new at each start, whose session
-- lock the process holds while it runs) that set the row's in-flight state: an image being
-- uploaded (status 'saving'), an import task (pending, processing), a volume or snapshot being
-- made, deleted or extended. Recovery treats such a row as interrupted only when that
-- process's lock is free (it died); NULL (a row from before this migration, or a process
-- without locks) is what a process's start-up recovery takes, as it always did.
-- Expand only: a release before it neither reads nor writes the columns.
ALTER TABLE images ADD COLUMN worker uuid;
ALTER TABLE image_tasks ADD COLUMN worker uuid;
ALTER TABLE volumes ADD COLUMN worker uuid;
ALTER TABLE volume_snapshots ADD COLUMN worker uuid;
