-- Placement: provider filters and tree moves, allocations seen from a provider, and usage
-- summed per project. The claim itself lives in placement.sql (allocations.py uses both).

-- name: filter_providers
-- Providers matching every filter; each NULL (or empty array) means "any".
-- $1 name, $2 uuid, $3 uuid of any provider in the wanted tree,
-- $4 jsonb list of aggregate groups: the provider must be in one aggregate of each group,
-- $5 aggregates the provider must be in none of,
-- $6/$7 resource classes and amounts the provider must have room for (the same test a claim
--       makes: capacity minus usage, min_unit, max_unit, step_size),
-- $8 jsonb list of trait groups: the provider must have one trait of each group,
-- $9 traits the provider must have none of.
SELECT rp.id, rp.uuid, rp.name, rp.generation, p.uuid AS parent_uuid, r.uuid AS root_uuid
  FROM resource_providers rp
  JOIN resource_providers r ON r.id = rp.root_provider_id
  LEFT JOIN resource_providers p ON p.id = rp.parent_provider_id
 WHERE ($1::text IS NULL OR rp.name = $1)
   AND ($2::uuid IS NULL OR rp.uuid = $2)
   AND ($3::uuid IS NULL OR rp.root_provider_id =
        (SELECT t.root_provider_id FROM resource_providers t WHERE t.uuid = $3))
   AND NOT EXISTS (
        SELECT 1 FROM jsonb_array_elements(coalesce($4::jsonb, '[]')) g
         WHERE NOT EXISTS (
               SELECT 1 FROM provider_aggregates pa
                WHERE pa.resource_provider_id = rp.id
                  AND pa.aggregate_uuid::text IN (SELECT jsonb_array_elements_text(g))))
   AND NOT EXISTS (
        SELECT 1 FROM provider_aggregates pa
         WHERE pa.resource_provider_id = rp.id
           AND pa.aggregate_uuid = ANY(coalesce($5::uuid[], '{}')))
   AND NOT EXISTS (
        SELECT 1 FROM unnest(coalesce($6::text[], '{}'), coalesce($7::int[], '{}')) AS w(rc, amount)
         WHERE NOT EXISTS (
               SELECT 1 FROM inventories i
                WHERE i.resource_provider_id = rp.id AND i.resource_class = w.rc
                  AND floor((i.total - i.reserved) * i.allocation_ratio) - i.used >= w.amount
                  AND w.amount BETWEEN i.min_unit AND i.max_unit
                  AND w.amount % i.step_size = 0))
   AND NOT EXISTS (
        SELECT 1 FROM jsonb_array_elements(coalesce($8::jsonb, '[]')) g
         WHERE NOT EXISTS (
               SELECT 1 FROM provider_traits pt JOIN traits t ON t.id = pt.trait_id
                WHERE pt.resource_provider_id = rp.id
                  AND t.name IN (SELECT jsonb_array_elements_text(g))))
   AND NOT EXISTS (
        SELECT 1 FROM provider_traits pt JOIN traits t ON t.id = pt.trait_id
         WHERE pt.resource_provider_id = rp.id AND t.name = ANY(coalesce($9::text[], '{}')))
 ORDER BY rp.id;

-- name: known_traits
SELECT name FROM traits WHERE name = ANY($1::text[]);

-- name: subtree_ids
-- Provider $1 and everything below it.
WITH RECURSIVE below(id) AS (
    SELECT $1::bigint
    UNION ALL
    SELECT c.id FROM resource_providers c JOIN below b ON c.parent_provider_id = b.id
)
SELECT id FROM below;

-- name: move_provider
-- Give provider $1 the name $2 and the parent $3 (NULL: it becomes a root); every provider
-- under it follows it into the tree of its new root ($4). The generation stays: it counts
-- changes to what the provider holds (inventories, allocations, traits, aggregates), and
-- upstream leaves it alone on a rename or a move too.
WITH RECURSIVE below(id) AS (
    SELECT $1::bigint
    UNION ALL
    SELECT c.id FROM resource_providers c JOIN below b ON c.parent_provider_id = b.id
),
moved AS (
    UPDATE resource_providers SET root_provider_id = $4
     WHERE id IN (SELECT id FROM below) AND id <> $1 AND root_provider_id <> $4
)
UPDATE resource_providers
   SET name = $2, parent_provider_id = $3, root_provider_id = $4, updated_at = now()
 WHERE id = $1;

-- name: lock_provider_by_id
SELECT id, uuid, root_provider_id FROM resource_providers WHERE id = $1 FOR UPDATE;

-- name: provider_allocations
-- Every consumer's allocations on provider $1 (by id).
SELECT c.uuid AS consumer_uuid, a.resource_class, a.used
  FROM allocations a JOIN consumers c ON c.id = a.consumer_id
 WHERE a.resource_provider_id = $1
 ORDER BY c.uuid, a.resource_class;

-- name: project_usages
-- Usage of project $1 (and of user $2 when not NULL) per consumer type (NULL: unknown).
SELECT c.consumer_type, a.resource_class, sum(a.used)::bigint AS used
  FROM consumers c JOIN allocations a ON a.consumer_id = c.id
 WHERE c.project_id = $1 AND ($2::text IS NULL OR c.user_id = $2)
 GROUP BY c.consumer_type, a.resource_class
 ORDER BY c.consumer_type, a.resource_class;

-- name: project_consumer_counts
-- How many consumers of each type the project (and user) has that hold something.
SELECT c.consumer_type, count(*) AS consumers
  FROM consumers c
 WHERE c.project_id = $1 AND ($2::text IS NULL OR c.user_id = $2)
   AND EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)
 GROUP BY c.consumer_type;
