-- Planner statistics kept up with tables that grow fast (db/statistics.py).

-- name: refresh
-- ANALYZE the tables that changed more since their statistics than they held then, once at
-- least $1 rows changed (sql/functions/statistics_refresh.sql); their names.
SELECT name FROM statistics_refresh($1) AS name;
