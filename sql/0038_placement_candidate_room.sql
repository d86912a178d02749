-- Placement: flat allocation candidates test a provider's room with one comparison, and come
-- back one row per candidate.
--
-- placement_flat_candidates (0028) found the providers without room for a request by reading
-- every inventory of the requested classes (3,000 rows at 1,000 providers, about a third of
-- the request's time), and glued the whole answer into two strings, then cut them into pieces
-- (another third: copies of the whole body). Here:
--
--   * Each provider's summary row also holds its room as one int8multirange: per inventory,
--     the amounts a single allocation may take, [min_unit, least(max_unit, capacity - used)],
--     shifted into a band of its own by the class's number (number * 2^32; amounts are
--     int4, so the bands never meet). A request becomes the set of its points (number * 2^32
--     + amount), and "room for every requested class" is `room @> points`: one comparison per
--     provider, made in C. A class no inventory has ever had has no number, so no provider
--     can have room for it. step_size is the one rule a range cannot say; a provider with any
--     step_size above 1 is marked `stepped` and checked against its inventories as before.
--   * The room is rewritten with the resources text by the same trigger statement (0036), so
--     a claim pays one more aggregate over the rows it already reads.
--   * placement_flat_candidate_rows answers with a first row (whether the world is flat, the
--     unknown trait names) and then one row per candidate: its uuid and its provider_summaries
--     entry as bytes, which flat_candidates.py joins. The three searches of 0028 (everyone;
--     filtered by traits, aggregates or a limit; the members of named aggregates) stay one
--     statement, after a first one that settles what they share: whether the world is flat,
--     the named traits, the request's points.

CREATE TABLE resource_class_numbers (
    name   text PRIMARY KEY,
    number int NOT NULL GENERATED ALWAYS AS IDENTITY UNIQUE
);

CREATE FUNCTION placement_room_range(class_number int, min_unit int, max_unit int, capacity bigint,
                                     used bigint)
RETURNS int8range LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN min_unit <= least(max_unit, capacity - used)
                THEN int8range(class_number::bigint * 4294967296 + min_unit,
                               class_number::bigint * 4294967296 + least(max_unit, capacity - used), '[]')
           END
$$;

ALTER TABLE inventories ADD COLUMN class_number int;
INSERT INTO resource_class_numbers (name)
SELECT DISTINCT resource_class FROM inventories ORDER BY 1;
UPDATE inventories i SET class_number = n.number FROM resource_class_numbers n WHERE n.name = i.resource_class;
ALTER TABLE inventories ALTER COLUMN class_number SET NOT NULL;

ALTER TABLE provider_summaries
    ADD COLUMN room    int8multirange NOT NULL DEFAULT '{}',
    ADD COLUMN stepped bool NOT NULL DEFAULT false;

-- every inventory's class has a number, given the first time the class appears
CREATE FUNCTION placement_inventory_class_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT n.number INTO NEW.class_number FROM resource_class_numbers n WHERE n.name = NEW.resource_class;
    IF NEW.class_number IS NULL THEN
        INSERT INTO resource_class_numbers (name) VALUES (NEW.resource_class) ON CONFLICT (name) DO NOTHING;
        SELECT n.number INTO NEW.class_number FROM resource_class_numbers n WHERE n.name = NEW.resource_class;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER inventories_class_number BEFORE INSERT OR UPDATE OF resource_class ON inventories
    FOR EACH ROW EXECUTE FUNCTION placement_inventory_class_number();

-- 0036's refresh, which now also writes the room: one pass over the provider's inventories
CREATE OR REPLACE FUNCTION placement_summary_refresh_resources() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE provider_summaries s
       SET resources = r.resources, room = r.room, stepped = r.stepped,
           classes = CASE WHEN TG_OP = 'UPDATE' THEN s.classes ELSE r.classes END,
           flat_entry = placement_flat_entry(s.uuid, r.resources, s.traits)
      FROM (SELECT DISTINCT c.resource_provider_id AS id FROM changed c) p
     CROSS JOIN LATERAL (
           SELECT coalesce(string_agg(i.summary, ',' ORDER BY i.resource_class COLLATE "C"), '') AS resources,
                  coalesce(range_agg(placement_room_range(i.class_number, i.min_unit, i.max_unit,
                                                          i.capacity, i.used)), '{}') AS room,
                  coalesce(bool_or(i.step_size > 1), false) AS stepped,
                  -- classes change only when inventories come or go, not with a claim's usage
                  coalesce(array_agg(i.resource_class ORDER BY i.resource_class COLLATE "C")
                           FILTER (WHERE TG_OP <> 'UPDATE'), '{}') AS classes
             FROM inventories i WHERE i.resource_provider_id = p.id) r
     WHERE s.provider_id = p.id;
    RETURN NULL;
END
$$;

UPDATE provider_summaries s
   SET room = r.room, stepped = r.stepped
  FROM (SELECT i.resource_provider_id AS id,
               coalesce(range_agg(placement_room_range(i.class_number, i.min_unit, i.max_unit,
                                                       i.capacity, i.used)), '{}') AS room,
               bool_or(i.step_size > 1) AS stepped
          FROM inventories i GROUP BY 1) r
 WHERE s.provider_id = r.id;

-- whether every requested amount is a multiple of that inventory's step_size (the one rule
-- the room does not hold)
CREATE FUNCTION placement_steps_fit(provider bigint, classes text[], amounts int[])
RETURNS bool LANGUAGE sql STABLE AS $$
    SELECT NOT EXISTS (
        SELECT 1 FROM unnest(classes, amounts) AS w(resource_class, amount)
          JOIN inventories i ON i.resource_provider_id = provider AND i.resource_class = w.resource_class
         WHERE w.amount % i.step_size <> 0)
$$;

-- $1 classes, $2 amounts; $3 whether summaries show every class (1.27+) or the requested ones;
-- $4 traits it must have, $5 traits it must not have; $6 whether there is any filter at all
-- ($4, $5, $7, $8); $7 aggregates of which it must be in one (empty: any), $8 aggregates it must
-- be in none of; $9 how many at most (NULL: all); $10 traits in summaries (1.17+); $11 tree
-- fields in summaries (1.29+).
-- First row: `flat` (false: the world is not flat, nothing else follows; ask the tree search)
-- and `unknown` (trait names that do not exist: a 400, nothing else follows). Then one row per
-- candidate, in provider id order: its uuid and its provider_summaries entry.
CREATE FUNCTION placement_flat_candidate_rows(
    text[], int[], bool, text[], text[], bool, uuid[], uuid[], int, bool, bool)
RETURNS TABLE (flat bool, unknown text[], uuid text, entry bytea)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $fn$
#variable_conflict use_column
DECLARE
    is_flat       bool;
    unknown_      text[];
    required_ids  int[];
    forbidden_ids int[];
    points        int8multirange;
BEGIN
    WITH named AS MATERIALIZED (  -- the traits the request names, each by a probe of the name index
        SELECT t.id, t.name
          FROM unnest($4::text[] || $5::text[] || '{MISC_SHARES_VIA_AGGREGATE}'::text[]) AS x(name)
         CROSS JOIN LATERAL (SELECT * FROM traits t WHERE t.name = x.name OFFSET 0) t
    )
    SELECT NOT EXISTS (SELECT 1 FROM resource_providers WHERE parent_provider_id IS NOT NULL)
           -- min() over the index, so that "none" is one index probe, not a scan
           AND (SELECT min(pt.resource_provider_id) FROM provider_traits pt
                 WHERE pt.trait_id = (SELECT n.id FROM named n WHERE n.name = 'MISC_SHARES_VIA_AGGREGATE')) IS NULL,
           array(SELECT x FROM unnest($4::text[] || $5::text[]) AS x
                  WHERE NOT EXISTS (SELECT 1 FROM named n WHERE n.name = x)),
           array(SELECT n.id FROM named n WHERE n.name = ANY($4::text[])),
           array(SELECT n.id FROM named n WHERE n.name = ANY($5::text[])),
           -- NULL when a class has no number: nobody has room for it
           (SELECT CASE WHEN count(*) = cardinality($1::text[])
                        THEN range_agg(int8range(n.number::bigint * 4294967296 + w.amount,
                                                 n.number::bigint * 4294967296 + w.amount, '[]')) END
              FROM unnest($1::text[], $2::int[]) AS w(resource_class, amount)
              JOIN resource_class_numbers n ON n.name = w.resource_class)
      INTO is_flat, unknown_, required_ids, forbidden_ids, points;

    RETURN QUERY SELECT is_flat, unknown_, NULL::text, NULL::bytea;
    IF NOT is_flat OR cardinality(unknown_) > 0 OR points IS NULL THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH members AS (
        -- the members of any of the $7 aggregates, each once: a request that names aggregates
        -- walks only them (OFFSET 0 keeps it a probe per aggregate, where a generic plan would
        -- rather scan the whole table)
        SELECT DISTINCT pa.id
          FROM unnest($7::uuid[]) AS g(aggregate_uuid)
         CROSS JOIN LATERAL (SELECT p.resource_provider_id AS id FROM provider_aggregates p
                              WHERE p.aggregate_uuid = g.aggregate_uuid OFFSET 0) pa
    ),
    by_member AS (
        -- each member tested by probes, in id order, stopping at the limit (OFFSET 0: a probe
        -- of provider_summaries' primary key per member, not a join over every summary)
        SELECT s.*
          FROM members m
         CROSS JOIN LATERAL (SELECT * FROM provider_summaries s WHERE s.provider_id = m.id OFFSET 0) s
         WHERE cardinality($7::uuid[]) > 0
           AND s.room @> points
           AND (NOT s.stepped OR placement_steps_fit(s.provider_id, $1, $2))
           AND (cardinality(required_ids) = 0
                OR cardinality(required_ids) = (
                   SELECT count(*) FROM provider_traits pt
                    WHERE pt.resource_provider_id = m.id AND pt.trait_id = ANY(required_ids)))
           AND (cardinality(forbidden_ids) = 0 OR NOT EXISTS (
                   SELECT 1 FROM provider_traits pt
                    WHERE pt.resource_provider_id = m.id AND pt.trait_id = ANY(forbidden_ids)))
           AND (cardinality($8::uuid[]) = 0 OR NOT EXISTS (
                   SELECT 1 FROM provider_aggregates pa
                    WHERE pa.resource_provider_id = m.id AND pa.aggregate_uuid = ANY($8::uuid[])))
         ORDER BY m.id
         LIMIT $9
    ),
    filtered AS (
        -- traits, aggregates to avoid or a limit, without member_of: every summary in id order
        SELECT s.*
          FROM provider_summaries s
         WHERE cardinality($7::uuid[]) = 0 AND ($6::bool OR $9::int IS NOT NULL)
           -- coalesce: estimated as half the rows, not the few a containment would be, so that
           -- with a limit the plan walks the summaries in id order and stops, not sorts them all
           AND coalesce(s.room @> points, false)
           AND (NOT s.stepped OR placement_steps_fit(s.provider_id, $1, $2))
           AND (cardinality(required_ids) = 0 OR s.provider_id IN (
                SELECT pt.resource_provider_id FROM provider_traits pt
                 WHERE pt.trait_id = ANY(required_ids)
                 GROUP BY pt.resource_provider_id
                HAVING count(*) = cardinality(required_ids)))
           AND (cardinality(forbidden_ids) = 0 OR s.provider_id NOT IN (
                SELECT pt.resource_provider_id FROM provider_traits pt WHERE pt.trait_id = ANY(forbidden_ids)))
           AND (cardinality($8::uuid[]) = 0 OR s.provider_id NOT IN (
                SELECT pa.resource_provider_id FROM provider_aggregates pa
                 WHERE pa.aggregate_uuid = ANY($8::uuid[])))
         ORDER BY s.provider_id
         LIMIT $9
    ),
    everyone AS (
        SELECT s.*
          FROM provider_summaries s
         WHERE cardinality($7::uuid[]) = 0 AND NOT $6::bool AND $9::int IS NULL
           AND s.room @> points
           AND (NOT s.stepped OR placement_steps_fit(s.provider_id, $1, $2))
         ORDER BY s.provider_id
    )
    SELECT NULL::bool, NULL::text[], c.uuid,
           convert_to(CASE WHEN $3::bool AND $10::bool AND $11::bool THEN c.flat_entry ELSE
               '"' || c.uuid || '":{"resources":{'
               || CASE WHEN $3::bool THEN c.resources
                       ELSE (SELECT string_agg(i.summary, ',' ORDER BY i.resource_class COLLATE "C")
                               FROM inventories i
                              WHERE i.resource_provider_id = c.provider_id
                                AND i.resource_class = ANY($1::text[])) END
               || '}'
               || CASE WHEN $10::bool THEN c.traits ELSE '' END
               || CASE WHEN $11::bool
                       THEN ',"parent_provider_uuid":null,"root_provider_uuid":"' || c.uuid || '"'
                       ELSE '' END
               || '}' END, 'UTF8')
      FROM (SELECT * FROM by_member UNION ALL SELECT * FROM filtered UNION ALL SELECT * FROM everyone) c;
END
$fn$;

DROP FUNCTION placement_flat_candidates(text[], int[], bool, text[], text[], bool, uuid[], uuid[], int,
                                        text[], bool, bool);
