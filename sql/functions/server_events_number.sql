-- The event stream's sequencer (api/event_stream.py) in one statement: under the sequencer's
-- lock (held to the commit), the committed events that have no position yet get the next
-- ones, in id order, and the counter moves past them; every API process is told when some
-- did. `first`: the first position this pass gave (NULL: none); `last`: the last given by
-- any pass so far (every position up to it is committed or this transaction's).
-- Each statement here takes a new snapshot: what a sequencer that held the lock before
-- committed is seen. Rows still uncommitted are not: they get theirs in a later pass, after
-- every row seen here, so a reader of `seq > cursor` never skips one.
-- A pass numbers a few rows of a table that holds the whole backlog: each is found by its key.
-- Left to choose, the planner hashed the whole table for them whenever its statistics were
-- older than the table (a site filling up, the backlog growing): twice the cost per row
-- numbered (sql/0069 and bench/schedule_rate.py).
CREATE OR REPLACE FUNCTION server_events_number(lock_key bigint, OUT first bigint, OUT last bigint)
LANGUAGE plpgsql SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    given bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    WITH pending AS (
        SELECT p.id, row_number() OVER (ORDER BY p.id) AS n FROM server_events p WHERE p.seq IS NULL
    ), moved AS (
        UPDATE server_event_counter c SET last = c.last + (SELECT count(*) FROM pending)
         WHERE EXISTS (SELECT FROM pending)
        RETURNING c.last - (SELECT count(*) FROM pending) AS base
    )
    UPDATE server_events e SET seq = moved.base + pending.n
      FROM pending, moved
     WHERE e.id = pending.id;
    GET DIAGNOSTICS given = ROW_COUNT;
    SELECT c.last INTO last FROM server_event_counter c;
    IF given > 0 THEN
        first := last - given + 1;
        PERFORM pg_notify('nova_async_server_events_seq', '');
    END IF;
END;
$$;
