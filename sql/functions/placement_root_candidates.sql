-- placement_root_candidates: the scheduler's candidates question (placement_candidates.sql
-- `root_candidates`, asked once per scheduling decision) picks its providers in a function, so
-- that it can carry a planner setting.
--
-- Which providers have room is a grouping of the requested classes' inventories, and the
-- planner cannot estimate how many groups pass `HAVING count(*) = <classes asked>`: it guesses
-- one, and so probes resource_providers' primary key once per provider with room instead of
-- hashing the table once. With nested loops off inside this function the joins are hashed. The
-- trait tests go by trait ids looked up once, so that they stay index probes (a join to
-- `traits` would hash the whole table for every provider). Describing the chosen providers is
-- left to the caller's statement, outside these settings: one primary-key probe of
-- provider_summaries each.
--
-- $1 classes, $2 amounts, $3 how many at most (NULL: all), $4 traits it must have, $5 traits
-- it must not have, $6 aggregates of which it must be in one (empty: any), $7 a random
-- sample (else the first by id). Root providers only. `ord`: the answer's order.
CREATE OR REPLACE FUNCTION placement_root_candidates(text[], int[], int, text[], text[], uuid[], bool)
RETURNS TABLE (id bigint, uuid uuid, name text, generation int, ord bigint)
LANGUAGE plpgsql
SET enable_nestloop = off
ROWS 50
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH wanted AS (
        SELECT * FROM unnest($1, $2) AS w(resource_class, amount)
    ),
    named AS (
        SELECT array(SELECT t.id FROM traits t WHERE t.name = ANY($4)) AS required,
               array(SELECT t.id FROM traits t WHERE t.name = ANY($5)) AS forbidden
    ),
    with_room AS (
        SELECT i.resource_provider_id AS id
          FROM wanted w JOIN inventories i ON i.resource_class = w.resource_class
         WHERE i.capacity - i.used >= w.amount
           AND w.amount BETWEEN i.min_unit AND i.max_unit
           AND w.amount % i.step_size = 0
         GROUP BY i.resource_provider_id
        HAVING count(*) = cardinality($1)
    ),
    chosen AS (
        SELECT rp.id, rp.uuid, rp.name, rp.generation, CASE WHEN $7 THEN random() END AS shuffle
          FROM with_room r JOIN resource_providers rp ON rp.id = r.id
         WHERE rp.parent_provider_id IS NULL
           AND (cardinality($4) = 0 OR cardinality($4) = (
                SELECT count(*) FROM provider_traits pt
                 WHERE pt.resource_provider_id = rp.id
                   AND pt.trait_id = ANY((SELECT n.required FROM named n)::int[])))
           AND (cardinality($5) = 0 OR NOT EXISTS (
                SELECT 1 FROM provider_traits pt
                 WHERE pt.resource_provider_id = rp.id
                   AND pt.trait_id = ANY((SELECT n.forbidden FROM named n)::int[])))
           AND (cardinality($6) = 0 OR EXISTS (
                SELECT 1 FROM provider_aggregates pa
                 WHERE pa.resource_provider_id = rp.id AND pa.aggregate_uuid = ANY($6)))
         ORDER BY shuffle, rp.id
         LIMIT $3
    )
    SELECT c.id, c.uuid, c.name, c.generation, row_number() OVER (ORDER BY c.shuffle, c.id)
      FROM chosen c;
END
$fn$;
