-- Nova's own data: flavors, services, compute nodes, instances and their history.

CREATE TABLE flavors (
    id            text PRIMARY KEY,            -- Nova's flavorid (a UUID unless given)
    name          text NOT NULL UNIQUE,
    memory_mb     integer NOT NULL,
    vcpus         integer NOT NULL,
    root_gb       integer NOT NULL,
    ephemeral_gb  integer NOT NULL DEFAULT 0,
    swap          integer NOT NULL DEFAULT 0,
    rxtx_factor   double precision NOT NULL DEFAULT 1.0,
    is_public     boolean NOT NULL DEFAULT true,
    disabled      boolean NOT NULL DEFAULT false,
    description   text,
    extra_specs   jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz
);

CREATE TABLE services (
    id              uuid PRIMARY KEY,
    host            text NOT NULL,
    binary_name     text NOT NULL,
    topic           text NOT NULL,
    zone            text NOT NULL DEFAULT 'nova',
    disabled        boolean NOT NULL DEFAULT false,
    disabled_reason text,
    forced_down     boolean NOT NULL DEFAULT false,
    last_seen_up    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz,
    UNIQUE (host, binary_name)
);

CREATE TABLE compute_nodes (
    uuid                uuid PRIMARY KEY,      -- also its resource provider's uuid
    host                text NOT NULL,
    hypervisor_hostname text NOT NULL UNIQUE,
    hypervisor_type     text NOT NULL,
    hypervisor_version  integer NOT NULL DEFAULT 0,
    vcpus               integer NOT NULL,
    memory_mb           integer NOT NULL,
    local_gb            integer NOT NULL,
    host_ip             text,
    service_id          uuid REFERENCES services (id) ON DELETE CASCADE,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz
);

CREATE TABLE instances (
    uuid               uuid PRIMARY KEY,
    display_name       text NOT NULL,
    hostname           text NOT NULL DEFAULT '',
    project_id         text NOT NULL,
    user_id            text NOT NULL,
    reservation_id     text NOT NULL,
    launch_index       integer NOT NULL DEFAULT 0,
    flavor             jsonb NOT NULL,          -- a copy: flavors may change or go
    image_ref          text NOT NULL DEFAULT '',
    request_spec       jsonb NOT NULL,
    requested_networks jsonb NOT NULL DEFAULT '[]',
    network_info       jsonb NOT NULL DEFAULT '[]',
    host               text,
    node               text,
    vm_state           text NOT NULL,
    task_state         text,
    power_state        integer NOT NULL DEFAULT 0,
    key_name           text,
    user_data          text,
    metadata           jsonb NOT NULL DEFAULT '{}',
    availability_zone  text,
    config_drive       text NOT NULL DEFAULT '',
    access_ip_v4       text,
    access_ip_v6       text,
    locked             boolean NOT NULL DEFAULT false,
    progress           integer NOT NULL DEFAULT 0,
    launched_at        timestamptz,
    terminated_at      timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz,
    deleted_at         timestamptz
);
CREATE INDEX instances_project ON instances (project_id, created_at) WHERE deleted_at IS NULL;
CREATE INDEX instances_host ON instances (host) WHERE deleted_at IS NULL;

CREATE TABLE instance_faults (
    id            bigserial PRIMARY KEY,
    instance_uuid uuid NOT NULL REFERENCES instances (uuid) ON DELETE CASCADE,
    code          integer NOT NULL,
    message       text NOT NULL,
    details       text NOT NULL DEFAULT '',
    host          text,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX instance_faults_instance ON instance_faults (instance_uuid, id);

CREATE TABLE instance_actions (
    id            bigserial PRIMARY KEY,
    instance_uuid uuid NOT NULL REFERENCES instances (uuid) ON DELETE CASCADE,
    request_id    text NOT NULL,
    action        text NOT NULL,
    project_id    text NOT NULL,
    user_id       text NOT NULL,
    start_time    timestamptz NOT NULL DEFAULT now(),
    finish_time   timestamptz,
    message       text,
    updated_at    timestamptz,
    UNIQUE (instance_uuid, request_id)
);

CREATE TABLE instance_action_events (
    id          bigserial PRIMARY KEY,
    action_id   bigint NOT NULL REFERENCES instance_actions (id) ON DELETE CASCADE,
    event       text NOT NULL,
    start_time  timestamptz NOT NULL DEFAULT now(),
    finish_time timestamptz,
    result      text,
    traceback   text,
    host        text,
    details     text
);
CREATE INDEX instance_action_events_action ON instance_action_events (action_id, id);
