-- The network service's DHCP ports (nova_async/network/dhcp_ports.py): one per network and
-- data-plane host (device_owner network:dhcp, device_id dhcp-<host>), with an address on each
-- of the network's subnets that has DHCP on.

-- name: dhcp_port
SELECT * FROM ports WHERE network_id = $1 AND device_owner = 'network:dhcp' AND device_id = $2
FOR UPDATE;

-- name: dhcp_port_ips
SELECT subnet_id, ip_address FROM ip_allocations WHERE port_id = $1;

-- name: dhcp_release_ip
DELETE FROM ip_allocations WHERE port_id = $1 AND subnet_id = $2;

-- name: dhcp_release_subnet
-- A subnet about to be deleted: the DHCP ports' addresses on it go with it (Neutron does the same).
DELETE FROM ip_allocations a USING ports p
 WHERE a.subnet_id = $1 AND p.id = a.port_id AND p.device_owner = 'network:dhcp';

-- name: dhcp_delete_network_ports
-- A network about to be deleted: its DHCP ports go with it.
DELETE FROM ports WHERE network_id = $1 AND device_owner = 'network:dhcp';

-- name: dhcp_delete_port
DELETE FROM ports WHERE id = $1;
