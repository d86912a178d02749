-- Resize (Nova's "migrations"): one row per resize of an instance, from its start to its
-- confirm or revert. While it is under way the old flavor's allocation is held in placement
-- by the migration's uuid (as Nova does), and the new flavor's by the instance.
CREATE TABLE migrations (
    id               bigserial PRIMARY KEY,
    uuid             uuid NOT NULL UNIQUE,
    instance_uuid    uuid NOT NULL REFERENCES instances (uuid) ON DELETE CASCADE,
    migration_type   text NOT NULL DEFAULT 'resize',
    -- pre-migrating → migrating → post-migrating → finished → confirming → confirmed,
    -- or finished → reverting → reverted; error when it could not be done.
    status           text NOT NULL,
    source_compute   text NOT NULL,
    source_node      text,
    dest_compute     text,
    dest_node        text,
    old_flavor       jsonb NOT NULL,
    new_flavor       jsonb NOT NULL,
    old_request_spec jsonb NOT NULL,
    old_vm_state     text NOT NULL CHECK (old_vm_state IN ('active', 'stopped')),
    project_id       text NOT NULL,
    user_id          text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz
);
CREATE INDEX migrations_instance ON migrations (instance_uuid, id);
CREATE INDEX migrations_open ON migrations (status) WHERE status NOT IN ('confirmed', 'reverted', 'error');
