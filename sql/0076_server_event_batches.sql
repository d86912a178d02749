-- phase: expand
-- 0076: the event stream numbers what a statement wrote, not each row it wrote.
--
-- Each row of server_events was written twice: inserted by a trigger, then updated by the
-- sequencer with its position (a new row version and an entry in every index, its key
-- among them), with three indexes to keep (id, seq, the unnumbered rows). A boot wrote ~13
-- such rows. Now each trigger statement writes one server_event_batches row (how many rows
-- it wrote) and its rows carry (batch, pos): one heap write and one index entry each. The
-- sequencer gives a batch its first position (`first`), so a row's position is
-- first + pos - 1: contiguous and in commit order as before, numbered per batch.
--
-- Rows already here are kept: the numbered ones become one batch from their first
-- position (pruning keeps them contiguous), the others one batch still to be numbered.
-- The release before reads `seq` only in its API processes, which are upgraded first,
-- together (db/migrate.py). Until one is, its event feed fails on the column it reads (its
-- log says so) instead of seeming to have no events: its stream clients come back, to an
-- upgraded process, with their cursor, and miss nothing. Its other roles never read this
-- table, and the triggers that write it are this release's from now on.
LOCK TABLE server_events IN ACCESS EXCLUSIVE MODE;   -- no pass of a running sequencer meanwhile

CREATE TABLE server_event_batches (
    id    bigserial PRIMARY KEY,
    size  integer NOT NULL CHECK (size > 0),
    first bigint            -- the position of its first row; NULL until the sequencer gives it
);
CREATE UNIQUE INDEX server_event_batches_first ON server_event_batches (first) WHERE first IS NOT NULL;
CREATE INDEX server_event_batches_unnumbered ON server_event_batches (id) WHERE first IS NULL;

ALTER TABLE server_events ADD COLUMN batch bigint, ADD COLUMN pos integer;

WITH kept AS (
    INSERT INTO server_event_batches (size, first)
    SELECT count(*), min(seq) FROM server_events WHERE seq IS NOT NULL HAVING count(*) > 0
    RETURNING id, first
)
UPDATE server_events e SET batch = kept.id, pos = e.seq - kept.first + 1
  FROM kept WHERE e.seq IS NOT NULL;

WITH waiting AS (
    INSERT INTO server_event_batches (size)
    SELECT count(*) FROM server_events WHERE seq IS NULL HAVING count(*) > 0
    RETURNING id
)
UPDATE server_events e SET batch = waiting.id, pos = o.n
  FROM waiting, (SELECT id, row_number() OVER (ORDER BY id) AS n FROM server_events WHERE seq IS NULL) o
 WHERE e.id = o.id;

ALTER TABLE server_events DROP CONSTRAINT server_events_pkey;
DROP INDEX server_events_unsequenced;
DROP INDEX server_events_seq;
ALTER TABLE server_events DROP COLUMN id, DROP COLUMN seq;
ALTER TABLE server_events ALTER COLUMN batch SET NOT NULL, ALTER COLUMN pos SET NOT NULL;
ALTER TABLE server_events ADD PRIMARY KEY (batch, pos);
