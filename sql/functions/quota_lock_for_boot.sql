-- quota_lock_for_boot: a boot's quota locks and its project's limits in one round trip, taken
-- so that boots that count nothing do not wait for each other.
--
-- A boot takes two locks:
--   1. the project's quota lock (the same key as lock_project), SHARED. A quota update still
--      takes it exclusively, so it waits for every boot in flight and every later boot waits
--      for it. All boots holding it at the same time therefore read the same limits.
--   2. the project's counting lock, exclusively, only when the limits read under lock 1 limit
--      something the boot adds to. Boots that count are serialised by it. Boots that count
--      nothing skip it and run side by side.
-- Since every boot reads the limits after lock 1 is granted, and limits change only under
-- lock 1 held exclusively, boots that count and boots that do not never run at the same time
-- in one project. The locks are always taken in this order (1, then 2), and a quota update
-- takes only 1, so no two transactions can wait on each other in a cycle.
--
-- $2 names what the boot adds to (instances, cores, ram: the ones with an amount above 0),
-- $3 their configured defaults, which apply where neither the project nor the default quota
-- class has a limit. The answer is one row: the project's limits (its own, else the default
-- class's: project_limits) and whether the boot must count.
CREATE OR REPLACE FUNCTION quota_lock_for_boot(project text, adds text[], defaults int[],
                                    OUT limits jsonb, OUT counting bool)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    limits := quota_limits_shared(project);   -- lock 1, then the limits it guards
    counting := EXISTS (SELECT 1 FROM unnest(adds, defaults) AS a(resource, fallback)
                         WHERE coalesce((limits ->> a.resource)::int, a.fallback) >= 0);
    IF counting THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('quota-count:' || project, 0));
    END IF;
END
$$;
