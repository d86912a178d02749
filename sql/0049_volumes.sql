-- Volumes (a Cinder v3 subset): volumes, their snapshots and their attachments, kept by the
-- volume role in the API database; and, beside the instances in each cell database, the
-- block device mappings of instances (Nova's block_device_mapping: what a server boots from
-- and which volumes it has attached). Every database gets every table, as before.
--
-- The states a volume moves through are Cinder's; each change is a conditional UPDATE from
-- the state it leaves. A non-multiattach volume has at most one attachment: the unique
-- index below holds that even when two attaches race past every other check.

CREATE TABLE volumes (
    id                 uuid PRIMARY KEY,
    project_id         text NOT NULL,
    user_id            text NOT NULL,
    name               text,
    description        text,
    size               integer NOT NULL CHECK (size > 0),           -- GiB
    status             text NOT NULL DEFAULT 'creating' CHECK (status IN (
                           'creating', 'available', 'reserved', 'attaching', 'in-use', 'detaching',
                           'extending', 'deleting', 'error', 'error_deleting', 'error_extending',
                           'downloading', 'maintenance')),
    volume_type        text NOT NULL DEFAULT '__DEFAULT__',
    availability_zone  text NOT NULL DEFAULT 'nova',
    bootable           boolean NOT NULL DEFAULT false,
    multiattach        boolean NOT NULL DEFAULT false,
    snapshot_id        uuid,                 -- made from this snapshot
    source_volid       uuid,                 -- cloned from this volume
    image_id           uuid,                 -- made from this image
    image_metadata     jsonb NOT NULL DEFAULT '{}',   -- volume_image_metadata: the image's properties
    metadata           jsonb NOT NULL DEFAULT '{}',
    backend            text NOT NULL,        -- the backend that holds its bits ("file", "lvm-thin")
    host               text NOT NULL DEFAULT '',      -- os-vol-host-attr:host, "<host>@<backend>#<pool>"
    new_size           integer,              -- while extending: the size asked for
    error              text,                 -- why it is in an error state, for the log and the admin
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX volumes_by_project ON volumes (project_id, created_at, id);
CREATE INDEX volumes_by_status ON volumes (status) WHERE status IN (
    'creating', 'reserved', 'attaching', 'detaching', 'extending', 'deleting');

CREATE TABLE volume_snapshots (
    id           uuid PRIMARY KEY,
    volume_id    uuid NOT NULL REFERENCES volumes (id) ON DELETE RESTRICT,
    project_id   text NOT NULL,
    user_id      text NOT NULL,
    name         text,
    description  text,
    size         integer NOT NULL CHECK (size > 0),
    status       text NOT NULL DEFAULT 'creating' CHECK (status IN (
                     'creating', 'available', 'deleting', 'error', 'error_deleting')),
    metadata     jsonb NOT NULL DEFAULT '{}',
    backend      text NOT NULL,
    error        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX volume_snapshots_by_project ON volume_snapshots (project_id, created_at, id);
CREATE INDEX volume_snapshots_by_volume ON volume_snapshots (volume_id);

-- Cinder's new-style attachments: made `reserved` (no connector yet), given a connector by
-- the compute host (`attaching`, connection_info filled), completed (`attached`), deleted
-- when the host has let go of the device. `multiattach` is the volume's, copied here so the
-- database itself can refuse a second attachment of a volume that is not multiattach.
CREATE TABLE volume_attachments (
    id               uuid PRIMARY KEY,
    volume_id        uuid NOT NULL REFERENCES volumes (id) ON DELETE RESTRICT,
    instance_uuid    uuid NOT NULL,
    project_id       text NOT NULL,
    multiattach      boolean NOT NULL DEFAULT false,
    status           text NOT NULL DEFAULT 'reserved' CHECK (status IN (
                         'reserved', 'attaching', 'attached', 'detaching', 'error_attaching',
                         'error_detaching')),
    attach_mode      text NOT NULL DEFAULT 'rw' CHECK (attach_mode IN ('rw', 'ro')),
    attached_host    text,
    mountpoint       text,
    connector        jsonb,
    connection_info  jsonb,
    attached_at      timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX volume_attachments_one_unless_multiattach ON volume_attachments (volume_id)
    WHERE NOT multiattach;
CREATE UNIQUE INDEX volume_attachments_once_per_instance ON volume_attachments (volume_id, instance_uuid);
CREATE INDEX volume_attachments_by_instance ON volume_attachments (instance_uuid);

-- Per-project volume quota limits set through os-quota-sets (absent: the defaults of
-- [volume] in the settings).
CREATE TABLE volume_quotas (
    project_id  text NOT NULL,
    resource    text NOT NULL CHECK (resource IN ('volumes', 'gigabytes', 'snapshots', 'per_volume_gigabytes',
                                                  'backups', 'backup_gigabytes', 'groups')),
    hard_limit  integer NOT NULL CHECK (hard_limit >= -1),
    PRIMARY KEY (project_id, resource)
);

-- An instance's block devices, as Nova keeps them: what `block_device_mapping_v2` asked for
-- at boot (the image it boots from as source image → local, or a volume it boots from), and
-- each volume attached since (source volume → volume). A volume's row names the Cinder
-- attachment and the connection_info compute got for it, so a guest can be defined again
-- (rebuild, resize, recovery) with the same disks.
CREATE TABLE block_device_mappings (
    id                     uuid PRIMARY KEY,
    instance_uuid          uuid NOT NULL REFERENCES instances (uuid) ON DELETE CASCADE,
    source_type            text NOT NULL CHECK (source_type IN ('image', 'volume', 'snapshot', 'blank')),
    destination_type       text NOT NULL CHECK (destination_type IN ('local', 'volume')),
    boot_index             integer,          -- 0: the root disk; NULL or negative: not bootable
    device_name            text,             -- "/dev/vdb"
    disk_bus               text,
    device_type            text,
    guest_format           text,
    image_id               uuid,
    snapshot_id            uuid,
    volume_id              uuid,             -- the volume, once there is one (made at build for image/blank/snapshot)
    volume_size            integer,
    volume_type            text,
    delete_on_termination  boolean NOT NULL DEFAULT false,
    tag                    text,
    attachment_id          uuid,
    connection_info        jsonb,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX block_device_mappings_by_instance ON block_device_mappings (instance_uuid);
CREATE UNIQUE INDEX block_device_mappings_volume_once ON block_device_mappings (instance_uuid, volume_id)
    WHERE volume_id IS NOT NULL;
CREATE INDEX block_device_mappings_by_volume ON block_device_mappings (volume_id) WHERE volume_id IS NOT NULL;
