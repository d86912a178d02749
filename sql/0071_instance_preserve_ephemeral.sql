-- phase: expand
-- 0071: a rebuild's `preserve_ephemeral`, kept on the instance while it is rebuilt, so that a
-- compute host that restarts in the middle (recovery.py redoes the rebuild) still keeps the
-- ephemeral disk the user asked to keep, instead of making it anew. Set with task_state
-- 'rebuilding' (sql/queries/actions.sql begin_rebuild); meaningless at any other time.
-- Expand only: a release before it neither reads nor writes the column.
ALTER TABLE instances ADD COLUMN preserve_ephemeral boolean NOT NULL DEFAULT false;
