-- Placement's catalog of names (resource classes, traits) and the qualities of providers
-- (their traits and aggregates).

-- name: sync_traits
INSERT INTO traits (name) SELECT unnest($1::text[]) ON CONFLICT (name) DO NOTHING;

-- name: list_traits
-- $1 names (NULL: any), $2 prefix (NULL: any), $3 associated (NULL: either).
SELECT t.name FROM traits t
 WHERE ($1::text[] IS NULL OR t.name = ANY($1))
   AND ($2::text IS NULL OR starts_with(t.name, $2))
   AND ($3::boolean IS NULL OR $3 = EXISTS (SELECT 1 FROM provider_traits pt WHERE pt.trait_id = t.id))
 ORDER BY t.name;

-- name: trait_exists
SELECT EXISTS (SELECT 1 FROM traits WHERE name = $1);

-- name: add_trait
INSERT INTO traits (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id;

-- name: trait_in_use
SELECT EXISTS (SELECT 1 FROM provider_traits pt JOIN traits t ON t.id = pt.trait_id WHERE t.name = $1);

-- name: delete_trait
DELETE FROM traits WHERE name = $1 RETURNING id;

-- name: known_traits
SELECT name FROM traits WHERE name = ANY($1::text[]);

-- name: provider_traits
SELECT t.name FROM provider_traits pt JOIN traits t ON t.id = pt.trait_id
 WHERE pt.resource_provider_id = $1 ORDER BY t.name;

-- name: clear_provider_traits
DELETE FROM provider_traits WHERE resource_provider_id = $1;

-- name: set_provider_traits
INSERT INTO provider_traits (resource_provider_id, trait_id)
SELECT $1, id FROM traits WHERE name = ANY($2::text[]);

-- name: provider_aggregates
SELECT aggregate_uuid FROM provider_aggregates WHERE resource_provider_id = $1 ORDER BY aggregate_uuid;

-- name: clear_provider_aggregates
DELETE FROM provider_aggregates WHERE resource_provider_id = $1;

-- name: set_provider_aggregates
INSERT INTO provider_aggregates (resource_provider_id, aggregate_uuid)
SELECT $1, unnest($2::uuid[]);

-- name: custom_classes
SELECT name FROM resource_classes ORDER BY name;

-- name: class_exists
SELECT EXISTS (SELECT 1 FROM resource_classes WHERE name = $1);

-- name: add_class
INSERT INTO resource_classes (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id;

-- name: class_in_use
SELECT EXISTS (SELECT 1 FROM inventories WHERE resource_class = $1);

-- name: delete_class
DELETE FROM resource_classes WHERE name = $1 RETURNING id;

-- name: rename_class
UPDATE resource_classes SET name = $2 WHERE name = $1;

-- name: known_custom_classes
SELECT name FROM resource_classes WHERE name = ANY($1::text[]);
