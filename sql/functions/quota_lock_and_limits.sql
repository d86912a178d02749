-- quota_lock_and_limits: take a project's quota lock and read its limits, in one round trip.
--
-- Kept for the release before, whose server group creation takes it; this one calls
-- quota_lock_to_count instead. A contract migration may drop it once no such release runs.
--
-- The lock serialises whatever holds it for the project, so the time it is held counts; the
-- limits must be read after the lock is granted: a quota update holds the same lock, and a read
-- made before (or in the same statement, whose snapshot predates the wait) could miss what it
-- committed. In a VOLATILE PL/pgSQL function each statement takes its own snapshot (READ
-- COMMITTED), so the SELECT below sees everything committed before the lock was ours.
CREATE OR REPLACE FUNCTION quota_lock_and_limits(project text)
RETURNS TABLE (resource text, hard_limit int)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('quota:' || project, 0));
    RETURN QUERY SELECT l.resource, l.hard_limit FROM project_limits(project) l;
END
$$;
