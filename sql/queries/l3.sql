-- Routers, floating IPs and the external network (Neutron's L3 API). Router interfaces and
-- gateways and floating IPs hold their addresses through ports (network.sql), found here by
-- device_id and device_owner. $1/$2 in the listings: "the caller is an admin", its project.

-- name: insert_router
INSERT INTO routers (id, project_id, name, description, admin_state_up) VALUES ($1, $2, $3, $4, $5);

-- name: get_router
-- A router with its gateway port's addresses (external_gateway_info.external_fixed_ips).
SELECT r.*,
       COALESCE((SELECT jsonb_agg(jsonb_build_object('subnet_id', a.subnet_id, 'ip_address', host(a.ip_address))
                                  ORDER BY a.ip_address)
                   FROM ip_allocations a WHERE a.port_id = r.gateway_port_id), '[]') AS gateway_ips
  FROM routers r
 WHERE r.id = $1;

-- name: lock_router
SELECT * FROM routers WHERE id = $1 FOR UPDATE;

-- name: list_routers
SELECT r.*,
       COALESCE((SELECT jsonb_agg(jsonb_build_object('subnet_id', a.subnet_id, 'ip_address', host(a.ip_address))
                                  ORDER BY a.ip_address)
                   FROM ip_allocations a WHERE a.port_id = r.gateway_port_id), '[]') AS gateway_ips
  FROM routers r
 WHERE ($1 OR r.project_id = $2)
   AND ($3::uuid[] IS NULL OR r.id = ANY($3))
   AND ($4::text[] IS NULL OR r.name = ANY($4))
   AND ($5::text[] IS NULL OR r.project_id = ANY($5))
   AND ($6::boolean IS NULL OR r.admin_state_up = $6)
 ORDER BY r.created_at, r.id;

-- name: update_router
-- NULL leaves an attribute as it is.
UPDATE routers
   SET name = COALESCE($2, name), description = COALESCE($3, description),
       admin_state_up = COALESCE($4, admin_state_up), updated_at = now()
 WHERE id = $1;

-- name: set_router_gateway
UPDATE routers
   SET gateway_network_id = $2, gateway_port_id = $3, enable_snat = $4, updated_at = now()
 WHERE id = $1;

-- name: delete_router
DELETE FROM routers WHERE id = $1;

-- name: router_interface_ips
-- Each address of router $1's interfaces, with its port, network and subnet.
SELECT p.id AS port_id, p.network_id, a.subnet_id, a.ip_address, s.cidr
  FROM ports p
  JOIN ip_allocations a ON a.port_id = p.id
  JOIN subnets s ON s.id = a.subnet_id
 WHERE p.device_id = $1::uuid::text AND p.device_id <> '' AND p.device_owner = 'network:router_interface'
 ORDER BY p.created_at, p.id, a.ip_address;

-- name: router_has_interfaces
SELECT EXISTS (SELECT 1 FROM ports
                WHERE device_id = $1::uuid::text AND device_id <> '' AND device_owner = 'network:router_interface');

-- name: router_has_floatingips
SELECT EXISTS (SELECT 1 FROM floatingips WHERE router_id = $1);

-- name: router_floatingips_via_subnet
-- Whether a floating IP that router $1 NATs reaches a fixed IP on subnet $2.
SELECT EXISTS (SELECT 1 FROM floatingips f
                 JOIN ip_allocations a ON a.port_id = f.port_id AND a.ip_address = f.fixed_ip_address
                WHERE f.router_id = $1 AND a.subnet_id = $2);

-- name: claim_port_for_device
-- A free port becomes device $2's (owner $3, a router's: ACTIVE, as ports.make_port says
-- why); no row when it already belongs to a device.
UPDATE ports SET device_id = $2, device_owner = $3, status = 'ACTIVE', updated_at = now()
 WHERE id = $1 AND device_id = ''
RETURNING *;

-- name: insert_floatingip
INSERT INTO floatingips (id, project_id, description, floating_network_id, floating_port_id, floating_ip_address)
VALUES ($1, $2, $3, $4, $5, $6::inet);

-- name: get_floatingip
-- A floating IP with the port it is associated with (port_details), NULLs when it is not.
SELECT f.*, p.name AS port_name, p.network_id AS port_network_id, p.mac_address AS port_mac,
       p.admin_state_up AS port_admin_state_up, p.status AS port_status, p.device_id AS port_device_id,
       p.device_owner AS port_device_owner
  FROM floatingips f LEFT JOIN ports p ON p.id = f.port_id
 WHERE f.id = $1;

-- name: lock_floatingip
SELECT * FROM floatingips WHERE id = $1 FOR UPDATE;

-- name: list_floatingips
SELECT f.*, p.name AS port_name, p.network_id AS port_network_id, p.mac_address AS port_mac,
       p.admin_state_up AS port_admin_state_up, p.status AS port_status, p.device_id AS port_device_id,
       p.device_owner AS port_device_owner
  FROM floatingips f LEFT JOIN ports p ON p.id = f.port_id
 WHERE ($1 OR f.project_id = $2)
   AND ($3::uuid[] IS NULL OR f.id = ANY($3))
   AND ($4::inet[] IS NULL OR f.floating_ip_address = ANY($4))
   AND ($5::uuid[] IS NULL OR f.floating_network_id = ANY($5))
   AND ($6::uuid[] IS NULL OR f.port_id = ANY($6))
   AND ($7::uuid[] IS NULL OR f.router_id = ANY($7))
   AND ($8::text[] IS NULL OR f.status = ANY($8))
   AND ($9::text[] IS NULL OR f.project_id = ANY($9))
   AND ($10::inet[] IS NULL OR f.fixed_ip_address = ANY($10))
 ORDER BY f.created_at, f.id;

-- name: associate_floatingip
-- $2 NULL disassociates (sql/functions/floatingip_disassociated.sql clears the rest).
UPDATE floatingips
   SET port_id = $2, fixed_ip_address = $3::inet, router_id = $4,
       status = CASE WHEN $2::uuid IS NULL THEN 'DOWN' ELSE 'ACTIVE' END, updated_at = now()
 WHERE id = $1;

-- name: describe_floatingip
UPDATE floatingips SET description = $2, updated_at = now() WHERE id = $1;

-- name: delete_floatingip
DELETE FROM floatingips WHERE id = $1;

-- name: delete_unassociated_floatingips
-- A network delete's first step, as Neutron's: the floating IPs of external network $1 that
-- nothing uses go (their ports, returned, are the caller's to delete); associated ones stay
-- and keep the network in use.
DELETE FROM floatingips
 WHERE floating_network_id = $1 AND port_id IS NULL AND router_id IS NULL
RETURNING floating_port_id;

-- name: gateway_router_for
-- The router that can NAT a fixed IP of subnet $2 to external network $1: a gateway on $1
-- and an interface on $2. Held (FOR SHARE) so that it keeps both until the caller commits.
SELECT r.id
  FROM routers r
  JOIN ports p ON p.device_id = r.id::text AND p.device_id <> '' AND p.device_owner = 'network:router_interface'
  JOIN ip_allocations a ON a.port_id = p.id AND a.subnet_id = $2
 WHERE r.gateway_network_id = $1
 ORDER BY r.created_at, r.id
 LIMIT 1
   FOR SHARE OF r;

-- name: claim_bootstrap_step
-- One process makes the external network, once per database (true: this caller is the one).
INSERT INTO bootstrap_steps (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING true;

-- name: admin_project
SELECT id FROM projects WHERE name = 'admin' AND domain_id = 'default';

-- name: instance_floating_ips
-- The floating IPs associated with the ports of device (instance) $1: what its
-- network_info shows per port (nova_async/network/instance_addresses.py).
SELECT f.port_id, host(f.floating_ip_address) AS address
  FROM floatingips f JOIN ports p ON p.id = f.port_id
 WHERE p.device_id = $1
 ORDER BY f.port_id, f.floating_ip_address;

-- name: devices_with_floating_ips
-- The device ids (instances) whose ports have a floating IP.
SELECT DISTINCT p.device_id FROM floatingips f JOIN ports p ON p.id = f.port_id WHERE p.device_id <> '';
