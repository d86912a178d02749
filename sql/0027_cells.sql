-- Cells v2. The database the service is pointed at is the API database: it maps every cell
-- to its own database, every compute host to its cell, and every instance to the cell that
-- holds it. Instances and what hangs off them (faults, actions and events, migrations,
-- snapshots, console tokens) live in the cell databases. cell0 holds the instances that
-- never got a host. Every database gets the same migrations; each role reads the tables that
-- belong to the database it is talking to.

CREATE TABLE cell_mappings (
    uuid                uuid PRIMARY KEY,
    name                text NOT NULL UNIQUE,
    -- A full postgresql:// URL, or a bare database name on the API database's server.
    database_connection text NOT NULL,
    disabled            boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz
);

CREATE TABLE host_mappings (
    host       text PRIMARY KEY,
    cell_uuid  uuid NOT NULL REFERENCES cell_mappings (uuid),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE instance_mappings (
    instance_uuid uuid PRIMARY KEY,
    cell_uuid     uuid NOT NULL REFERENCES cell_mappings (uuid),
    project_id    text NOT NULL,
    user_id       text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz
);
CREATE INDEX instance_mappings_project ON instance_mappings (project_id);
