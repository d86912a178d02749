-- project_limits: a project's limits, resource by resource: its own where an admin set one
-- (quota_limits), else the default quota class's (quota_class_limits, os-quota-class-sets).
-- Resources with neither are absent: the [quota] settings apply to them.
CREATE OR REPLACE FUNCTION project_limits(project text)
RETURNS TABLE (resource text, hard_limit int)
LANGUAGE sql STABLE AS $$
    SELECT q.resource, q.hard_limit FROM quota_limits q WHERE q.project_id = project
    UNION ALL
    SELECT c.resource, c.hard_limit FROM quota_class_limits c
     WHERE c.class_name = 'default'
       AND NOT EXISTS (SELECT 1 FROM quota_limits q WHERE q.project_id = project AND q.resource = c.resource)
$$;
