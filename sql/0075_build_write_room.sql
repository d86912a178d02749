-- phase: expand
-- 0075: cheaper writes on a build's path, each for a reason measured in bench/schedule_rate.py.
--
-- Room on each page for the updates a build makes. An instance row is written about three
-- more times after its insert (its host, its ports, ACTIVE), its action once and each of its
-- events once; none of those writes changes an indexed column but the host. Filled pages
-- sent every such update to another page with a new entry in every index; with room left,
-- PostgreSQL keeps it on the same page (a HOT update: no index entry). Pages written from
-- now on; a table's existing pages stay as full as they are.
ALTER TABLE instances SET (fillfactor = 70);
ALTER TABLE instance_actions SET (fillfactor = 80);
ALTER TABLE instance_action_events SET (fillfactor = 80);

-- The event stream's positions, unique among the rows that have one. The constraint's index
-- also held an entry for every row still waiting for the sequencer (NULL), written at insert
-- and dead once it was numbered; server_events_unsequenced finds those rows.
ALTER TABLE server_events DROP CONSTRAINT server_events_seq_key;
CREATE UNIQUE INDEX server_events_seq ON server_events (seq) WHERE seq IS NOT NULL;
