-- Identity managed by people: roles as rows, the user attributes Keystone's API keeps, and
-- token revocation events (signed tokens are checked against these in memory, see
-- nova_async/common/tokens.py).

-- Role ids are the same stable ids tokens have always carried: sha256("role/<name>")[:32].
CREATE TABLE roles (
    id          text PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    description text NOT NULL DEFAULT ''
);

INSERT INTO roles (id, name, description)
SELECT substr(encode(sha256(convert_to('role/' || name, 'UTF8')), 'hex'), 1, 32), name, description
  FROM (VALUES ('admin', 'Everything, in every project; the only role that manages identity.'),
               ('member', 'Creates and changes resources in its own project.'),
               ('reader', 'Reads its own project''s resources; changes nothing.')) AS r (name, description);

-- Assignments keep naming roles by name; the name must exist.
ALTER TABLE role_assignments
    ADD CONSTRAINT role_assignments_role_fkey FOREIGN KEY (role) REFERENCES roles (name) ON UPDATE CASCADE;
CREATE INDEX role_assignments_project ON role_assignments (project_id);

ALTER TABLE users
    ADD COLUMN default_project_id text REFERENCES projects (id) ON DELETE SET NULL,
    -- Free-form attributes Keystone echoes back (description, email, ...).
    ADD COLUMN extra jsonb NOT NULL DEFAULT '{}';

-- A token issued at or before revoked_at is refused when it matches the event: by user (user
-- deleted, disabled or given a new password), by project (project deleted or disabled), or by
-- both (a role taken away). NULL means "any".
CREATE TABLE token_revocations (
    id         bigserial PRIMARY KEY,
    user_id    text,
    project_id text,
    revoked_at double precision NOT NULL  -- epoch seconds, the same clock as a token's issued_at
);
CREATE INDEX token_revocations_revoked_at ON token_revocations (revoked_at);
