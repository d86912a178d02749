-- 0061: Glance's metadata definitions catalog (/v2/metadefs): namespaces of property, object
-- and tag definitions, and the resource types (OS::Glance::Image, OS::Nova::Flavor, ...)
-- a namespace applies to. A namespace's definitions go with it (ON DELETE CASCADE); a
-- namespace is renamed by its text, so the others refer to it by id.
CREATE TABLE metadef_namespaces (
    id           bigserial PRIMARY KEY,
    namespace    text NOT NULL UNIQUE,
    display_name text,
    description  text,
    visibility   text NOT NULL DEFAULT 'private',
    protected    boolean NOT NULL DEFAULT false,
    owner        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (visibility IN ('public', 'private'))
);

CREATE TABLE metadef_resource_types (
    name       text PRIMARY KEY,
    protected  boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The resource types Glance's own catalog files define, which its database holds once
-- they are loaded (an association may also name a new one, which is then created).
INSERT INTO metadef_resource_types (name, protected) VALUES
    ('OS::Glance::Image', true), ('OS::Cinder::Volume', true), ('OS::Nova::Flavor', true),
    ('OS::Nova::Aggregate', true), ('OS::Nova::Server', true);

CREATE TABLE metadef_resource_type_associations (
    namespace_id      bigint NOT NULL REFERENCES metadef_namespaces (id) ON DELETE CASCADE,
    resource_type     text NOT NULL REFERENCES metadef_resource_types (name),
    prefix            text,
    properties_target text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace_id, resource_type)
);

-- Objects, properties and tags of a namespace: each a name and (objects, properties) the
-- JSON-schema-like definition the client gave, kept as given.
CREATE TABLE metadef_items (
    namespace_id bigint NOT NULL REFERENCES metadef_namespaces (id) ON DELETE CASCADE,
    kind         text NOT NULL,
    name         text NOT NULL,
    body         jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace_id, kind, name),
    CHECK (kind IN ('object', 'property', 'tag'))
);
