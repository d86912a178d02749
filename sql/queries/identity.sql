-- Identity: the bootstrap admin, password checks, role lookups, and the administration of
-- projects, users and role assignments (nova_async/identity/admin.py).

-- name: upsert_project
INSERT INTO projects (id, name, domain_id, description) VALUES ($1, $2, 'default', $3)
ON CONFLICT (domain_id, name) DO UPDATE SET name = EXCLUDED.name
RETURNING id;

-- name: upsert_user
INSERT INTO users (id, name, domain_id, password_hash) VALUES ($1, $2, 'default', $3)
ON CONFLICT (domain_id, name) DO NOTHING;

-- name: set_password
UPDATE users SET password_hash = $2 WHERE domain_id = 'default' AND name = $1;

-- name: assign_role
INSERT INTO role_assignments (user_id, project_id, role) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING;

-- name: user_by_name
SELECT * FROM users WHERE name = $1 AND domain_id = $2;

-- name: user_by_id
SELECT * FROM users WHERE id = $1;

-- name: project_by_name
SELECT * FROM projects WHERE name = $1 AND domain_id = $2;

-- name: project_by_id
SELECT * FROM projects WHERE id = $1;

-- name: roles_on_project
SELECT role FROM role_assignments WHERE user_id = $1 AND project_id = $2 ORDER BY role;

-- name: default_project_of
-- The user's default project, when it is enabled and they have a role on it.
SELECT p.* FROM users u JOIN projects p ON p.id = u.default_project_id
 WHERE u.id = $1 AND p.enabled
   AND EXISTS (SELECT 1 FROM role_assignments r WHERE r.user_id = u.id AND r.project_id = p.id);

-- name: first_project_of
SELECT p.* FROM projects p JOIN role_assignments r ON r.project_id = p.id
 WHERE r.user_id = $1 AND p.enabled ORDER BY p.name LIMIT 1;

-- name: list_projects
-- $1 name filter (NULL: any), $2 only this project (NULL: all; a member sees their own),
-- $3 enabled filter (NULL: any).
SELECT * FROM projects WHERE ($1::text IS NULL OR name = $1) AND ($2::text IS NULL OR id = $2)
   AND ($3::boolean IS NULL OR enabled = $3)
 ORDER BY name;

-- name: create_project
INSERT INTO projects (id, name, domain_id, description, enabled) VALUES ($1, $2, 'default', $3, $4)
RETURNING *;

-- name: update_project
-- NULL keeps a field as it is.
UPDATE projects SET name = coalesce($2, name), description = coalesce($3, description),
                    enabled = coalesce($4, enabled)
 WHERE id = $1
RETURNING *;

-- name: delete_project
DELETE FROM projects WHERE id = $1 RETURNING id;

-- name: create_user
INSERT INTO users (id, name, domain_id, password_hash, enabled, default_project_id, extra)
VALUES ($1, $2, 'default', $3, $4, $5, $6)
RETURNING *;

-- name: update_user
-- NULL keeps a field as it is; $5 says whether $6 (the default project, NULL to clear) is given;
-- $7 merges into the extra attributes, a null value removing one.
UPDATE users SET name = coalesce($2, name), password_hash = coalesce($3, password_hash),
                 enabled = coalesce($4, enabled),
                 default_project_id = CASE WHEN $5 THEN $6 ELSE default_project_id END,
                 extra = jsonb_strip_nulls(extra || $7::jsonb)
 WHERE id = $1
RETURNING *;

-- name: delete_user
DELETE FROM users WHERE id = $1 RETURNING id;

-- name: list_users
-- $1 name filter, $2 enabled filter (NULL: any).
SELECT * FROM users WHERE ($1::text IS NULL OR name = $1) AND ($2::boolean IS NULL OR enabled = $2)
 ORDER BY name;

-- name: list_roles
SELECT * FROM roles WHERE ($1::text IS NULL OR name = $1) ORDER BY name;

-- name: role_by_id
SELECT * FROM roles WHERE id = $1;

-- name: role_by_name
SELECT * FROM roles WHERE name = $1;

-- name: unassign_role
DELETE FROM role_assignments WHERE user_id = $1 AND project_id = $2 AND role = $3 RETURNING role;

-- name: has_role
SELECT EXISTS (SELECT 1 FROM role_assignments WHERE user_id = $1 AND project_id = $2 AND role = $3);

-- name: list_assignments
-- Filters by user id, project id and role id; NULL: any.
SELECT a.user_id, u.name AS user_name, a.project_id, p.name AS project_name,
       r.id AS role_id, r.name AS role_name
  FROM role_assignments a
  JOIN users u ON u.id = a.user_id
  JOIN projects p ON p.id = a.project_id
  JOIN roles r ON r.name = a.role
 WHERE ($1::text IS NULL OR a.user_id = $1) AND ($2::text IS NULL OR a.project_id = $2)
   AND ($3::text IS NULL OR r.id = $3)
 ORDER BY u.name, p.name, r.name;

-- name: projects_of_user
-- The projects where user $1 has a role; $2 true: enabled ones only.
SELECT p.* FROM projects p
 WHERE EXISTS (SELECT 1 FROM role_assignments a WHERE a.project_id = p.id AND a.user_id = $1)
   AND (NOT $2 OR p.enabled)
 ORDER BY p.name;

-- name: record_revocation
-- A revocation event ($1 user, $2 project, $3 one token's audit id; NULL: any) at $4; events
-- older than $5 can no longer match a token anyone would accept and go.
WITH pruned AS (DELETE FROM token_revocations WHERE revoked_at < $5)
INSERT INTO token_revocations (user_id, project_id, audit_id, revoked_at) VALUES ($1, $2, $3, $4);

-- name: notify_revocation
SELECT pg_notify('nova_async_token_revocations', '');

-- name: list_revocations
SELECT user_id, project_id, audit_id, revoked_at FROM token_revocations;

-- name: create_app_cred
-- NULL when the user has one of that name already.
INSERT INTO application_credentials (id, user_id, project_id, name, description, secret_hash, roles,
                                     unrestricted, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (user_id, name) DO NOTHING
RETURNING *;

-- name: app_creds_of
SELECT * FROM application_credentials
 WHERE user_id = $1 AND ($2::text IS NULL OR name = $2)
 ORDER BY created_at, id;

-- name: app_cred
SELECT * FROM application_credentials WHERE id = $1;

-- name: app_cred_by_name
SELECT * FROM application_credentials WHERE user_id = $1 AND name = $2;

-- name: delete_app_cred
DELETE FROM application_credentials WHERE id = $1 AND user_id = $2 RETURNING id;
