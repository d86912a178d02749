-- Planner statistics kept up with tables that grow fast (db/statistics.py).

-- name: refresh
-- ANALYZE the tables that hold twice the rows they held at their last statistics, and at
-- least $1 (sql/functions/statistics_refresh.sql); their names.
SELECT name FROM statistics_refresh($1) AS name;
