-- placement_write_allocations: a claim (PUT /allocations/{consumer}) or a batch of them (POST
-- /allocations) in one statement, so in one implicit transaction (allocations.py calls it):
--
--   1. provider uuids -> ids (an unknown one refuses the write);
--   2. consumers locked (created if new, at generation 1 at once: a refusal takes the row away
--      again) in uuid order, their generations compared;
--   3. every provider involved (new and old allocations) locked in id order, so writers never
--      wait on each other in a cycle, and its generation bumped;
--   4. consumer by consumer, in the order given: its old allocations removed, then only the
--      rows that fit written, against usage read under the locks (inventories.used, kept by
--      placement_track_usage: now everybody else's usage); when fewer rows went in than were
--      asked for, placement_claim_problems says why; then the consumer bumped, or removed when
--      it holds nothing.
--
-- The common claim (one consumer that does not exist yet, every row on one provider) takes a
-- shorter path with the same locks in the same order: the consumer written, the provider
-- locked and bumped by one UPDATE, then one statement takes the room (an UPDATE of
-- inventories whose condition PostgreSQL re-checks on the newest version of a row it waited
-- for) and writes the allocations from the rows it took, the usage trigger told for that
-- statement only that they are counted (placement.usage_counted).
--
-- A burst of new consumers (the scheduler's claims for a wave of boots: several consumers,
-- every one new and with rows) is written together, with the same locks in the same order:
-- the consumers in one INSERT in uuid order, the providers locked in id order and bumped, the
-- room of each provider's class taken by one UPDATE for the sum of what the burst asks there
-- (amounts are positive, so when the sum fits, each consumer fits after the ones before it,
-- which is what step 4 checks one by one), the allocations in one INSERT. When anything
-- there does not hold (a consumer came to exist meanwhile, a provider went, a class has no
-- room for the sum, an amount breaks min_unit/max_unit/step_size), the block is undone and
-- steps 2-4 run: they write what the rules say, or say why not.
--
-- A refusal raises an exception, which undoes everything the statement did; its DETAIL names
-- the kind ('refused', 'placement.concurrent_update', 'placement.resource_provider.not_found')
-- for allocations.py to map to an error.
--
-- Consumers are given as parallel arrays c_*; allocation rows as parallel arrays a_*, each
-- naming its consumer by (1-based) position in c_uuids. c_check false: the caller does not
-- care about the consumer's generation; else c_expected is the generation it read (NULL: it
-- expects a new consumer). A consumer without allocation rows is removed.
--
-- Generic plans, planned once per connection: every statement here is keyed by primary keys,
-- and planning them afresh for each call's parameters was a good part of a claim.
CREATE OR REPLACE FUNCTION placement_write_allocations(
    c_uuids uuid[], c_projects text[], c_users text[], c_types text[], c_check bool[],
    c_expected int[], a_consumer int[], a_providers uuid[], a_classes text[], a_amounts int[])
RETURNS TABLE (written_consumer uuid, new_generation int)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
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
    pid          bigint;
    one_provider bool := cardinality(a_providers) > 0 AND a_providers[1] = ALL(a_providers);
    order_       int[];
    asked        int;
    ids          bigint[];
    took         int;
    groups       int;
    why          text;
BEGIN
    -- The common claim: one consumer that does not exist yet, every row on one provider. The
    -- consumer is written first and the provider locked second, as below. Then one statement
    -- takes the room (an UPDATE of inventories whose condition PostgreSQL re-checks on the
    -- newest row version) and writes the allocations from the rows it took; the usage trigger
    -- would count them again, so it is told, for that statement only, that they are counted.
    IF cardinality(c_uuids) = 1 AND one_provider AND NOT (c_check[1] AND c_expected[1] IS NOT NULL) THEN
        INSERT INTO consumers (uuid, project_id, user_id, consumer_type, generation)
        VALUES (c_uuids[1], c_projects[1], c_users[1], c_types[1], 1)
        ON CONFLICT (uuid) DO NOTHING
        RETURNING id INTO cid;
        IF cid IS NOT NULL THEN
            UPDATE resource_providers r SET generation = r.generation + 1, updated_at = now()
             WHERE r.uuid = a_providers[1]
            RETURNING r.id INTO pid;
            IF pid IS NULL THEN
                RAISE EXCEPTION USING DETAIL = 'placement.resource_provider.not_found', MESSAGE =
                    format('Allocation for resource provider ''%s'' that does not exist.',
                           a_providers[1]);
            END IF;
            PERFORM set_config('placement.usage_counted', 'on', true);
            WITH took AS (
                UPDATE inventories i
                   SET used = i.used + w.amount,
                       summary = placement_inventory_text(i.resource_class, i.capacity, i.used + w.amount)
                  FROM unnest(a_classes, a_amounts) AS w(rc, amount)
                 WHERE i.resource_provider_id = pid AND i.resource_class = w.rc
                   AND w.amount BETWEEN i.min_unit AND i.max_unit AND w.amount % i.step_size = 0
                   AND w.amount <= trunc((i.total - i.reserved) * i.allocation_ratio) - i.used
                RETURNING i.resource_class, w.amount),
            given AS (
                INSERT INTO allocations (consumer_id, resource_provider_id, resource_class, used)
                SELECT cid, pid, t.resource_class, t.amount FROM took t
                RETURNING 1)
            SELECT count(*) INTO written FROM given;
            PERFORM set_config('placement.usage_counted', 'off', true);
            IF written <> cardinality(a_classes) THEN
                RAISE EXCEPTION USING DETAIL = 'refused', MESSAGE = 'Unable to allocate inventory: '
                    || coalesce(placement_claim_problems(cid, 1, a_consumer,
                                                         array_fill(pid, ARRAY[cardinality(a_classes)]),
                                                         a_classes, a_amounts),
                                'the allocation does not fit');
            END IF;
            written_consumer := c_uuids[1];
            new_generation := 1;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    -- one index probe per row, or one for all when they name one provider (NULL: no such
    -- provider); the message only when one is missing
    IF one_provider THEN
        SELECT rp.id INTO pid FROM resource_providers rp WHERE rp.uuid = a_providers[1];
        provider_ids := array_fill(pid, ARRAY[cardinality(a_providers)]);
    ELSE
        provider_ids := ARRAY(SELECT (SELECT rp.id FROM resource_providers rp WHERE rp.uuid = a.u)
                                FROM unnest(a_providers) WITH ORDINALITY AS a(u, ord) ORDER BY a.ord);
    END IF;
    IF array_position(provider_ids, NULL) IS NOT NULL THEN
        SELECT string_agg(DISTINCT a.u::text, ', ' ORDER BY a.u::text) INTO missing
          FROM unnest(a_providers, provider_ids) AS a(u, id)
         WHERE a.id IS NULL;
        RAISE EXCEPTION USING DETAIL = 'placement.resource_provider.not_found', MESSAGE =
            format('Allocation for resource provider ''%s'' that does not exist.', missing);
    END IF;
    involved := coalesce(provider_ids, '{}');

    -- A burst of new consumers, written together (see the top); 'placement.one_by_one' undoes
    -- the block, and steps 2-4 follow.
    IF cardinality(c_uuids) > 1
       AND NOT EXISTS (SELECT FROM unnest(c_check, c_expected) AS x(chk, expected)
                        WHERE x.chk AND x.expected IS NOT NULL)
       AND (SELECT count(DISTINCT u) FROM unnest(c_uuids) AS u) = cardinality(c_uuids)
       AND (SELECT count(DISTINCT pos) FROM unnest(a_consumer) AS pos) = cardinality(c_uuids)
       AND NOT EXISTS (SELECT FROM consumers c WHERE c.uuid = ANY(c_uuids)) THEN
        BEGIN
            WITH made AS (
                INSERT INTO consumers (uuid, project_id, user_id, consumer_type, generation)
                SELECT c.u, c.project, c.usr, c.kind, 1
                  FROM unnest(c_uuids, c_projects, c_users, c_types) AS c(u, project, usr, kind)
                 ORDER BY c.u
                    ON CONFLICT (uuid) DO NOTHING
                RETURNING consumers.uuid, consumers.id)
            SELECT array_agg(m.id ORDER BY c.pos) INTO ids
              FROM unnest(c_uuids) WITH ORDINALITY AS c(u, pos) LEFT JOIN made m ON m.uuid = c.u;
            IF array_position(ids, NULL) IS NOT NULL THEN
                RAISE EXCEPTION USING DETAIL = 'placement.one_by_one', MESSAGE = 'a consumer exists now';
            END IF;
            SELECT coalesce(array_agg(l.id), '{}') INTO locked
              FROM (SELECT rp.id FROM resource_providers rp WHERE rp.id = ANY(involved)
                     ORDER BY rp.id FOR UPDATE) l;
            IF NOT involved <@ locked THEN
                RAISE EXCEPTION USING DETAIL = 'placement.one_by_one', MESSAGE = 'a provider went';
            END IF;
            UPDATE resource_providers r SET generation = r.generation + 1, updated_at = now()
             WHERE r.id = ANY(locked);
            PERFORM set_config('placement.usage_counted', 'on', true);
            WITH asked_for AS (
                SELECT w.provider_id, w.rc, w.amount
                  FROM unnest(provider_ids, a_classes, a_amounts) AS w(provider_id, rc, amount)),
            wanted AS (
                SELECT a.provider_id, a.rc, sum(a.amount) AS total, min(a.amount) AS least,
                       max(a.amount) AS most, array_agg(a.amount) AS amounts
                  FROM asked_for a GROUP BY a.provider_id, a.rc),
            taken AS (
                UPDATE inventories i
                   SET used = i.used + w.total,
                       summary = placement_inventory_text(i.resource_class, i.capacity, i.used + w.total)
                  FROM wanted w
                 WHERE i.resource_provider_id = w.provider_id AND i.resource_class = w.rc
                   AND w.least >= i.min_unit AND w.most <= i.max_unit
                   AND NOT EXISTS (SELECT FROM unnest(w.amounts) AS x WHERE x % i.step_size <> 0)
                   AND w.total <= trunc((i.total - i.reserved) * i.allocation_ratio) - i.used
                RETURNING 1)
            SELECT (SELECT count(*) FROM taken), (SELECT count(*) FROM wanted) INTO took, groups;
            IF took <> groups THEN
                RAISE EXCEPTION USING DETAIL = 'placement.one_by_one', MESSAGE = 'no room for the sum';
            END IF;
            INSERT INTO allocations (consumer_id, resource_provider_id, resource_class, used)
            SELECT ids[w.pos], w.provider_id, w.rc, w.amount
              FROM unnest(a_consumer, provider_ids, a_classes, a_amounts) AS w(pos, provider_id, rc, amount);
            PERFORM set_config('placement.usage_counted', 'off', true);
            RETURN QUERY SELECT u, 1 FROM unnest(c_uuids) AS u;
            RETURN;
        EXCEPTION WHEN raise_exception THEN
            GET STACKED DIAGNOSTICS why = PG_EXCEPTION_DETAIL;
            IF why IS DISTINCT FROM 'placement.one_by_one' THEN
                RAISE;
            END IF;
            PERFORM set_config('placement.usage_counted', 'off', true);
        END;
    END IF;

    IF cardinality(c_uuids) = 1 THEN
        order_ := '{1}';
    ELSE
        order_ := ARRAY(SELECT c.pos FROM unnest(c_uuids) WITH ORDINALITY AS c(u, pos) ORDER BY c.u);
    END IF;
    FOREACH k IN ARRAY order_ LOOP
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
                format('consumer generation conflict - expected %s but got %s',
                       coalesce(current_gen::text, 'null'), coalesce(c_expected[k]::text, 'null'))
                || CASE
                    WHEN c_expected[k] IS NULL THEN format(
                        ': consumer %s already exists but none was expected.', c_uuids[k])
                    WHEN current_gen IS NULL THEN format(
                        ': consumer %s does not exist.', c_uuids[k])
                    ELSE format(': consumer %s has changed.', c_uuids[k])
                END;
        END IF;
        consumer_ids[k] := cid;
        fresh[k] := current_gen IS NULL;
        IF current_gen IS NOT NULL THEN
            involved := involved || ARRAY(SELECT a.resource_provider_id FROM allocations a
                                           WHERE a.consumer_id = cid);
        END IF;
    END LOOP;

    -- locked in id order, then their generations bumped (a refusal below undoes the bump with
    -- everything else); both by primary key
    IF involved[1] = ALL(involved) THEN
        -- one provider, or none (ALL of an empty array holds): locked and bumped by one statement
        UPDATE resource_providers r SET generation = r.generation + 1, updated_at = now()
         WHERE r.id = involved[1]
        RETURNING ARRAY[r.id] INTO locked;
        locked := coalesce(locked, '{}');
    ELSE
        SELECT coalesce(array_agg(l.id), '{}') INTO locked
          FROM (SELECT rp.id FROM resource_providers rp WHERE rp.id = ANY(involved)
                 ORDER BY rp.id FOR UPDATE) l;
        UPDATE resource_providers r SET generation = r.generation + 1, updated_at = now()
         WHERE r.id = ANY(locked);
    END IF;
    IF NOT coalesce(provider_ids, '{}') <@ locked THEN  -- deleted while we waited for its lock
        SELECT string_agg(DISTINCT a.u::text, ', ' ORDER BY a.u::text) INTO missing
          FROM unnest(a_providers, provider_ids) AS a(u, id)
         WHERE a.id <> ALL(locked);
        RAISE EXCEPTION USING DETAIL = 'placement.resource_provider.not_found', MESSAGE =
            format('Allocation for resource provider ''%s'' that does not exist.', missing);
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
        IF cardinality(c_uuids) = 1 THEN
            asked := cardinality(a_consumer);
        ELSE
            asked := (SELECT count(*) FROM unnest(a_consumer) AS w(pos) WHERE w.pos = k);
        END IF;
        IF written <> asked THEN
            problems := placement_claim_problems(cid, k, a_consumer, provider_ids, a_classes, a_amounts);
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
