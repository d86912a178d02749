-- Placement: providers, inventories, usages, allocation candidates and allocations.
-- Writers lock the provider rows they touch, in id order, after locking the consumer.

-- name: get_provider
SELECT rp.id, rp.uuid, rp.name, rp.generation, p.uuid AS parent_uuid, r.uuid AS root_uuid
  FROM resource_providers rp
  JOIN resource_providers r ON r.id = rp.root_provider_id
  LEFT JOIN resource_providers p ON p.id = rp.parent_provider_id
 WHERE rp.uuid = $1;

-- name: lock_provider
SELECT id, uuid, name, generation, parent_provider_id
  FROM resource_providers WHERE uuid = $1 FOR UPDATE;

-- name: create_provider
-- $1 uuid, $2 name, $3 parent's id (NULL for a root). A root is its own root.
WITH new AS (SELECT nextval(pg_get_serial_sequence('resource_providers', 'id')) AS id)
INSERT INTO resource_providers (id, uuid, name, parent_provider_id, root_provider_id)
SELECT new.id, $1, $2, parent.id, coalesce(parent.root_provider_id, new.id)
  FROM new LEFT JOIN resource_providers parent ON parent.id = $3
ON CONFLICT DO NOTHING
RETURNING id;

-- name: find_provider_by_name
SELECT uuid FROM resource_providers WHERE name = $1;

-- name: rename_provider
UPDATE resource_providers SET name = $2, generation = generation + 1, updated_at = now()
 WHERE id = $1;

-- name: bump_providers
UPDATE resource_providers SET generation = generation + 1, updated_at = now()
 WHERE id = ANY($1::bigint[])
RETURNING id, generation;

-- name: provider_in_use
SELECT EXISTS (SELECT 1 FROM inventories WHERE resource_provider_id = $1 AND used > 0) AS allocated,
       EXISTS (SELECT 1 FROM resource_providers WHERE parent_provider_id = $1) AS has_children;

-- name: delete_provider
DELETE FROM resource_providers WHERE id = $1;

-- name: inventories
SELECT resource_class, total, reserved, min_unit, max_unit, step_size, allocation_ratio
  FROM inventories WHERE resource_provider_id = $1
 ORDER BY resource_class;

-- name: upsert_inventories
-- $1 provider id, then one array per column, all in the same order.
INSERT INTO inventories (resource_provider_id, resource_class, total, reserved, min_unit,
                         max_unit, step_size, allocation_ratio)
SELECT $1, * FROM unnest($2::text[], $3::int[], $4::int[], $5::int[], $6::int[], $7::int[],
                         $8::float8[])
ON CONFLICT (resource_provider_id, resource_class) DO UPDATE
   SET total = EXCLUDED.total, reserved = EXCLUDED.reserved, min_unit = EXCLUDED.min_unit,
       max_unit = EXCLUDED.max_unit, step_size = EXCLUDED.step_size,
       allocation_ratio = EXCLUDED.allocation_ratio;

-- name: classes_in_use_outside
-- Resource classes with allocations on provider $1 that are not in $2.
SELECT resource_class FROM inventories
 WHERE resource_provider_id = $1 AND used > 0 AND resource_class <> ALL($2::text[])
 ORDER BY resource_class;

-- name: delete_inventories_outside
DELETE FROM inventories WHERE resource_provider_id = $1 AND resource_class <> ALL($2::text[]);

-- name: usages
SELECT resource_class, used FROM inventories WHERE resource_provider_id = $1
 ORDER BY resource_class;

-- name: providers_with_room
-- Only asked when no provider fits: per requested class, how many root providers could
-- take that class alone. It tells a user which resource is short.
WITH wanted AS (
    SELECT * FROM unnest($1::text[], $2::int[]) AS w(resource_class, amount)
)
SELECT w.resource_class, count(rp.id) AS providers
  FROM wanted w
  LEFT JOIN inventories i
    ON i.resource_class = w.resource_class
   AND w.amount BETWEEN i.min_unit AND i.max_unit
   AND w.amount % i.step_size = 0
   AND floor((i.total - i.reserved) * i.allocation_ratio) - i.used >= w.amount
  LEFT JOIN resource_providers rp ON rp.id = i.resource_provider_id AND rp.parent_provider_id IS NULL
 GROUP BY w.resource_class;

-- name: consumers_among
SELECT uuid FROM consumers WHERE uuid = ANY($1::uuid[]);

-- name: delete_allocations
-- Everything the consumer $1 holds given back and the consumer removed, unless a holder ($2
-- pids, $3 lock keys) is gone (sql/functions/placement_delete_allocations.sql says how). NULL:
-- no such consumer; else how many providers it held room on.
SELECT placement_delete_allocations($1::uuid, $2::int[], $3::bigint[]);

-- name: allocations_of
SELECT rp.uuid AS provider_uuid, rp.generation AS provider_generation, a.resource_class,
       a.used, c.project_id, c.user_id, c.generation AS consumer_generation, c.consumer_type
  FROM consumers c
  JOIN allocations a ON a.consumer_id = c.id
  JOIN resource_providers rp ON rp.id = a.resource_provider_id
 WHERE c.uuid = $1
 ORDER BY rp.uuid, a.resource_class;

-- name: write_allocations
-- One or more consumers' allocations replaced, all or nothing (sql/functions/placement_write_allocations.sql
-- says how).
SELECT written_consumer, new_generation
  FROM placement_write_allocations($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bool[],
                                   $6::int[], $7::int[], $8::uuid[], $9::text[], $10::int[]);

-- name: write_allocations_held
-- write_allocations, undone unless every holder still holds its lock
-- (sql/functions/placement_write_allocations_held.sql).
SELECT written_consumer, new_generation
  FROM placement_write_allocations_held($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bool[],
                                        $6::int[], $7::int[], $8::uuid[], $9::text[], $10::int[],
                                        $11::int[], $12::bigint[]);
