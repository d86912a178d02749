-- Placement: a provider's summary row keeps the ids of its traits, so the flat candidate search
-- tests required and forbidden traits with one array comparison per provider.
--
-- placement_flat_candidate_rows (0038) asked provider_traits for every provider it walked: a
-- counting subquery per member of the named aggregates, or a grouped pass over every provider
-- with one of the traits. A request with `required` and `member_of` at 1,000 providers spent
-- about a quarter of its time in PostgreSQL there (measured with pgbench, function alone:
-- 0.77 ms, 0.59 ms with the ids on the row). The ids are written by the trigger that already
-- rewrites the row's trait text whenever a provider's traits change (0025, 0036), in the same
-- statement.
--
-- The members of named aggregates are also read differently: their ids are gathered first,
-- then their summaries by one ordered scan of the primary key over those ids, where 0038 made
-- a probe per member (0.87 -> 0.80 ms, same measure). Nothing else in the function changes.

ALTER TABLE provider_summaries ADD COLUMN trait_ids int[] NOT NULL DEFAULT '{}';

UPDATE provider_summaries s
   SET trait_ids = t.ids
  FROM (SELECT pt.resource_provider_id AS id, array_agg(pt.trait_id ORDER BY pt.trait_id) AS ids
          FROM provider_traits pt GROUP BY 1) t
 WHERE s.provider_id = t.id;

CREATE OR REPLACE FUNCTION placement_summary_refresh_traits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE provider_summaries s
       SET traits = t.traits, trait_ids = t.ids,
           flat_entry = placement_flat_entry(s.uuid, s.resources, t.traits)
      FROM (SELECT p.id, placement_summary_traits(p.id) AS traits,
                   array(SELECT pt.trait_id FROM provider_traits pt WHERE pt.resource_provider_id = p.id
                          ORDER BY pt.trait_id) AS ids
              FROM (SELECT DISTINCT c.resource_provider_id AS id FROM changed c) p) t
     WHERE s.provider_id = t.id;
    RETURN NULL;
END
$$;

-- 0038's function: the trait tests of by_member and filtered on the summary row, and
-- by_member's members read by one scan
CREATE OR REPLACE FUNCTION placement_flat_candidate_rows(
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
    WITH by_member AS (
        -- the members of any of the $7 aggregates: their ids gathered by a probe of the
        -- aggregate index per aggregate (OFFSET 0: a generic plan would rather read the whole
        -- table), then their summaries read by one scan of the summaries' primary key over
        -- those ids, not a probe each (a provider in two of the aggregates is read once)
        SELECT s.*
          FROM provider_summaries s
         WHERE cardinality($7::uuid[]) > 0
           AND s.provider_id = ANY(ARRAY(
                   SELECT pa.id
                     FROM unnest($7::uuid[]) AS g(aggregate_uuid)
                    CROSS JOIN LATERAL (SELECT p.resource_provider_id AS id FROM provider_aggregates p
                                         WHERE p.aggregate_uuid = g.aggregate_uuid OFFSET 0) pa))
           AND s.room @> points
           AND (NOT s.stepped OR placement_steps_fit(s.provider_id, $1, $2))
           AND s.trait_ids @> required_ids AND NOT s.trait_ids && forbidden_ids
           AND (cardinality($8::uuid[]) = 0 OR NOT EXISTS (
                   SELECT 1 FROM provider_aggregates pa
                    WHERE pa.resource_provider_id = s.provider_id AND pa.aggregate_uuid = ANY($8::uuid[])))
         ORDER BY s.provider_id
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
           -- coalesce again: as two array tests the planner would expect one row out of
           -- thousands, and sort them all rather than stop at the limit
           AND coalesce(s.trait_ids @> required_ids AND NOT s.trait_ids && forbidden_ids, false)
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
