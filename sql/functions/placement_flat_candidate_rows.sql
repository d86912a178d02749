-- placement_flat_candidate_rows: GET /allocation_candidates in the common case, answered by
-- PostgreSQL (placement_candidates.sql `flat_candidates` calls it; flat_candidates.py joins the
-- rows into the body): one unnumbered request group while no provider has a parent and none
-- shares (MISC_SHARES_VIA_AGGREGATE), so that every tree is one provider and a candidate is a
-- provider with room for every requested class. The answers are the tree search's
-- (tests/integration/placement/test_flat_candidates.py compares them).
--
-- It reads what the summary triggers keep on each provider's provider_summaries row: its
-- texts, its trait ids, and its room as one int8multirange: per inventory, the amounts one
-- allocation may take, in a band of its own per class (placement_room_range). A request
-- becomes the set of its points (class number * 2^32 + amount), and "room for every requested
-- class" is `room @> points`, one comparison per provider. A class no inventory ever had has no
-- number, so nobody has room for it. step_size is the one rule a range cannot say: a provider
-- with any step_size above 1 is `stepped` and checked against its inventories
-- (placement_steps_fit).
--
-- A first statement settles what the searches share (whether the world is flat, the named
-- traits, the request's points); a second runs the search the request needs, the others cut
-- off by their conditions: the members of the named aggregates (member_of: their ids gathered
-- per aggregate, then their summaries read by one ordered scan); every summary in id order,
-- filtered by traits or aggregates to avoid, stopping at the limit; or everyone. Generic plans,
-- planned once per connection (planning afresh for each request's parameters cost more than
-- running it), and no JIT: the generic plan's cost counts every search, of which one runs.
--
-- $1 classes, $2 amounts; $3 whether summaries show every class (1.27+) or the requested ones;
-- $4 traits it must have, $5 traits it must not have; $6 whether there is any filter at all
-- ($4, $5, $7, $8); $7 aggregates of which it must be in one (empty: any), $8 aggregates it must
-- be in none of; $9 how many at most (NULL: all); $10 traits in summaries (1.17+); $11 tree
-- fields in summaries (1.29+).
-- First row: `flat` (false: the world is not flat, nothing else follows; ask the tree search)
-- and `unknown` (trait names that do not exist: a 400, nothing else follows). Then one row per
-- candidate, in provider id order: its uuid and its provider_summaries entry (compact JSON, as
-- dump() writes it; class and trait names are [A-Z0-9_] and uuids hex: nothing to escape).
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
