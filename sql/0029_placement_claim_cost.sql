-- Placement: less work in PostgreSQL per claim (PUT /allocations), same writes, same locks,
-- same answers and messages.
--
-- placement_write_allocations (sql/0022), four statements fewer or cheaper:
--   * provider uuids became ids through a join and two ordered aggregates (one DISTINCT, for an
--     error message), several times the cost of the index probes they stand for under a generic
--     plan: now one probe per allocation row, in order, and the message only when a provider
--     is missing (an empty allocation list gives an empty id array instead of NULL, which every
--     later use treats alike);
--   * the providers are locked in id order as before, and their generations bumped by the same
--     statement rather than by a last one (a refusal undoes the bump with everything else);
--   * per consumer, the capacity check and the insert are one statement: the old allocations
--     go first, then only the rows that fit are inserted, against usage read under the locks
--     (everybody else's, the consumer's old allocations having gone, which is what the check
--     used to compute as used - own). When fewer rows went in than were asked for, the old
--     per-row query words the refusal, unchanged: the consumer's own rows are now the ones just
--     written, so used - own is again everybody else's usage and the message reads as before.
--     Either way the exception undoes the whole statement.
--
-- And every claim changes inventories.used, after which the statement trigger of sql/0025
-- rewrites the provider's `resources` text in provider_summaries through
-- placement_summary_resources(), a LANGUAGE sql function. PostgreSQL (15) cannot inline a
-- function that aggregates, and plans a SQL function's body afresh for every statement that
-- calls it, so each claim paid for planning that query again. Written inline, the query is part
-- of the trigger's own statement, whose plan PL/pgSQL keeps for the life of the connection.

CREATE OR REPLACE FUNCTION placement_write_allocations(
    c_uuids uuid[], c_projects text[], c_users text[], c_types text[], c_check bool[],
    c_expected int[], a_consumer int[], a_providers uuid[], a_classes text[], a_amounts int[])
RETURNS TABLE (written_consumer uuid, new_generation int)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan  -- as 0026 set it; CREATE OR REPLACE resets it
AS $$
DECLARE
    provider_ids bigint[];
    missing      text;
    consumer_ids bigint[] := '{}';
    fresh        bool[] := '{}';   -- per consumer: created by this statement
    involved     bigint[];
    locked       bigint[];
    cid          bigint;
    current_gen  int;
    k            int;
    problems     text;
    written      int;
BEGIN
    -- one index probe per row (NULL: no such provider); the message only when one is missing
    provider_ids := ARRAY(SELECT (SELECT rp.id FROM resource_providers rp WHERE rp.uuid = a.u)
                            FROM unnest(a_providers) WITH ORDINALITY AS a(u, ord) ORDER BY a.ord);
    IF array_position(provider_ids, NULL) IS NOT NULL THEN
        SELECT string_agg(DISTINCT a.u::text, ', ' ORDER BY a.u::text) INTO missing
          FROM unnest(a_providers, provider_ids) AS a(u, id)
         WHERE a.id IS NULL;
        RAISE EXCEPTION USING DETAIL = 'placement.resource_provider.not_found', MESSAGE =
            format('Unable to allocate inventory: resource provider %s could not be found.', missing);
    END IF;
    involved := coalesce(provider_ids, '{}');

    FOR k IN SELECT c.pos FROM unnest(c_uuids) WITH ORDINALITY AS c(u, pos) ORDER BY c.u LOOP
        cid := NULL;
        FOR attempt IN 1..5 LOOP
            -- a new consumer is written at generation 1 at once: if the claim is refused,
            -- the exception takes the row away again
            INSERT INTO consumers (uuid, project_id, user_id, consumer_type, generation)
            VALUES (c_uuids[k], c_projects[k], c_users[k], c_types[k], 1)
            ON CONFLICT (uuid) DO NOTHING
            RETURNING id INTO cid;
            IF cid IS NOT NULL THEN
                current_gen := NULL;  -- a new consumer has no generation a caller could know
                EXIT;
            END IF;
            SELECT c.id, c.generation INTO cid, current_gen
              FROM consumers c WHERE c.uuid = c_uuids[k] FOR UPDATE;
            EXIT WHEN cid IS NOT NULL;
            -- it existed, then a concurrent delete removed it while we waited for its lock;
            -- that delete has committed, so inserting again goes through
        END LOOP;
        IF cid IS NULL THEN
            RAISE EXCEPTION USING DETAIL = 'placement.concurrent_update', MESSAGE =
                format('consumer %s keeps changing under us; try again.', c_uuids[k]);
        END IF;
        IF c_check[k] AND c_expected[k] IS DISTINCT FROM current_gen THEN
            RAISE EXCEPTION USING DETAIL = 'placement.concurrent_update', MESSAGE =
                'consumer generation conflict: ' || CASE
                    WHEN c_expected[k] IS NULL THEN format(
                        'consumer %s already exists (generation %s) but none was expected.',
                        c_uuids[k], current_gen)
                    WHEN current_gen IS NULL THEN format(
                        'consumer %s does not exist but generation %s was given.', c_uuids[k], c_expected[k])
                    ELSE format('consumer %s is at generation %s, not %s.', c_uuids[k], current_gen,
                                c_expected[k])
                END;
        END IF;
        consumer_ids[k] := cid;
        fresh[k] := current_gen IS NULL;
        IF current_gen IS NOT NULL THEN
            involved := involved || ARRAY(SELECT a.resource_provider_id FROM allocations a
                                           WHERE a.consumer_id = cid);
        END IF;
    END LOOP;

    -- locked in id order, and their generations bumped in the same statement (a refusal below
    -- undoes the bump with everything else)
    WITH l AS (SELECT rp.id FROM resource_providers rp WHERE rp.id = ANY(involved)
                ORDER BY rp.id FOR UPDATE),
         bumped AS (UPDATE resource_providers r SET generation = r.generation + 1, updated_at = now()
                      FROM l WHERE r.id = l.id RETURNING r.id)
    SELECT coalesce(array_agg(b.id), '{}') INTO locked FROM bumped b;
    IF NOT coalesce(provider_ids, '{}') <@ locked THEN  -- deleted while we waited for its lock
        SELECT string_agg(DISTINCT a.u::text, ', ' ORDER BY a.u::text) INTO missing
          FROM unnest(a_providers, provider_ids) AS a(u, id)
         WHERE a.id <> ALL(locked);
        RAISE EXCEPTION USING DETAIL = 'placement.resource_provider.not_found', MESSAGE =
            format('Unable to allocate inventory: resource provider %s could not be found.', missing);
    END IF;

    FOR k IN 1..cardinality(c_uuids) LOOP
        cid := consumer_ids[k];
        IF NOT fresh[k] THEN
            DELETE FROM allocations WHERE consumer_id = cid;
        END IF;
        -- only the rows that fit are written: usage is now everybody else's (this consumer's old
        -- allocations just went), read under the provider locks
        INSERT INTO allocations (consumer_id, resource_provider_id, resource_class, used)
        SELECT cid, w.provider_id, w.rc, w.amount
          FROM unnest(a_consumer, provider_ids, a_classes, a_amounts) AS w(pos, provider_id, rc, amount)
          JOIN inventories i ON i.resource_provider_id = w.provider_id AND i.resource_class = w.rc
         WHERE w.pos = k
           AND w.amount BETWEEN i.min_unit AND i.max_unit AND w.amount % i.step_size = 0
           AND w.amount <= trunc((i.total - i.reserved) * i.allocation_ratio) - i.used;
        GET DIAGNOSTICS written = ROW_COUNT;
        IF written <> (SELECT count(*) FROM unnest(a_consumer) AS w(pos) WHERE w.pos = k) THEN
            -- say why, row by row; `own` is now what this consumer was just given, so
            -- used - own is everybody else's usage, as before the write
            SELECT string_agg(p.problem, '; ' ORDER BY p.ord) INTO problems
              FROM (SELECT w.ord, CASE
                        WHEN i.total IS NULL THEN format(
                            'resource provider %s (%s) has no inventory of %s', rp.name, rp.uuid, w.rc)
                        WHEN w.amount < i.min_unit OR w.amount > i.max_unit OR w.amount % i.step_size <> 0
                        THEN format('%s %s on resource provider %s (%s) violates min_unit %s, max_unit %s '
                                    'or step_size %s', w.rc, w.amount, rp.name, rp.uuid, i.min_unit,
                                    i.max_unit, i.step_size)
                        WHEN w.amount > trunc((i.total - i.reserved) * i.allocation_ratio)
                                        - (i.used - coalesce(own.used, 0))
                        THEN format('%s %s requested on resource provider %s (%s) but only %s of %s is free',
                                    w.rc, w.amount, rp.name, rp.uuid,
                                    greatest(trunc((i.total - i.reserved) * i.allocation_ratio)
                                             - (i.used - coalesce(own.used, 0)), 0),
                                    trunc((i.total - i.reserved) * i.allocation_ratio))
                    END AS problem
                      FROM unnest(a_consumer, provider_ids, a_classes, a_amounts)
                           WITH ORDINALITY AS w(pos, provider_id, rc, amount, ord)
                      JOIN resource_providers rp ON rp.id = w.provider_id
                      LEFT JOIN inventories i ON i.resource_provider_id = w.provider_id
                                             AND i.resource_class = w.rc
                      LEFT JOIN allocations own ON own.consumer_id = cid
                                               AND own.resource_provider_id = w.provider_id
                                               AND own.resource_class = w.rc
                     WHERE w.pos = k) p;
            RAISE EXCEPTION USING DETAIL = 'refused', MESSAGE = 'Unable to allocate inventory: '
                || coalesce(problems, 'the allocation does not fit');
        END IF;
        IF written > 0 AND fresh[k] THEN
            new_generation := 1;
        ELSIF written > 0 THEN
            UPDATE consumers
               SET project_id = c_projects[k], user_id = c_users[k],
                   consumer_type = coalesce(c_types[k], consumer_type),
                   generation = generation + 1, updated_at = now()
             WHERE id = cid
            RETURNING generation INTO new_generation;
        ELSE  -- nothing left to hold: the consumer goes
            DELETE FROM consumers WHERE id = cid;
            new_generation := NULL;
        END IF;
        written_consumer := c_uuids[k];
        RETURN NEXT;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION placement_summary_refresh_resources() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        UPDATE provider_summaries s
           SET resources = (SELECT coalesce(string_agg(i.summary, ',' ORDER BY i.resource_class COLLATE "C"), '')
                              FROM inventories i WHERE i.resource_provider_id = s.provider_id)
         WHERE s.provider_id IN (SELECT DISTINCT c.resource_provider_id FROM changed c);
    ELSE
        UPDATE provider_summaries s
           SET resources = (SELECT coalesce(string_agg(i.summary, ',' ORDER BY i.resource_class COLLATE "C"), '')
                              FROM inventories i WHERE i.resource_provider_id = s.provider_id),
               classes = array(SELECT i.resource_class FROM inventories i
                                WHERE i.resource_provider_id = s.provider_id
                                ORDER BY i.resource_class COLLATE "C")
         WHERE s.provider_id IN (SELECT DISTINCT c.resource_provider_id FROM changed c);
    END IF;
    RETURN NULL;
END
$$;
