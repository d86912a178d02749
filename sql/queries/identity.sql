-- Identity: the bootstrap admin, password checks, role lookups.

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

-- name: first_project_of
SELECT p.* FROM projects p JOIN role_assignments r ON r.project_id = p.id
 WHERE r.user_id = $1 AND p.enabled ORDER BY p.name LIMIT 1;

-- name: list_projects
-- $1 name filter (NULL: any), $2 only this project (NULL: all; a member sees their own).
SELECT * FROM projects WHERE ($1::text IS NULL OR name = $1) AND ($2::text IS NULL OR id = $2)
 ORDER BY name;
