-- placement_delete_allocations: everything one consumer holds given back, and the consumer
-- removed (DELETE /allocations/{consumer}, and the services' own releases: allocations.py
-- `delete_allocations`), in one statement instead of a round trip per step.
--
-- The consumer is locked first, then the providers it holds room on, in id order, as
-- placement_write_allocations locks them: a claim on them waits, then counts the freed room,
-- and the two never wait on each other in a cycle. The providers' generations stay, as
-- upstream's DELETE leaves them: giving room back cannot make a writer's view of a provider
-- wrong. With holders (h_pids[i] holding the advisory lock h_keys[i], see
-- placement_holders_present), nothing is removed unless every one is still there once the
-- consumer is locked: it raises (DETAIL 'placement.holder_gone'), which undoes the statement.
--
-- Returns NULL when there is no such consumer, else how many providers it held room on.
CREATE OR REPLACE FUNCTION placement_delete_allocations(d_consumer uuid, h_pids int[], h_keys bigint[])
RETURNS int
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    cid     bigint;
    held_on bigint[];
BEGIN
    SELECT c.id INTO cid FROM consumers c WHERE c.uuid = d_consumer FOR UPDATE;
    IF cid IS NULL THEN
        RETURN NULL;
    END IF;
    IF cardinality(h_pids) > 0 AND NOT placement_holders_present(h_pids, h_keys) THEN
        RAISE EXCEPTION USING DETAIL = 'placement.holder_gone', MESSAGE =
            format('%s''s allocations were kept: whoever they were released for no longer holds '
                   'the instance', d_consumer);
    END IF;
    held_on := ARRAY(SELECT DISTINCT a.resource_provider_id FROM allocations a
                      WHERE a.consumer_id = cid ORDER BY 1);
    PERFORM 1 FROM resource_providers rp WHERE rp.id = ANY(held_on) ORDER BY rp.id FOR UPDATE;
    DELETE FROM allocations a WHERE a.consumer_id = cid;
    DELETE FROM consumers c WHERE c.id = cid;
    RETURN cardinality(held_on);
END
$$;
