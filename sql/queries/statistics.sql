-- Planner statistics kept up with tables that grow fast (db/statistics.py).

-- name: refresh
-- ANALYZE the tables that hold twice the rows they held at their last statistics, and at
-- least $1 (sql/functions/statistics_refresh.sql); their names.
SELECT name FROM statistics_refresh($1) AS name;

-- name: rows_inserted
-- Rows inserted into this database's tables so far, as the shared statistics count them (the
-- same counts a table's live rows come from): unchanged, no table can have grown.
SELECT pg_stat_get_db_tuples_inserted(oid) FROM pg_database WHERE datname = current_database();
