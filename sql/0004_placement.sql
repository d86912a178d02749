-- Placement: resource providers (possibly nested), what they hold (inventories), who uses
-- what (consumers and their allocations), and the qualitative side (traits, aggregates).
--
-- Providers and consumers carry a generation that every write bumps; writers lock the
-- provider rows they change (SELECT ... FOR UPDATE) so a claim's capacity check and its
-- insert happen under the same lock.
--
-- inventories.used is the sum of the allocations against that inventory, kept by a trigger
-- on allocations in the same transaction as the allocation change, so it cannot drift; it
-- lets allocation candidates read usage from ~3 rows per provider instead of summing every
-- allocation on every request. An allocation must point at an existing inventory (a foreign
-- key), which also stops an inventory in use from being deleted.

CREATE TABLE resource_providers (
    id                 bigserial PRIMARY KEY,
    uuid               uuid NOT NULL UNIQUE,
    name               text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
    generation         integer NOT NULL DEFAULT 0,
    -- a root is its own root; children point at their parent and share the root
    parent_provider_id bigint REFERENCES resource_providers (id),
    root_provider_id   bigint NOT NULL REFERENCES resource_providers (id),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz
);
CREATE INDEX resource_providers_parent ON resource_providers (parent_provider_id);
CREATE INDEX resource_providers_root ON resource_providers (root_provider_id);

CREATE TABLE inventories (
    resource_provider_id bigint NOT NULL REFERENCES resource_providers (id) ON DELETE CASCADE,
    resource_class       text NOT NULL CHECK (resource_class ~ '^[A-Z0-9_]{1,255}$'),
    total                integer NOT NULL CHECK (total >= 1),
    reserved             integer NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    min_unit             integer NOT NULL DEFAULT 1 CHECK (min_unit >= 1),
    max_unit             integer NOT NULL CHECK (max_unit >= 1),
    step_size            integer NOT NULL DEFAULT 1 CHECK (step_size >= 1),
    allocation_ratio     double precision NOT NULL DEFAULT 1.0 CHECK (allocation_ratio > 0),
    used                 bigint NOT NULL DEFAULT 0 CHECK (used >= 0),  -- kept by the trigger below
    PRIMARY KEY (resource_provider_id, resource_class)
) WITH (fillfactor = 70);  -- room for the HOT updates of `used` every claim makes
-- allocation candidates start from "who has this class at all"
CREATE INDEX inventories_class ON inventories (resource_class, resource_provider_id);

CREATE TABLE consumers (
    id            bigserial PRIMARY KEY,
    uuid          uuid NOT NULL UNIQUE,
    project_id    text NOT NULL,
    user_id       text NOT NULL,
    generation    integer NOT NULL DEFAULT 0,
    consumer_type text,                        -- INSTANCE, MIGRATION, ... (NULL: unknown)
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz
);
CREATE INDEX consumers_project_user ON consumers (project_id, user_id);

CREATE TABLE allocations (
    consumer_id          bigint NOT NULL REFERENCES consumers (id) ON DELETE CASCADE,
    resource_provider_id bigint NOT NULL,
    resource_class       text NOT NULL,
    used                 integer NOT NULL CHECK (used >= 1),
    created_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_id, resource_provider_id, resource_class),
    FOREIGN KEY (resource_provider_id, resource_class)
        REFERENCES inventories (resource_provider_id, resource_class)
);
CREATE INDEX allocations_inventory ON allocations (resource_provider_id, resource_class);

CREATE FUNCTION placement_track_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE inventories SET used = used - OLD.used
         WHERE resource_provider_id = OLD.resource_provider_id
           AND resource_class = OLD.resource_class;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE inventories SET used = used + NEW.used
         WHERE resource_provider_id = NEW.resource_provider_id
           AND resource_class = NEW.resource_class;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER allocations_track_usage
    AFTER INSERT OR UPDATE OR DELETE ON allocations
    FOR EACH ROW EXECUTE FUNCTION placement_track_usage();

CREATE TABLE traits (
    id   serial PRIMARY KEY,
    name text NOT NULL UNIQUE CHECK (name ~ '^[A-Z0-9_]{1,255}$')
);

CREATE TABLE provider_traits (
    resource_provider_id bigint NOT NULL REFERENCES resource_providers (id) ON DELETE CASCADE,
    trait_id             integer NOT NULL REFERENCES traits (id),
    PRIMARY KEY (resource_provider_id, trait_id)
);
CREATE INDEX provider_traits_trait ON provider_traits (trait_id, resource_provider_id);

CREATE TABLE provider_aggregates (
    resource_provider_id bigint NOT NULL REFERENCES resource_providers (id) ON DELETE CASCADE,
    aggregate_uuid       uuid NOT NULL,
    PRIMARY KEY (resource_provider_id, aggregate_uuid)
);
CREATE INDEX provider_aggregates_aggregate ON provider_aggregates (aggregate_uuid, resource_provider_id);
