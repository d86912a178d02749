-- quota_limits_shared: take a project's quota lock SHARED and read its limits (its own, else
-- the default class's: project_limits), as a jsonb object resource -> hard limit. What a boot
-- (quota_lock_for_boot) and a request adding one counted thing (quota_lock_to_count) begin
-- with; a quota update takes the same lock exclusively, so it waits for them and they read
-- what it left. The limits are read in a statement of their own, whose snapshot is taken
-- after the lock was granted (a VOLATILE PL/pgSQL function takes one per statement).
CREATE OR REPLACE FUNCTION quota_limits_shared(project text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    limits jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('quota:' || project, 0));
    SELECT coalesce(jsonb_object_agg(l.resource, l.hard_limit), '{}'::jsonb) INTO limits
      FROM project_limits(project) l;
    RETURN limits;
END
$$;
