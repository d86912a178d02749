-- 0056: Keystone's application credentials: a user's secret for one of their projects, with
-- some or all of the roles they have there, that a program authenticates with instead of
-- the user's password. Only a hash of the secret is kept. Deleting the user or the project
-- deletes them; a deleted one's tokens are revoked by an event (audit id "app-cred:<id>").
CREATE TABLE application_credentials (
    id           text PRIMARY KEY,
    user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    project_id   text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name         text NOT NULL,
    description  text,
    secret_hash  text NOT NULL,
    roles        text[] NOT NULL,
    unrestricted boolean NOT NULL DEFAULT false,
    expires_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, name)
);
