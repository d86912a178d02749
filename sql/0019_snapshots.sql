-- createImage: the image a snapshot of an instance is being written to, until it is
-- uploaded. A restart that interrupts a snapshot finds the image here and deletes it (a
-- half-written snapshot is worth nothing), then gives the instance back.
CREATE TABLE instance_snapshots (
    image_id      uuid PRIMARY KEY,
    instance_uuid uuid NOT NULL REFERENCES instances (uuid) ON DELETE CASCADE,
    request_id    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX instance_snapshots_instance ON instance_snapshots (instance_uuid);
