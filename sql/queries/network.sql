-- Networks, subnets, ports and fixed IPs (Neutron v2.0 subset).
-- Who sees what: $1 is "the caller is an admin", $2 the caller's project. Everyone sees
-- shared and external networks and their subnets; a port is seen by its own project and
-- by the owner of its network.

-- name: insert_network
INSERT INTO networks (id, name, description, project_id, admin_state_up, shared, external, mtu,
                      provider_network_type, provider_physical_network)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
RETURNING *, ARRAY[]::uuid[] AS subnets;

-- name: get_network
SELECT n.*, ARRAY(SELECT s.id FROM subnets s WHERE s.network_id = n.id
                   ORDER BY s.created_at, s.id) AS subnets
  FROM networks n
 WHERE n.id = $1;

-- name: lock_network
SELECT * FROM networks WHERE id = $1 FOR UPDATE;

-- name: list_networks
SELECT n.*, ARRAY(SELECT s.id FROM subnets s WHERE s.network_id = n.id
                   ORDER BY s.created_at, s.id) AS subnets
  FROM networks n
 WHERE ($1 OR n.project_id = $2 OR n.shared OR n.external)
   AND ($3::uuid[] IS NULL OR n.id = ANY($3))
   AND ($4::text[] IS NULL OR n.name = ANY($4))
   AND ($5::boolean IS NULL OR n.shared = $5)
   AND ($6::text[] IS NULL OR n.project_id = ANY($6))
   AND ($7::boolean IS NULL OR n.admin_state_up = $7)
   AND ($8::boolean IS NULL OR n.external = $8)
 ORDER BY n.created_at, n.id;

-- name: usable_networks
-- What an instance of project $1 may be attached to when it names no network.
SELECT n.*, ARRAY(SELECT s.id FROM subnets s WHERE s.network_id = n.id
                   ORDER BY s.created_at, s.id) AS subnets
  FROM networks n
 WHERE (n.project_id = $1 OR n.shared) AND NOT n.external
 ORDER BY n.created_at, n.id;

-- name: network_has_ports
SELECT EXISTS (SELECT 1 FROM ports WHERE network_id = $1);

-- name: delete_network
DELETE FROM networks WHERE id = $1;

-- name: insert_subnet
INSERT INTO subnets (id, network_id, project_id, name, description, cidr, ip_version, gateway_ip,
                     allocation_pools, enable_dhcp, dns_nameservers, host_routes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
RETURNING *, (SELECT external FROM networks WHERE id = network_id);

-- name: get_subnet
SELECT s.*, n.project_id AS network_project_id, n.shared, n.external
  FROM subnets s JOIN networks n ON n.id = s.network_id
 WHERE s.id = $1;

-- name: lock_subnet
SELECT * FROM subnets WHERE id = $1 FOR UPDATE;

-- name: network_subnets
-- IPv4 first: an instance's port takes its address from the first one listed.
SELECT * FROM subnets WHERE network_id = $1 ORDER BY ip_version, created_at, id;

-- name: list_subnets
SELECT s.*, n.external
  FROM subnets s JOIN networks n ON n.id = s.network_id
 WHERE ($1 OR s.project_id = $2 OR n.project_id = $2 OR n.shared OR n.external)
   AND ($3::uuid[] IS NULL OR s.id = ANY($3))
   AND ($4::text[] IS NULL OR s.name = ANY($4))
   AND ($5::uuid[] IS NULL OR s.network_id = ANY($5))
   AND ($6::cidr[] IS NULL OR s.cidr = ANY($6))
   AND ($7::smallint IS NULL OR s.ip_version = $7)
   AND ($8::text[] IS NULL OR s.project_id = ANY($8))
 ORDER BY s.created_at, s.id;

-- name: subnet_in_use
SELECT EXISTS (SELECT 1 FROM ip_allocations WHERE subnet_id = $1);

-- name: delete_subnet
DELETE FROM subnets WHERE id = $1;

-- name: lowest_free_ip
-- The lowest free address of subnet $1's pools (sql/functions/subnet_free_addresses.sql);
-- NULL: none. The caller holds the subnet's row lock, so nobody else allocates from it meanwhile.
SELECT (subnet_free_addresses($1::uuid, 1))[1];

-- name: ip_taken
SELECT EXISTS (SELECT 1 FROM ip_allocations WHERE subnet_id = $1 AND ip_address = $2::inet);

-- name: insert_ip
INSERT INTO ip_allocations (subnet_id, ip_address, port_id) VALUES ($1, $2::inet, $3);

-- name: insert_port
-- A MAC that is already in use yields no row; the caller picks another one.
INSERT INTO ports (id, network_id, project_id, name, description, mac_address, device_id,
                   device_owner, status, admin_state_up, binding_host, auto_created, device_index)
VALUES ($1, $2, $3, $4, $5, $6::macaddr, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (mac_address) DO NOTHING
RETURNING *;

-- name: get_port
SELECT p.*, n.project_id AS network_project_id
  FROM ports p JOIN networks n ON n.id = p.network_id
 WHERE p.id = $1;

-- name: list_ports
SELECT p.*
  FROM ports p JOIN networks n ON n.id = p.network_id
 WHERE ($1 OR p.project_id = $2 OR n.project_id = $2)
   AND ($3::uuid[] IS NULL OR p.id = ANY($3))
   AND ($4::uuid[] IS NULL OR p.network_id = ANY($4))
   AND ($5::text[] IS NULL OR p.device_id = ANY($5))
   AND ($6::text[] IS NULL OR p.device_owner = ANY($6))
   AND ($7::text[] IS NULL OR p.name = ANY($7))
   AND ($8::macaddr[] IS NULL OR p.mac_address = ANY($8))
   AND ($9::text[] IS NULL OR p.project_id = ANY($9))
   AND ($10::uuid[] IS NULL OR EXISTS (SELECT 1 FROM port_security_groups x
                                        WHERE x.port_id = p.id AND x.security_group_id = ANY($10)))
   -- Neutron's fixed_ips filter: one of the port's addresses meets every part given.
   AND ($11::inet[] IS NULL AND $12::uuid[] IS NULL AND $13::text IS NULL
        OR EXISTS (SELECT 1 FROM ip_allocations a
                    WHERE a.port_id = p.id
                      AND ($11::inet[] IS NULL OR a.ip_address = ANY($11))
                      AND ($12::uuid[] IS NULL OR a.subnet_id = ANY($12))
                      AND ($13::text IS NULL OR strpos(host(a.ip_address), $13) > 0)))
 ORDER BY p.created_at, p.device_index, p.id;

-- name: port_ips
SELECT port_id, subnet_id, ip_address FROM ip_allocations
 WHERE port_id = ANY($1::uuid[])
 ORDER BY ip_address;

-- name: delete_port
DELETE FROM ports WHERE id = $1;

-- name: lock_device
-- One allocation per instance at a time, so a retried AllocatePorts finds the first one's ports.
SELECT pg_advisory_xact_lock(hashtextextended('nova-async:ports:' || $1::text, 0));

-- name: adopt_port
UPDATE ports
   SET device_id = $2, device_owner = $3, binding_host = $4, device_index = $5,
       status = 'ACTIVE', updated_at = now()
 WHERE id = $1 AND device_id = ''
RETURNING *;

-- name: delete_device_ports
-- This and the other queries by device say `device_id <> ''` too, which a device id always is:
-- only then may a generic plan use the partial index ports_device, not read every port.
DELETE FROM ports WHERE device_id = $1 AND device_id <> '' AND auto_created;

-- name: release_device_ports
UPDATE ports
   SET device_id = '', device_owner = '', binding_host = '', device_index = 0,
       status = 'DOWN', updated_at = now()
 WHERE device_id = $1 AND device_id <> '' AND NOT auto_created;

-- name: device_vifs
-- One row per (port, fixed IP) of a device, in NIC order.
SELECT p.id AS port_id, p.network_id, p.mac_address, n.name AS network_name, n.mtu,
       a.ip_address, s.id AS subnet_id, s.cidr, s.gateway_ip, s.ip_version
  FROM ports p
  JOIN networks n ON n.id = p.network_id
  LEFT JOIN ip_allocations a ON a.port_id = p.id
  LEFT JOIN subnets s ON s.id = a.subnet_id
 WHERE p.device_id = $1 AND p.device_id <> ''
 ORDER BY p.device_index, p.created_at, p.id, a.ip_address;

-- name: project_usage
SELECT (SELECT count(*) FROM networks WHERE project_id = $1) AS network,
       (SELECT count(*) FROM subnets WHERE project_id = $1) AS subnet,
       (SELECT count(*) FROM ports WHERE project_id = $1) AS port,
       (SELECT count(*) FROM routers WHERE project_id = $1) AS router,
       (SELECT count(*) FROM floatingips WHERE project_id = $1) AS floatingip;

-- name: network_target
-- A network an instance asks for, with its subnets in network_subnets' order: one row per
-- subnet (subnet columns NULL when it has none), none when there is no such network.
SELECT n.project_id AS network_project_id, n.shared AS network_shared, n.id AS network_uuid,
       n.name AS network_name, n.mtu AS network_mtu, s.*
  FROM networks n
  LEFT JOIN subnets s ON s.network_id = n.id
 WHERE n.id = $1
 ORDER BY s.ip_version, s.created_at, s.id;

-- name: rebind_device_vifs
-- The ports an instance already has (a retried or duplicated AllocatePorts), rebound to host
-- $2, as device_vifs shows them; no rows when it has none yet.
WITH rebound AS (
    UPDATE ports SET binding_host = $2, status = 'ACTIVE', updated_at = now()
     WHERE device_id = $1 AND device_id <> '' AND binding_host <> $2
)
SELECT p.id AS port_id, p.network_id, p.mac_address, n.name AS network_name, n.mtu,
       a.ip_address, s.id AS subnet_id, s.cidr, s.gateway_ip, s.ip_version
  FROM ports p
  JOIN networks n ON n.id = p.network_id
  LEFT JOIN ip_allocations a ON a.port_id = p.id
  LEFT JOIN subnets s ON s.id = a.subnet_id
 WHERE p.device_id = $1 AND p.device_id <> ''
 ORDER BY p.device_index, p.created_at, p.id, a.ip_address;

-- name: insert_port_with_ip
-- insert_port, lowest_free_ip and insert_ip as one statement, for a port with one address
-- from subnet $14 (whose row lock the caller holds): the lowest free address of its pools.
-- No row: the subnet is full, and no port was made; a row whose port columns are NULL: the
-- MAC is taken (pick another).
WITH free AS (
    SELECT f.candidate FROM (SELECT (subnet_free_addresses($14::uuid, 1))[1] AS candidate) f
     WHERE f.candidate IS NOT NULL
), port AS (
    INSERT INTO ports (id, network_id, project_id, name, description, mac_address, device_id,
                       device_owner, status, admin_state_up, binding_host, auto_created, device_index)
    SELECT $1::uuid, $2::uuid, $3::text, $4::text, $5::text, $6::macaddr, $7::text, $8::text, $9::text,
           $10::boolean, $11::text, $12::boolean, $13::integer FROM free
    ON CONFLICT (mac_address) DO NOTHING
    RETURNING *
), ip AS (
    INSERT INTO ip_allocations (subnet_id, ip_address, port_id)
    SELECT $14::uuid, free.candidate, port.id FROM free, port
)
SELECT free.candidate AS address, port.* FROM free LEFT JOIN port ON true;

-- name: allocate_ports
-- AllocatePorts when every NIC is a new port on a whole network, for the calls that queued
-- together (instance_ports.ALLOCATE_PORTS, a Coalesced statement): $1 devices, $2 hosts,
-- $3 projects, $4 per call the networks as the text of a uuid array (NULL: the project's only
-- network). The function (sql/functions/): per call (`ord`) its ports as device_vifs shows
-- them, or why it was refused.
SELECT * FROM network_allocate_ports_many($1::text[], $2::text[], $3::text[], $4::text[]);

-- Updates (PUT) of networks, subnets and ports, and a port's security attributes. Each
-- update moves revision_number and updated_at; the caller computed every new value from the
-- row it holds locked.

-- name: update_network
UPDATE networks
   SET name = $2, description = $3, admin_state_up = $4, shared = $5, external = $6, mtu = $7,
       revision_number = revision_number + 1, updated_at = now()
 WHERE id = $1
RETURNING *, ARRAY(SELECT s.id FROM subnets s WHERE s.network_id = networks.id
                    ORDER BY s.created_at, s.id) AS subnets;

-- name: network_has_foreign_ports
-- Ports of other projects than the network's own ($2): what keeps a network shared.
SELECT EXISTS (SELECT 1 FROM ports WHERE network_id = $1 AND project_id <> $2);

-- name: network_external_in_use
-- A router's gateway or a floating IP on it: what keeps a network external.
SELECT EXISTS (SELECT 1 FROM routers WHERE gateway_network_id = $1)
    OR EXISTS (SELECT 1 FROM floatingips WHERE floating_network_id = $1);

-- name: update_subnet
UPDATE subnets
   SET name = $2, description = $3, gateway_ip = $4::inet, allocation_pools = $5, enable_dhcp = $6,
       dns_nameservers = $7, host_routes = $8,
       revision_number = revision_number + 1, updated_at = now()
 WHERE id = $1
RETURNING *, (SELECT external FROM networks WHERE id = network_id);

-- name: subnet_allocations
SELECT a.ip_address, a.port_id, p.device_owner
  FROM ip_allocations a JOIN ports p ON p.id = a.port_id
 WHERE a.subnet_id = $1
 ORDER BY a.ip_address;

-- name: lock_port
SELECT * FROM ports WHERE id = $1 FOR UPDATE;

-- name: update_port
-- A MAC another port has raises unique_violation (the caller answers MacAddressInUse).
UPDATE ports
   SET name = $2, description = $3, admin_state_up = $4, device_id = $5, device_owner = $6,
       binding_host = $7, status = $8, mac_address = $9::macaddr, port_security_enabled = $10,
       allowed_address_pairs = $11, revision_number = revision_number + 1, updated_at = now()
 WHERE id = $1
RETURNING *;

-- name: set_port_address_pairs
-- A new port's allowed address pairs (an update sets them with the rest, in update_port).
UPDATE ports SET allowed_address_pairs = $2 WHERE id = $1;

-- name: release_port_ip
DELETE FROM ip_allocations WHERE port_id = $1 AND subnet_id = $2 AND ip_address = $3::inet;

-- name: visible_security_groups
-- Which of the groups $3 exist and are seen by the caller ($1 admin, $2 project).
SELECT id FROM security_groups
 WHERE id = ANY($3::uuid[]) AND ($1 OR project_id = $2);

-- name: lock_project_quota
-- Creates of one kind by one project wait for each other, so a count and the inserts
-- that follow it are never overtaken by another batch (quotas.check).
SELECT pg_advisory_xact_lock(hashtextextended('nova-async:network-quota:' || $1::text || ':' || $2::text, 0));
