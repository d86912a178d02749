-- Placement: flat allocation candidates for `member_of` start from the aggregates' members,
-- and the response body is assembled by the caller.
--
-- placement_flat_candidates (sql/0026) answered every filtered request by walking all the
-- providers in id order and testing each against hashed sets of the providers with the
-- required traits and of the aggregates' members: thousands of index and heap visits to keep
-- a few hundred. A member_of request names who can be a candidate at all, and the index
-- provider_aggregates (aggregate_uuid, resource_provider_id) lists them, so that request now
-- walks only the members (in id order, stopping at the limit), and tests each one with index
-- probes: its required and forbidden traits by provider_traits' primary key, its room by one
-- probe of inventories' primary key. Requests without member_of keep 0026's two ways.
--
-- And for every request:
--   * the function returns the two lists of the body (allocation requests, provider
--     summaries), in pieces, and flat_candidates.py puts the body together in one copy:
--     gluing megabytes of text with || in SQL copied the whole body once per operator, and
--     the client read the one big row several times slower than the same bytes in pieces;
--   * an allocation request is built by concatenation from its template's two or three pieces
--     (one hole for the provider's uuid; two at 1.34+, with mappings) instead of array_to_string
--     per candidate;
--   * "does any provider share (MISC_SHARES_VIA_AGGREGATE)?" is one probe of the index
--     provider_traits_trait, instead of a scan of provider_traits, and the traits a request
--     names are looked up in one pass over traits, not one per use;
--   * JIT is off: the generic plan's cost counts every path, of which one runs, and compiling
--     it would cost far more than running it.
-- The answers are the same (tests/integration/placement/test_flat_candidates.py compares them
-- with the tree search's).
--
-- $10 is an allocation request's text cut where the provider's uuid goes, in two or three
-- pieces p0 uuid p1 [uuid p2]. The answer is two texts: (part 1) every candidate's request
-- joined by "p_last,p0", without the leading p0 and the trailing p_last, and (part 2) the
-- provider_summaries entries joined by ","; each cut into pieces, one row per piece, in order.
-- Without candidates: one row, part and piece NULL. Every row repeats `world_flat` and
-- `unknown_traits`, as 0026 defines them.
DROP FUNCTION placement_flat_candidates(text[], int[], bool, text[], text[], bool, uuid[], uuid[], int,
                                       text[], bool, bool);
CREATE FUNCTION placement_flat_candidates(
    text[], int[], bool, text[], text[], bool, uuid[], uuid[], int, text[], bool, bool)
RETURNS TABLE (world_flat bool, unknown_traits text[], part int, piece bytea)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    -- every trait this request names, looked up once
    WITH named_traits AS MATERIALIZED (
        SELECT t.id, t.name FROM traits t
         WHERE t.name = ANY($4::text[] || $5::text[] || '{MISC_SHARES_VIA_AGGREGATE}'::text[])
    ),
    world AS (
        SELECT NOT EXISTS (SELECT 1 FROM resource_providers WHERE parent_provider_id IS NOT NULL)
           -- min() over the index, so that "none" is one index probe, not a scan
           AND (SELECT min(pt.resource_provider_id) FROM provider_traits pt
                 WHERE pt.trait_id = (SELECT n.id FROM named_traits n
                                       WHERE n.name = 'MISC_SHARES_VIA_AGGREGATE')) IS NULL AS flat
    ),
    wanted AS (
        SELECT * FROM unnest($1::text[], $2::int[]) AS w(resource_class, amount)
    ),
    too_full AS (
        SELECT i.resource_provider_id AS id
          FROM wanted w JOIN inventories i ON i.resource_class = w.resource_class
         WHERE (SELECT flat FROM world) AND NOT $6::bool AND $9::int IS NULL
           AND NOT (i.capacity - i.used >= w.amount
                    AND w.amount BETWEEN i.min_unit AND i.max_unit
                    AND w.amount % i.step_size = 0)
    ),
    everyone AS (
        SELECT s.*
          FROM provider_summaries s
         WHERE (SELECT flat FROM world) AND NOT $6::bool AND $9::int IS NULL
           AND s.classes @> $1::text[]
           AND s.provider_id NOT IN (SELECT id FROM too_full)
         ORDER BY s.provider_id
    ),
    with_traits AS (
        SELECT pt.resource_provider_id AS id
          FROM traits t JOIN provider_traits pt ON pt.trait_id = t.id
         WHERE t.name = ANY($4::text[])
         GROUP BY pt.resource_provider_id
        HAVING count(*) = cardinality($4::text[])
    ),
    filtered AS (
        SELECT s.*
          FROM provider_summaries s
         WHERE (SELECT flat FROM world) AND ($6::bool OR $9::int IS NOT NULL)
           AND cardinality($7::uuid[]) = 0
           AND (cardinality($4::text[]) = 0 OR s.provider_id IN (SELECT id FROM with_traits))
           AND (cardinality($5::text[]) = 0 OR s.provider_id NOT IN (
                SELECT pt.resource_provider_id FROM traits t JOIN provider_traits pt ON pt.trait_id = t.id
                 WHERE t.name = ANY($5::text[])))
           AND (cardinality($8::uuid[]) = 0 OR s.provider_id NOT IN (
                SELECT pa.resource_provider_id FROM provider_aggregates pa
                 WHERE pa.aggregate_uuid = ANY($8::uuid[])))
           AND NOT EXISTS (
               SELECT 1 FROM wanted w
                WHERE NOT EXISTS (
                      SELECT 1 FROM inventories i
                       WHERE i.resource_provider_id = s.provider_id AND i.resource_class = w.resource_class
                         AND i.capacity - i.used >= w.amount
                         AND w.amount BETWEEN i.min_unit AND i.max_unit
                         AND w.amount % i.step_size = 0))
         ORDER BY s.provider_id
         LIMIT $9
    ),
    -- the providers in any of the $7 aggregates, each once, in id order: each aggregate's
    -- members read from provider_aggregates_aggregate (OFFSET 0 keeps it a probe per
    -- aggregate, where a generic plan would rather scan the whole table)
    members AS (
        SELECT DISTINCT pa.id
          FROM unnest($7::uuid[]) AS g(aggregate_uuid)
         CROSS JOIN LATERAL (SELECT p.resource_provider_id AS id FROM provider_aggregates p
                              WHERE p.aggregate_uuid = g.aggregate_uuid OFFSET 0) pa
         WHERE (SELECT flat FROM world)
         ORDER BY 1
    ),
    required_ids AS (
        SELECT array(SELECT n.id FROM named_traits n WHERE n.name = ANY($4::text[])) AS ids
    ),
    forbidden_ids AS (
        SELECT array(SELECT n.id FROM named_traits n WHERE n.name = ANY($5::text[])) AS ids
    ),
    -- OFFSET 0 keeps the lookup a per-member probe of provider_summaries' primary key (a
    -- subquery the planner may not flatten into a hash join over every summary), so that
    -- with a limit the walk stops after the first few members that qualify
    by_member AS (
        SELECT s.*
          FROM members m
         CROSS JOIN LATERAL (SELECT * FROM provider_summaries s WHERE s.provider_id = m.id OFFSET 0) s
         WHERE (cardinality($4::text[]) = 0
                OR cardinality($4::text[]) = (
                   SELECT count(*) FROM provider_traits pt
                    WHERE pt.resource_provider_id = m.id
                      AND pt.trait_id = ANY((SELECT r.ids FROM required_ids r)::int[])))
           AND (cardinality($5::text[]) = 0 OR NOT EXISTS (
                   SELECT 1 FROM provider_traits pt
                    WHERE pt.resource_provider_id = m.id
                      AND pt.trait_id = ANY((SELECT f.ids FROM forbidden_ids f)::int[])))
           AND (cardinality($8::uuid[]) = 0 OR NOT EXISTS (
                   SELECT 1 FROM provider_aggregates pa
                    WHERE pa.resource_provider_id = m.id AND pa.aggregate_uuid = ANY($8::uuid[])))
           -- one probe of the member's inventories, not one per requested class
           AND cardinality($1::text[]) = (
               SELECT count(*) FROM inventories i JOIN wanted w ON w.resource_class = i.resource_class
                WHERE i.resource_provider_id = m.id
                  AND i.capacity - i.used >= w.amount
                  AND w.amount BETWEEN i.min_unit AND i.max_unit
                  AND w.amount % i.step_size = 0)
         ORDER BY m.id
         LIMIT $9
    ),
    chosen AS (
        SELECT * FROM everyone
        UNION ALL
        SELECT * FROM filtered
        UNION ALL
        SELECT * FROM by_member
    ),
    answer AS (
    SELECT (SELECT flat FROM world) AS flat,
           array(SELECT n FROM unnest($4::text[] || $5::text[]) AS n
                  WHERE NOT EXISTS (SELECT 1 FROM named_traits t WHERE t.name = n)) AS unknown,
           -- the allocation requests, without the first piece of the first one and the last
           -- piece of the last one, which the caller adds
           convert_to(string_agg(CASE WHEN cardinality($10::text[]) = 2 THEN s.uuid
                                      ELSE s.uuid || $10[2] || s.uuid END,
                                 $10[cardinality($10::text[])] || ',' || $10[1]), 'UTF8') AS requests,
           convert_to(
               string_agg(CASE WHEN $3::bool AND $11::bool AND $12::bool THEN s.flat_entry ELSE
                   '"' || s.uuid || '":{"resources":{'
                   || CASE WHEN $3::bool THEN s.resources
                           ELSE (SELECT string_agg(i.summary, ',' ORDER BY i.resource_class COLLATE "C")
                                   FROM inventories i
                                  WHERE i.resource_provider_id = s.provider_id
                                    AND i.resource_class = ANY($1::text[])) END
                   || '}'
                   || CASE WHEN $11::bool THEN s.traits ELSE '' END
                   || CASE WHEN $12::bool
                           THEN ',"parent_provider_uuid":null,"root_provider_uuid":"' || s.uuid || '"'
                           ELSE '' END
                   || '}' END, ','), 'UTF8') AS summaries
      FROM chosen s
    )
    -- in pieces of at most 128 kB, one row each: a client reads many small rows faster than
    -- one row of megabytes (asyncpg takes several times longer over one 2 MB row)
    SELECT a.flat, a.unknown, p.part, p.piece
      FROM answer a
      LEFT JOIN LATERAL (
          SELECT 1 AS part, k, substring(a.requests FROM k * 131072 + 1 FOR 131072) AS piece
            FROM generate_series(0, (length(a.requests) - 1) / 131072) AS k
          UNION ALL
          SELECT 2, k, substring(a.summaries FROM k * 131072 + 1 FOR 131072)
            FROM generate_series(0, (length(a.summaries) - 1) / 131072) AS k
      ) p ON true
     ORDER BY p.part, p.k;
END
$fn$;
