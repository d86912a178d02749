-- placement_holders_present: whether every (h_pids[i], h_keys[i]) is a session advisory lock
-- (the bigint form) that PostgreSQL backend h_pids[i] holds now. A claim made for someone who
-- holds an instance (the conductor scheduling it, under its lock) is written only while they
-- still do: once that process is gone, so is its lock, and a claim still on its way for it
-- (a scheduler deciding for a conductor that died) must not replace what the conductor that
-- took the instance over has claimed since, nor hold room for a server deleted meanwhile.
--
-- pg_locks shows a bigint key as classid (its high 32 bits) and objid (its low 32 bits), with
-- objsubid 1. It is live state, not a snapshot: read after the claim locked its consumer, it
-- says whether the holder is still there at that moment.
CREATE OR REPLACE FUNCTION placement_holders_present(h_pids int[], h_keys bigint[])
RETURNS bool
LANGUAGE sql VOLATILE
AS $$
    WITH held AS MATERIALIZED (
        SELECT l.pid, l.classid, l.objid FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
           AND l.pid = ANY(h_pids))
    SELECT NOT EXISTS (
        SELECT 1 FROM unnest(h_pids, h_keys) AS h(pid, k)
         WHERE NOT EXISTS (
            SELECT 1 FROM held
             WHERE held.pid = h.pid
               AND held.classid = ((h.k >> 32) & 4294967295)::oid
               AND held.objid = (h.k & 4294967295)::oid))
$$;
