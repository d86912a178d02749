-- Glance's metadata definitions catalog. Who sees a namespace: an admin, its owner's
-- project, and everyone for a public one.

-- name: get_namespace
SELECT * FROM metadef_namespaces WHERE namespace = $1;

-- name: get_namespace_for_update
SELECT * FROM metadef_namespaces WHERE namespace = $1 FOR UPDATE;

-- name: list_namespaces
-- $1 admin, $2 caller's project, $3 visibility (NULL: any), $4 resource types (NULL: any;
-- else namespaces associated with one of them).
SELECT * FROM metadef_namespaces n
 WHERE ($1 OR n.visibility = 'public' OR n.owner = $2)
   AND ($3::text IS NULL OR n.visibility = $3)
   AND ($4::text[] IS NULL OR EXISTS (SELECT 1 FROM metadef_resource_type_associations a
                                       WHERE a.namespace_id = n.id AND a.resource_type = ANY($4)))
 ORDER BY n.created_at DESC, n.id DESC;

-- name: insert_namespace
INSERT INTO metadef_namespaces (namespace, display_name, description, visibility, protected, owner)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- name: update_namespace
UPDATE metadef_namespaces
   SET namespace = $2, display_name = $3, description = $4, visibility = $5, protected = $6,
       owner = $7, updated_at = now()
 WHERE id = $1
RETURNING *;

-- name: delete_namespace
DELETE FROM metadef_namespaces WHERE id = $1;

-- name: list_resource_types
SELECT * FROM metadef_resource_types ORDER BY name;

-- name: ensure_resource_type
INSERT INTO metadef_resource_types (name) VALUES ($1) ON CONFLICT (name) DO NOTHING;

-- name: list_associations
-- The associations of the namespaces $1 (an array of ids).
SELECT * FROM metadef_resource_type_associations
 WHERE namespace_id = ANY($1::bigint[])
 ORDER BY created_at, resource_type;

-- name: insert_association
INSERT INTO metadef_resource_type_associations (namespace_id, resource_type, prefix, properties_target)
VALUES ($1, $2, $3, $4)
RETURNING *;

-- name: delete_association
DELETE FROM metadef_resource_type_associations
 WHERE namespace_id = $1 AND resource_type = $2
RETURNING resource_type;

-- name: list_items
-- A namespace's objects, properties or tags ($2 the kind).
SELECT * FROM metadef_items WHERE namespace_id = $1 AND kind = $2 ORDER BY created_at, name;

-- name: get_item
SELECT * FROM metadef_items WHERE namespace_id = $1 AND kind = $2 AND name = $3;

-- name: insert_item
INSERT INTO metadef_items (namespace_id, kind, name, body) VALUES ($1, $2, $3, $4) RETURNING *;

-- name: update_item
-- Replace the item named $3 by one named $4 (a rename when they differ) with body $5.
UPDATE metadef_items SET name = $4, body = $5, updated_at = now()
 WHERE namespace_id = $1 AND kind = $2 AND name = $3
RETURNING *;

-- name: delete_item
DELETE FROM metadef_items WHERE namespace_id = $1 AND kind = $2 AND name = $3 RETURNING name;

-- name: delete_items
DELETE FROM metadef_items WHERE namespace_id = $1 AND kind = $2;
