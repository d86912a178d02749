-- Placement: the two statements every placement request runs are planned once per connection.
--
-- Without this PostgreSQL plans them afresh for each set of parameters (a custom plan,
-- ~1-2 ms for the candidates query, a good part of a claim) until it decides a generic plan
-- would do, and for the candidates query it may never decide so. The generic plans are as good
-- as the custom ones here: every branch that depends on a parameter is cut at run time by a
-- one-time filter, and the claim's statements are keyed by primary keys.
ALTER FUNCTION placement_write_allocations(uuid[], text[], text[], text[], bool[], int[], int[],
                                           uuid[], text[], int[])
    SET plan_cache_mode = force_generic_plan;

-- GET /allocation_candidates in the common case, moved here from placement_candidates.sql
-- `flat_candidates` (which now calls it) so that it can carry that setting; the statement is
-- the same.
-- The common request in the common world, answered whole by PostgreSQL: one unnumbered group
-- (resources, plain required/forbidden traits, at most one any-of member_of group) while no
-- provider has a parent and none shares (MISC_SHARES_VIA_AGGREGATE). Then every tree is one
-- provider, a candidate is a provider with room for every class, and the response body can be
-- built here as text and handed to the client as bytes, never becoming Python objects.
-- $1 classes, $2 amounts; $3 whether summaries show every class (1.27+) or the requested ones;
-- $4 traits it must have, $5 traits it must not have; $6 whether there is any filter at all
-- ($4, $5, $7, $8), $7 aggregates of which it must be in one (empty: any), $8 aggregates it
-- must be in none of; $9 how many at most (NULL: all); $10 an allocation request's text cut
-- where the provider's uuid goes (the same for every candidate: only the uuid differs);
-- $11 traits in summaries (1.17+); $12 tree fields in summaries (1.29+).
-- Each provider's summary text (every class, its traits, and its whole entry as 1.29+ shows it)
-- is kept ready in provider_summaries (sql/0025); each inventory's own piece and its capacity in
-- inventories (sql/0023), for the requested-classes-only summaries before 1.27.
-- `flat` false: the world is not flat, nothing was built, ask the tree search. `unknown`: the
-- trait names that do not exist (a 400). The JSON is compact, as dump() writes it. Names of
-- classes and traits are [A-Z0-9_] (CHECK constraints of 0004) and uuids are hex, so none of
-- the text built here needs escaping.
--
-- Candidates come in provider id order (creation order; OpenStack Placement promises no
-- order); with a limit, they are the first `limit` providers by id. The aggregates below read
-- `chosen` in that order.
-- Two ways to the same rows, of which each request runs one (the other is cut off by its
-- one-time filter): everybody, without filter or limit, in one pass over the summaries and one
-- over the inventories of the requested classes (`everyone`); or, with a filter or a limit,
-- provider by provider in id order, the cheap trait and aggregate tests first, inventories
-- looked up only for those that pass, stopping at the limit (`filtered`).
CREATE FUNCTION placement_flat_candidates(
    text[], int[], bool, text[], text[], bool, uuid[], uuid[], int, text[], bool, bool)
RETURNS TABLE (world_flat bool, unknown_traits text[], response bytea)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH world AS (
        SELECT NOT EXISTS (SELECT 1 FROM resource_providers WHERE parent_provider_id IS NOT NULL)
           AND NOT EXISTS (SELECT 1 FROM traits t JOIN provider_traits pt ON pt.trait_id = t.id
                            WHERE t.name = 'MISC_SHARES_VIA_AGGREGATE') AS flat
    ),
    wanted AS (
        SELECT * FROM unnest($1::text[], $2::int[]) AS w(resource_class, amount)
    ),
    -- everybody: a provider is out when it lacks a requested class or when one of its inventories
    -- of a requested class is too full or has units that do not fit; few are, so this scans the
    -- requested classes' inventories once and keeps only the refusals, instead of grouping them all
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
    -- provider_summaries has one row per provider: walked in its stead, it gives the summary
    -- text without a second lookup
    filtered AS (
        SELECT s.*
          FROM provider_summaries s
         WHERE (SELECT flat FROM world) AND ($6::bool OR $9::int IS NOT NULL)
           AND (cardinality($4::text[]) = 0 OR s.provider_id IN (SELECT id FROM with_traits))
           AND (cardinality($5::text[]) = 0 OR s.provider_id NOT IN (
                SELECT pt.resource_provider_id FROM traits t JOIN provider_traits pt ON pt.trait_id = t.id
                 WHERE t.name = ANY($5::text[])))
           AND (cardinality($7::uuid[]) = 0 OR s.provider_id IN (
                SELECT pa.resource_provider_id FROM provider_aggregates pa
                 WHERE pa.aggregate_uuid = ANY($7::uuid[])))
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
    chosen AS (
        SELECT * FROM everyone
        UNION ALL
        SELECT * FROM filtered
    )
    SELECT (SELECT flat FROM world) AS flat,
           array(SELECT n FROM unnest($4::text[] || $5::text[]) AS n
                  WHERE NOT EXISTS (SELECT 1 FROM traits t WHERE t.name = n)) AS unknown,
           convert_to(
               '{"allocation_requests":['
               || coalesce(string_agg(array_to_string($10::text[], s.uuid), ','), '')
               || '],"provider_summaries":{'
               || coalesce(string_agg(CASE WHEN $3::bool AND $11::bool AND $12::bool THEN s.flat_entry ELSE
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
                      || '}' END, ','), '')
               || '}}', 'UTF8') AS body
      FROM chosen s;
END
$fn$;
