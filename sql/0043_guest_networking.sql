-- Guests one can reach: security groups, routers, floating IPs and provider networks (the
-- Neutron API of each), and the record of what the data plane made on a host.
--
-- Router interfaces, router gateways, floating IPs and DHCP servers are ports like any other
-- (Neutron's device_owner values `network:router_interface`, `network:router_gateway`,
-- `network:floatingip`, `network:dhcp`), so their addresses come from ip_allocations and can
-- never collide with a guest's.

ALTER TABLE networks
    ADD COLUMN provider_network_type     text NOT NULL DEFAULT 'local',   -- local | flat
    ADD COLUMN provider_physical_network text,                            -- flat: the physnet's name
    ADD COLUMN status                    text NOT NULL DEFAULT 'ACTIVE';

ALTER TABLE ports
    ADD COLUMN port_security_enabled boolean NOT NULL DEFAULT true,
    ADD COLUMN allowed_address_pairs jsonb NOT NULL DEFAULT '[]';   -- [{"ip_address", "mac_address"}]

CREATE TABLE security_groups (
    id          uuid PRIMARY KEY,
    project_id  text NOT NULL,
    name        text NOT NULL DEFAULT '',
    description text NOT NULL DEFAULT '',
    stateful    boolean NOT NULL DEFAULT true,
    is_default  boolean NOT NULL DEFAULT false,    -- the project's `default` group
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX security_groups_project ON security_groups (project_id);
-- One default group per project, even when two first requests race to make it.
CREATE UNIQUE INDEX security_groups_one_default ON security_groups (project_id) WHERE is_default;

CREATE TABLE security_group_rules (
    id                uuid PRIMARY KEY,
    security_group_id uuid NOT NULL REFERENCES security_groups (id) ON DELETE CASCADE,
    project_id        text NOT NULL,
    direction         text NOT NULL CHECK (direction IN ('ingress', 'egress')),
    ethertype         text NOT NULL CHECK (ethertype IN ('IPv4', 'IPv6')),
    protocol          text,                       -- NULL: any; a name (tcp, udp, icmp, …) or a number
    port_range_min    integer,
    port_range_max    integer,
    remote_ip_prefix  cidr,
    remote_group_id   uuid REFERENCES security_groups (id) ON DELETE CASCADE,
    description       text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK (remote_ip_prefix IS NULL OR remote_group_id IS NULL)
);

CREATE INDEX security_group_rules_group ON security_group_rules (security_group_id);
CREATE INDEX security_group_rules_remote_group ON security_group_rules (remote_group_id)
    WHERE remote_group_id IS NOT NULL;

CREATE TABLE port_security_groups (
    port_id           uuid NOT NULL REFERENCES ports (id) ON DELETE CASCADE,
    security_group_id uuid NOT NULL REFERENCES security_groups (id) ON DELETE RESTRICT,
    PRIMARY KEY (port_id, security_group_id)
);

CREATE INDEX port_security_groups_group ON port_security_groups (security_group_id);

CREATE TABLE routers (
    id                 uuid PRIMARY KEY,
    project_id         text NOT NULL,
    name               text NOT NULL DEFAULT '',
    description        text NOT NULL DEFAULT '',
    admin_state_up     boolean NOT NULL DEFAULT true,
    status             text NOT NULL DEFAULT 'ACTIVE',
    -- external_gateway_info: the external network and the gateway port on it (its fixed IP
    -- is the router's SNAT address); both NULL without a gateway.
    gateway_network_id uuid REFERENCES networks (id) ON DELETE RESTRICT,
    gateway_port_id    uuid REFERENCES ports (id) ON DELETE SET NULL,
    enable_snat        boolean NOT NULL DEFAULT true,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX routers_project ON routers (project_id);

CREATE TABLE floatingips (
    id                  uuid PRIMARY KEY,
    project_id          text NOT NULL,
    description         text NOT NULL DEFAULT '',
    floating_network_id uuid NOT NULL REFERENCES networks (id) ON DELETE RESTRICT,
    -- The port (device_owner network:floatingip) that holds the address on the external network.
    floating_port_id    uuid NOT NULL UNIQUE REFERENCES ports (id) ON DELETE RESTRICT,
    floating_ip_address inet NOT NULL,
    -- Association: the guest's port and which of its fixed IPs, and the router that NATs it
    -- (all three NULL when not associated; a deleted guest port leaves it unassociated).
    port_id             uuid REFERENCES ports (id) ON DELETE SET NULL (port_id),
    fixed_ip_address    inet,
    router_id           uuid REFERENCES routers (id) ON DELETE RESTRICT,
    status              text NOT NULL DEFAULT 'DOWN',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (floating_network_id, floating_ip_address)
);

CREATE INDEX floatingips_project ON floatingips (project_id);
CREATE INDEX floatingips_port ON floatingips (port_id) WHERE port_id IS NOT NULL;

-- What the data plane made on a host, written before it is made and deleted after it is
-- gone: after a crash, `ours` is exactly what this says, so recovery never touches a
-- namespace, link, process or table that another program (or another nova-async) made.
CREATE TABLE dataplane_objects (
    host       text NOT NULL,
    kind       text NOT NULL,      -- namespace | link | dnsmasq | nft_table | …
    name       text NOT NULL,
    detail     jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host, kind, name)
);
