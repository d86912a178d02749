-- The metadata service (nova_async/dataplane/metadata_source.py): who is asking, and what
-- their guest is told. Ports, addresses, floating IPs, security groups and key pairs are in
-- the API database; the instance is in its cell's.

-- name: requester
-- The device of the port on network $1 that holds address $2 (through the network's
-- subnets: ip_allocations is keyed by subnet).
SELECT p.device_id
  FROM subnets s
  JOIN ip_allocations a ON a.subnet_id = s.id
  JOIN ports p ON p.id = a.port_id
 WHERE s.network_id = $1 AND a.ip_address = $2::inet AND p.network_id = $1;

-- name: instance
SELECT uuid::text, display_name, hostname, project_id, user_id, reservation_id, launch_index,
       flavor->>'name' AS flavor_name, image_ref, key_name, key_data, user_data, metadata,
       availability_zone
  FROM instances
 WHERE uuid = $1 AND deleted_at IS NULL AND vm_state <> 'deleted';

-- name: nics
-- Each port of instance $1 with each of its IPv4 addresses, in NIC order.
SELECT p.id::text AS port_id, p.network_id::text, p.mac_address::text, n.mtu,
       host(a.ip_address) AS ip_address, s.cidr::text, host(s.gateway_ip) AS gateway_ip,
       s.enable_dhcp, s.dns_nameservers, s.host_routes
  FROM ports p
  JOIN networks n ON n.id = p.network_id
  JOIN ip_allocations a ON a.port_id = p.id
  JOIN subnets s ON s.id = a.subnet_id AND s.ip_version = 4
 WHERE p.device_id = $1
 ORDER BY p.device_index, p.created_at, p.id, a.ip_address;

-- name: extras
-- Instance $1's floating IPs (by NIC order), its ports' security groups' names, and the
-- type of its key pair ($2 the user, $3 the key's name; NULL when the pair is gone).
SELECT array(SELECT host(f.floating_ip_address)
               FROM floatingips f JOIN ports p ON p.id = f.port_id
              WHERE p.device_id = $1
              ORDER BY p.device_index, p.created_at, f.floating_ip_address) AS floating_ips,
       array(SELECT DISTINCT g.name
               FROM ports p
               JOIN port_security_groups pg ON pg.port_id = p.id
               JOIN security_groups g ON g.id = pg.security_group_id
              WHERE p.device_id = $1
              ORDER BY g.name) AS security_groups,
       (SELECT k.type FROM keypairs k WHERE k.user_id = $2 AND k.name = $3) AS key_type;
