-- The event stream's sequencer (api/event_stream.py): under the sequencer's lock (held to
-- the commit), the committed batches (0076) that have no position yet get the next ones, in
-- id order, as many as each has rows, and the counter moves past them; every API process
-- is told when some did. `first`: the first position this pass gave (NULL: none); `last`:
-- the last given by any pass so far (every position up to it is committed or this
-- transaction's).
-- Each statement here takes a new snapshot: what a sequencer that held the lock before
-- committed is seen. Batches still uncommitted are not: they get theirs in a later pass,
-- after every one seen here, so a reader of positions past a cursor never skips a row.
-- A pass numbers a few batches of a table that holds the whole backlog's: each is found by
-- its key. Left to choose, the planner hashed the whole table for them whenever its
-- statistics were older than the table (a site filling up, the backlog growing).
CREATE OR REPLACE FUNCTION server_events_number(lock_key bigint, OUT first bigint, OUT last bigint)
LANGUAGE plpgsql SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    given bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    SELECT c.last INTO last FROM server_event_counter c;
    WITH pending AS (
        SELECT b.id, b.size, sum(b.size) OVER (ORDER BY b.id) AS upto
          FROM server_event_batches b WHERE b.first IS NULL
    ), numbered AS (
        UPDATE server_event_batches b SET first = last + p.upto - p.size + 1
          FROM pending p
         WHERE b.id = p.id
        RETURNING b.size
    )
    SELECT sum(size) INTO given FROM numbered;
    IF given > 0 THEN
        UPDATE server_event_counter SET last = server_event_counter.last + given;
        first := last + 1;
        last := last + given;
        PERFORM pg_notify('nova_async_server_events_seq', '');
    END IF;
END;
$$;
