-- quota_lock_to_count: the locks a request that adds one kind of thing counted per project
-- (a server group) needs, and its project's limits, in one round trip.
--
-- As a boot (quota_lock_for_boot.sql), it holds the project's quota lock SHARED, so a quota
-- update (exclusive) waits for it and it reads the limits the update left; and then, only
-- when `resource` is limited, a counting lock of that resource's own, exclusively: requests
-- adding the same resource to one project count one at a time, and nothing else waits for
-- them (boots take the project's other counting lock). Same order as a boot's (the quota lock
-- first), so no two transactions can wait on each other in a cycle.
--
-- `fallback`: the configured default for `resource`, which applies where neither the project
-- nor the default quota class has a limit.
CREATE OR REPLACE FUNCTION quota_lock_to_count(project text, resource text, fallback int,
                                               OUT limits jsonb, OUT counting bool)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    limits := quota_limits_shared(project);   -- lock 1, then the limits it guards
    counting := coalesce((limits ->> resource)::int, fallback) >= 0;
    IF counting THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('quota-count:' || resource || ':' || project, 0));
    END IF;
END
$$;
