-- Flavors and their extra specs.

-- name: create
INSERT INTO flavors (id, name, memory_mb, vcpus, root_gb, ephemeral_gb, swap, rxtx_factor, is_public,
                     description)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
RETURNING *;

-- name: get
SELECT * FROM flavors WHERE id = $1;

-- name: list
-- $1: is_public filter (NULL = all), $2/$3: minimum ram/disk, $4 marker (a flavor id: the page
-- starts after it in this order; it need not pass the filters, as Nova), $5 limit, $6 a
-- member's project (NULL for an admin): its private flavors are listed with the public ones;
-- $7 a regular expression names must match (2.102; NULL: any).
-- {key} and {direction} (asc/desc) come from api/flavor_store.py's table of sort keys, never
-- from the request as written; the flavor id breaks ties, so the order is total.
SELECT * FROM flavors
 WHERE ($1::boolean IS NULL OR is_public = $1
        OR ($6::text IS NOT NULL AND EXISTS (SELECT 1 FROM flavor_projects a
                                              WHERE a.flavor_id = flavors.id AND a.project_id = $6)))
   AND memory_mb >= $2 AND root_gb >= $3
   AND ($7::text IS NULL OR name ~ $7)
   AND ($4::text IS NULL OR ({key}, id) {after} (SELECT {key}, id FROM flavors WHERE id = $4))
 ORDER BY {key} {direction}, id {direction}
 LIMIT $5;

-- name: exists
SELECT EXISTS (SELECT 1 FROM flavors WHERE id = $1);

-- name: delete
DELETE FROM flavors WHERE id = $1 RETURNING id;

-- name: merge_extra_specs
UPDATE flavors SET extra_specs = extra_specs || $2::jsonb, updated_at = now() WHERE id = $1
RETURNING extra_specs;

-- name: delete_extra_spec
UPDATE flavors SET extra_specs = extra_specs - $2, updated_at = now()
 WHERE id = $1 AND extra_specs ? $2
RETURNING extra_specs;

-- name: has_access
SELECT EXISTS (SELECT 1 FROM flavor_projects WHERE flavor_id = $1 AND project_id = $2);

-- name: access_list
SELECT flavor_id, project_id FROM flavor_projects WHERE flavor_id = $1 ORDER BY created_at, project_id;

-- name: add_access
-- NULL when the project has access already.
INSERT INTO flavor_projects (flavor_id, project_id) VALUES ($1, $2)
ON CONFLICT DO NOTHING
RETURNING flavor_id;

-- name: remove_access
DELETE FROM flavor_projects WHERE flavor_id = $1 AND project_id = $2 RETURNING flavor_id;

-- name: set_description
UPDATE flavors SET description = $2, updated_at = now() WHERE id = $1 RETURNING *;

-- name: internal_ids
-- The numbers (Nova's integer flavor ids) of the flavors $1 names by flavorid.
SELECT id, internal_id FROM flavors WHERE id = ANY($1::text[]);
