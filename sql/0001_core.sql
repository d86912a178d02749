-- Secrets the service generates for itself (the token signing key).
CREATE TABLE service_keys (
    name   text PRIMARY KEY,
    secret bytea NOT NULL
);

-- Identity: one domain ("Default", id "default"), projects, users, role assignments.
CREATE TABLE projects (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    domain_id   text NOT NULL DEFAULT 'default',
    description text NOT NULL DEFAULT '',
    enabled     boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (domain_id, name)
);

CREATE TABLE users (
    id            text PRIMARY KEY,
    name          text NOT NULL,
    domain_id     text NOT NULL DEFAULT 'default',
    password_hash text NOT NULL,
    enabled       boolean NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (domain_id, name)
);

CREATE TABLE role_assignments (
    user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    role       text NOT NULL,
    PRIMARY KEY (user_id, project_id, role)
);
