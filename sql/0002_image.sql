-- The image service (a Glance v2 subset): one row per image; the bits live in
-- <state_dir>/images/<id>. Extra user properties are kept as a JSON object of strings.
CREATE TABLE images (
    id               uuid PRIMARY KEY,
    name             text,
    status           text NOT NULL DEFAULT 'queued',   -- queued → saving → active
    disk_format      text,
    container_format text,
    visibility       text NOT NULL DEFAULT 'shared',
    size             bigint,
    virtual_size     bigint,
    checksum         text,                              -- md5, as Glance reports it
    os_hash_algo     text,
    os_hash_value    text,
    min_disk         integer NOT NULL DEFAULT 0,
    min_ram          integer NOT NULL DEFAULT 0,
    protected        boolean NOT NULL DEFAULT false,
    os_hidden        boolean NOT NULL DEFAULT false,
    owner            text,
    tags             text[] NOT NULL DEFAULT '{}',
    properties       jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (visibility IN ('public', 'private', 'shared', 'community')),
    CHECK (status IN ('queued', 'saving', 'active'))
);

CREATE INDEX images_owner ON images (owner);
CREATE INDEX images_name ON images (name);
CREATE INDEX images_listing ON images (created_at DESC, id DESC);
