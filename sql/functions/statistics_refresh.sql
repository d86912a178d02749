-- statistics_refresh: ANALYZE this database's tables that hold twice the rows they held at
-- their last statistics (pg_class.reltuples; -1 when there are none yet), and at least
-- `least_rows`; answers their names. A table another ANALYZE (autovacuum's) holds is skipped,
-- and named all the same: it is being analyzed.
--
-- Why (db/statistics.py): a table that starts empty and fills in a burst keeps, in every
-- connection, the plans made for it while it was empty — whole-table scans — until it has
-- new statistics, and autovacuum looks only once a minute. New statistics make those plans
-- be made again. A table is analyzed each time it doubles, so a few times as it grows from
-- empty to thousands of rows, and rarely once it holds many. Rows changed in place or
-- replaced (a build updates its instance three times; the event stream deletes as many rows
-- as it adds) do not count: the table's size is what the plans went wrong on, and
-- autovacuum's own ANALYZEs follow the churn.
CREATE OR REPLACE FUNCTION statistics_refresh(least_rows bigint) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    outgrown regclass;
BEGIN
    FOR outgrown IN SELECT s.relid::regclass FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
                     WHERE s.n_live_tup >= greatest(least_rows, 2 * c.reltuples)
                     ORDER BY s.relid LOOP
        EXECUTE format('ANALYZE (SKIP_LOCKED) %s', outgrown);
        RETURN NEXT outgrown::text;
    END LOOP;
END
$$;
