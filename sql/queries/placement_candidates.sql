-- Allocation candidates across provider trees (GET /allocation_candidates).
--
-- PostgreSQL does the filtering that touches many rows: which trees have room, somewhere,
-- for every requested class, and which pass the tree-wide filters (in_tree, root_required).
-- Python then matches request groups against the few providers of the surviving trees.

-- name: candidate_trees
-- $1 requested classes, $2 per class the smallest amount any group asks of it, $3 per class
-- whether exactly one group asks for it (then min_unit/max_unit/step_size can be checked
-- here exactly), $4 uuid of a provider whose tree is the only one allowed (NULL: any),
-- $5 traits the root must have, $6 traits the root must not have, $7 how many trees at most
-- (NULL: all), $8 traits and $9 aggregates that some provider of the tree must have (the
-- plain `required`/`member_of` of every group: necessary, not sufficient, conditions),
-- $10 whether to return aggregates at all, $11 ids of the sharing providers (`sharing_providers`):
-- their room counts for every tree they share an aggregate with. Capacity is
-- floor((total - reserved) * ratio), the figure the claim checks against.
-- One row per provider of each chosen tree, roots in id order, with its inventories,
-- traits and aggregates.
WITH wanted AS (
    SELECT * FROM unnest($1::text[], $2::int[], $3::bool[]) AS w(resource_class, amount, exact)
),
-- (root, class) pairs the sharing providers lend to; few rows unless a sharer is in a big aggregate
lent AS (
    SELECT DISTINCT m.root_provider_id AS root_id, i.resource_class
      FROM unnest($11::bigint[]) AS sharing(id)
      JOIN inventories i ON i.resource_provider_id = sharing.id
      JOIN wanted w ON w.resource_class = i.resource_class
      JOIN provider_aggregates sa ON sa.resource_provider_id = sharing.id
      JOIN provider_aggregates ma ON ma.aggregate_uuid = sa.aggregate_uuid
      JOIN resource_providers m ON m.id = ma.resource_provider_id
     WHERE floor((i.total - i.reserved) * i.allocation_ratio) - i.used >= w.amount
       AND (NOT w.exact OR (w.amount BETWEEN i.min_unit AND i.max_unit AND w.amount % i.step_size = 0))
),
trait_trees AS (
    SELECT m.root_provider_id AS root_id
      FROM traits t
      JOIN provider_traits pt ON pt.trait_id = t.id
      JOIN resource_providers m ON m.id = pt.resource_provider_id
     WHERE t.name = ANY($8::text[])
     GROUP BY m.root_provider_id
    HAVING count(DISTINCT t.id) = cardinality($8::text[])
),
aggregate_trees AS (
    SELECT m.root_provider_id AS root_id
      FROM provider_aggregates pa
      JOIN resource_providers m ON m.id = pa.resource_provider_id
     WHERE pa.aggregate_uuid = ANY($9::uuid[])
     GROUP BY m.root_provider_id
    HAVING count(DISTINCT pa.aggregate_uuid) = cardinality($9::uuid[])
),
-- Walked root by root in id order with per-class index probes, so that with a limit the
-- scan stops after the first few roots that qualify instead of grouping every inventory.
roots AS (
    SELECT r.id AS root_id
      FROM resource_providers r
     WHERE r.parent_provider_id IS NULL
       AND NOT EXISTS (
           SELECT 1 FROM wanted w
            WHERE NOT EXISTS (
                  SELECT 1
                    FROM resource_providers m
                    JOIN inventories i ON i.resource_provider_id = m.id
                   WHERE m.root_provider_id = r.id AND i.resource_class = w.resource_class
                     AND floor((i.total - i.reserved) * i.allocation_ratio) - i.used >= w.amount
                     AND (NOT w.exact OR (w.amount BETWEEN i.min_unit AND i.max_unit
                                          AND w.amount % i.step_size = 0)))
              AND (r.id, w.resource_class) NOT IN (SELECT root_id, resource_class FROM lent))
       AND ($4::uuid IS NULL OR r.id = (SELECT t.root_provider_id FROM resource_providers t
                                         WHERE t.uuid = $4))
       AND (cardinality($5::text[]) = 0 OR cardinality($5::text[]) =
            (SELECT count(*) FROM provider_traits pt JOIN traits t ON t.id = pt.trait_id
              WHERE pt.resource_provider_id = r.id AND t.name = ANY($5::text[])))
       AND (cardinality($6::text[]) = 0 OR NOT EXISTS
            (SELECT 1 FROM provider_traits pt JOIN traits t ON t.id = pt.trait_id
              WHERE pt.resource_provider_id = r.id AND t.name = ANY($6::text[])))
       AND (cardinality($8::text[]) = 0 OR r.id IN (SELECT root_id FROM trait_trees))
       AND (cardinality($9::uuid[]) = 0 OR r.id IN (SELECT root_id FROM aggregate_trees))
     ORDER BY r.id
     LIMIT $7
)
-- per provider, by index; array_aggs of one group see its rows in the same order, so the
-- inventory arrays line up without sorting each
SELECT rp.id, rp.uuid::text AS uuid, rp.name, rp.generation, rp.parent_provider_id AS parent_id,
       rp.root_provider_id AS root_id, inv.classes, inv.capacity, inv.used, inv.min_unit,
       inv.max_unit, inv.step_size,
       array(SELECT t.name FROM provider_traits pt JOIN traits t ON t.id = pt.trait_id
              WHERE pt.resource_provider_id = rp.id) AS traits,
       CASE WHEN $10::bool THEN array(SELECT pa.aggregate_uuid::text FROM provider_aggregates pa
                                      WHERE pa.resource_provider_id = rp.id)
            ELSE '{}' END AS aggregates
  FROM roots
  JOIN resource_providers rp ON rp.root_provider_id = roots.root_id
  CROSS JOIN LATERAL (
      SELECT coalesce(array_agg(i.resource_class), '{}') AS classes,
             coalesce(array_agg(floor((i.total - i.reserved) * i.allocation_ratio)::bigint), '{}') AS capacity,
             coalesce(array_agg(i.used), '{}') AS used,
             coalesce(array_agg(i.min_unit), '{}') AS min_unit,
             coalesce(array_agg(i.max_unit), '{}') AS max_unit,
             coalesce(array_agg(i.step_size), '{}') AS step_size
        FROM inventories i WHERE i.resource_provider_id = rp.id) inv
 ORDER BY rp.root_provider_id, rp.id;

-- name: sharing_provider_ids
SELECT pt.resource_provider_id AS id
  FROM traits t JOIN provider_traits pt ON pt.trait_id = t.id
 WHERE t.name = 'MISC_SHARES_VIA_AGGREGATE';

-- name: sharing_providers
-- Providers with MISC_SHARES_VIA_AGGREGATE: they lend their inventory to every tree that has
-- a provider in one of their aggregates (`anchors`: the roots of those trees). $1: their ids,
-- from `sharing_provider_ids` (asked first: usually there are none, and then this is skipped).
SELECT s.id, s.uuid::text AS uuid, s.name, s.generation, s.parent_provider_id AS parent_id,
       s.root_provider_id AS root_id, inv.classes, inv.capacity, inv.used, inv.min_unit,
       inv.max_unit, inv.step_size,
       array(SELECT t2.name FROM provider_traits pt2 JOIN traits t2 ON t2.id = pt2.trait_id
              WHERE pt2.resource_provider_id = s.id) AS traits,
       array(SELECT pa.aggregate_uuid::text FROM provider_aggregates pa
              WHERE pa.resource_provider_id = s.id) AS aggregates,
       array(SELECT DISTINCT m.root_provider_id
               FROM provider_aggregates sa
               JOIN provider_aggregates ma ON ma.aggregate_uuid = sa.aggregate_uuid
               JOIN resource_providers m ON m.id = ma.resource_provider_id
              WHERE sa.resource_provider_id = s.id AND m.root_provider_id <> s.root_provider_id) AS anchors,
       (SELECT r.uuid::text FROM resource_providers r WHERE r.id = s.root_provider_id) AS root_uuid,
       (SELECT r.uuid::text FROM resource_providers r WHERE r.id = s.parent_provider_id) AS parent_uuid
  FROM unnest($1::bigint[]) AS sharers(id)
  JOIN resource_providers s ON s.id = sharers.id
  CROSS JOIN LATERAL (
      SELECT coalesce(array_agg(i.resource_class), '{}') AS classes,
             coalesce(array_agg(floor((i.total - i.reserved) * i.allocation_ratio)::bigint), '{}') AS capacity,
             coalesce(array_agg(i.used), '{}') AS used,
             coalesce(array_agg(i.min_unit), '{}') AS min_unit,
             coalesce(array_agg(i.max_unit), '{}') AS max_unit,
             coalesce(array_agg(i.step_size), '{}') AS step_size
        FROM inventories i WHERE i.resource_provider_id = s.id) inv
 ORDER BY s.id;

-- name: known_traits
SELECT name FROM traits WHERE name = ANY($1::text[]);

-- name: root_candidates
-- The scheduler's question (candidates.find): root providers that can take every requested
-- class ($1, amounts $2) on their own, each with capacity and usage of ALL its classes and its
-- traits. $3 limits the number of providers (NULL: no limit); $4 traits it must have, $5
-- traits it must not have, $6 aggregates of which it must be in at least one (empty: any).
-- $7 true: a random sample of $3 of them (the scheduler's bounded question), else by id.
-- Asked once per scheduling decision, so it does the least it can for every provider: the
-- function placement_root_candidates (sql/functions/) picks the providers with one pass over the
-- inventories of the requested classes, and only those chosen are described here, by the
-- summary texts the summary triggers keep per provider (candidates.py decodes them).
SELECT c.uuid, c.name, c.generation, s.resources, s.traits
  FROM placement_root_candidates($1::text[], $2::int[], $3::int, $4::text[], $5::text[], $6::uuid[],
                                 $7::bool) c
  JOIN provider_summaries s ON s.provider_id = c.id
 ORDER BY c.ord;

-- name: flat_candidates
-- The common request in the common world, answered by PostgreSQL (the function
-- placement_flat_candidate_rows, sql/functions/ says how): one unnumbered group (resources, plain
-- required/forbidden traits, at most one any-of member_of group) while no provider has a parent
-- and none shares. $1 classes, $2 amounts; $3 whether summaries show every class (1.27+) or the
-- requested ones; $4 traits it must have, $5 traits it must not have; $6 whether there is any
-- filter at all ($4, $5, $7, $8), $7 aggregates of which it must be in one (empty: any), $8
-- aggregates it must be in none of; $9 how many at most (NULL: all); $10 traits in summaries
-- (1.17+); $11 tree fields in summaries (1.29+). The first row: `flat` false (the world is not
-- flat: ask the tree search) and `unknown` (the trait names that do not exist: a 400). Then one
-- row per candidate, in order: `uuid` and `entry`, its provider_summaries entry as bytes.
SELECT f.flat, f.unknown, f.uuid, f.entry
  FROM placement_flat_candidate_rows($1::text[], $2::int[], $3::bool, $4::text[], $5::text[], $6::bool,
                                     $7::uuid[], $8::uuid[], $9::int, $10::bool, $11::bool) f;
