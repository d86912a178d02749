-- The data plane (nova_async/dataplane/): what it made on a host, and the desired state it reads.

-- name: made_record
INSERT INTO dataplane_objects (host, kind, name, detail) VALUES ($1, $2, $3, $4)
ON CONFLICT (host, kind, name) DO UPDATE SET detail = EXCLUDED.detail;

-- name: made_forget
DELETE FROM dataplane_objects WHERE host = $1 AND kind = $2 AND name = $3;

-- name: made_listed
SELECT name, detail FROM dataplane_objects WHERE host = $1 AND kind = $2 ORDER BY name;

-- The desired state, read in one REPEATABLE READ snapshot (desired.read): every query below.

-- name: desired_networks
SELECT id, mtu, external, provider_network_type, provider_physical_network
FROM networks ORDER BY id;

-- name: desired_subnets
SELECT id, network_id, cidr, ip_version, gateway_ip, enable_dhcp, dns_nameservers, host_routes
FROM subnets ORDER BY network_id, ip_version, created_at, id;

-- name: desired_ports
SELECT id, network_id, mac_address, device_owner, device_id, port_security_enabled,
       allowed_address_pairs, binding_host
FROM ports ORDER BY id;

-- name: desired_fixed_ips
SELECT a.port_id, a.subnet_id, a.ip_address
FROM ip_allocations a JOIN subnets s ON s.id = a.subnet_id
ORDER BY a.port_id, s.ip_version, a.ip_address;

-- name: desired_port_groups
SELECT port_id, security_group_id FROM port_security_groups ORDER BY port_id, security_group_id;

-- name: desired_security_groups
SELECT id, stateful FROM security_groups ORDER BY id;

-- name: desired_rules
SELECT id, security_group_id, direction, ethertype, protocol, port_range_min, port_range_max,
       remote_ip_prefix, remote_group_id
FROM security_group_rules ORDER BY security_group_id, created_at, id;

-- name: desired_routers
SELECT id, admin_state_up, enable_snat, gateway_port_id FROM routers ORDER BY id;

-- name: desired_floating_ips
SELECT id, floating_ip_address, floating_network_id, router_id, fixed_ip_address, port_id
FROM floatingips ORDER BY id;
