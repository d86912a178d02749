-- The network service (a Neutron v2.0 subset): networks, their subnets, ports and the
-- fixed IPs handed to ports. The primary key of ip_allocations is what makes two ports
-- never share an address, whatever the application gets wrong.
CREATE TABLE networks (
    id             uuid PRIMARY KEY,
    name           text NOT NULL DEFAULT '',
    description    text NOT NULL DEFAULT '',
    project_id     text NOT NULL,
    admin_state_up boolean NOT NULL DEFAULT true,
    shared         boolean NOT NULL DEFAULT false,
    external       boolean NOT NULL DEFAULT false,   -- router:external
    mtu            integer NOT NULL DEFAULT 1500,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX networks_project ON networks (project_id);

CREATE TABLE subnets (
    id               uuid PRIMARY KEY,
    network_id       uuid NOT NULL REFERENCES networks (id) ON DELETE CASCADE,
    project_id       text NOT NULL,
    name             text NOT NULL DEFAULT '',
    description      text NOT NULL DEFAULT '',
    cidr             cidr NOT NULL,
    ip_version       smallint NOT NULL CHECK (ip_version IN (4, 6)),
    gateway_ip       inet,
    allocation_pools jsonb NOT NULL DEFAULT '[]',     -- [{"start": ..., "end": ...}], sorted
    enable_dhcp      boolean NOT NULL DEFAULT true,
    dns_nameservers  jsonb NOT NULL DEFAULT '[]',
    host_routes      jsonb NOT NULL DEFAULT '[]',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX subnets_network ON subnets (network_id);

CREATE TABLE ports (
    id             uuid PRIMARY KEY,
    network_id     uuid NOT NULL REFERENCES networks (id) ON DELETE RESTRICT,
    project_id     text NOT NULL,
    name           text NOT NULL DEFAULT '',
    description    text NOT NULL DEFAULT '',
    mac_address    macaddr NOT NULL UNIQUE,
    device_id      text NOT NULL DEFAULT '',
    device_owner   text NOT NULL DEFAULT '',
    status         text NOT NULL DEFAULT 'DOWN',
    admin_state_up boolean NOT NULL DEFAULT true,
    binding_host   text NOT NULL DEFAULT '',
    -- true when the network service made the port for an instance (AllocatePorts), so
    -- DeallocatePorts deletes it; a port the user made is only unbound.
    auto_created   boolean NOT NULL DEFAULT false,
    device_index   integer NOT NULL DEFAULT 0,        -- NIC order within its device
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX ports_device ON ports (device_id) WHERE device_id <> '';
CREATE INDEX ports_network ON ports (network_id);

CREATE TABLE ip_allocations (
    subnet_id  uuid NOT NULL REFERENCES subnets (id) ON DELETE RESTRICT,
    ip_address inet NOT NULL,
    port_id    uuid NOT NULL REFERENCES ports (id) ON DELETE CASCADE,
    PRIMARY KEY (subnet_id, ip_address)
);

CREATE INDEX ip_allocations_port ON ip_allocations (port_id);
