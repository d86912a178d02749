-- network_allocate_ports: compute's AllocatePorts in the common case, as one statement.
--
-- Most boots name whole networks (or none, meaning "the project's only network") and want a
-- new port on each with the lowest free address of the network's first subnet. One call does
-- it, and the subnet's row lock is held only from this statement to its commit (from Python it
-- was seven round trips, every boot on the network waiting through all of them).
--
-- Same outcome as instance_ports.allocate's general path, which still answers everything else
-- (ports named by id, fixed addresses, "none"):
--   * one allocation per device at a time (the same advisory lock), and a device that already
--     has ports gets them back, rebound to `host` (a retried or duplicated request);
--   * each network must be the project's own or shared; it needs a subnet, and the first
--     (by ip_version, created_at, id) gives the address; subnets are locked in id order;
--   * an exception names what is wrong in its DETAIL, with the message the user sees; it
--     undoes the whole statement, so no port is left half made.
--
-- The lowest free address is searched from the subnet's `allocated_below` mark (every pool
-- address below it is taken: subnet_free_addresses), moved on by each allocation here and back
-- by any release below it (subnet_release_below), so the first try almost always fits, where
-- trying each allocated address + 1 in turn took thousands of probes per port on a full subnet.
--
-- $wanted NULL: the project's usable networks (own or shared, not external), which must be at
-- most one. Rows: one per port, as the query device_vifs shows them, in NIC order.
CREATE OR REPLACE FUNCTION network_allocate_ports(device text, host text, project text, wanted uuid[])
RETURNS TABLE (port_id uuid, network_id uuid, mac_address macaddr, network_name text, mtu int,
               ip_address inet, subnet_id uuid, cidr cidr, gateway_ip inet, ip_version smallint)
LANGUAGE plpgsql
AS $$
DECLARE
    nets      uuid[];
    subnet_of uuid[] := '{}';
    net       record;
    sub       record;
    k         int;
    new_port  uuid;
    new_mac   macaddr;
    address   inet;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('nova-async:ports:' || device, 0));
    UPDATE ports p SET binding_host = host, status = 'ACTIVE', updated_at = now()
     WHERE p.device_id = device AND p.device_id <> '' AND p.binding_host <> host;
    -- `<> ''` (which a device id always is) lets the plan use the partial index ports_device
    IF EXISTS (SELECT 1 FROM ports p WHERE p.device_id = device AND p.device_id <> '') THEN
        RETURN QUERY
        SELECT p.id, p.network_id, p.mac_address, n.name, n.mtu, a.ip_address, s.id, s.cidr,
               s.gateway_ip, s.ip_version
          FROM ports p
          JOIN networks n ON n.id = p.network_id
          LEFT JOIN ip_allocations a ON a.port_id = p.id
          LEFT JOIN subnets s ON s.id = a.subnet_id
         WHERE p.device_id = device AND p.device_id <> ''
         ORDER BY p.device_index, p.created_at, p.id, a.ip_address;
        RETURN;
    END IF;

    IF wanted IS NULL THEN
        nets := ARRAY(SELECT n.id FROM networks n
                       WHERE (n.project_id = project OR n.shared) AND NOT n.external
                       ORDER BY n.created_at, n.id);
        IF cardinality(nets) > 1 THEN
            RAISE EXCEPTION USING DETAIL = 'network_ambiguous',
                MESSAGE = 'Multiple possible networks found, use a Network ID to be more specific.';
        END IF;
    ELSE
        nets := wanted;
    END IF;

    FOR k IN 1..coalesce(cardinality(nets), 0) LOOP
        SELECT n.id, n.project_id, n.shared INTO net FROM networks n WHERE n.id = nets[k];
        IF NOT FOUND OR NOT (net.project_id = project OR net.shared) THEN
            RAISE EXCEPTION USING DETAIL = 'network_not_found',
                MESSAGE = format('Network %s could not be found.', nets[k]);
        END IF;
        subnet_of[k] := (SELECT s.id FROM subnets s WHERE s.network_id = nets[k]
                          ORDER BY s.ip_version, s.created_at, s.id LIMIT 1);
        IF subnet_of[k] IS NULL THEN
            RAISE EXCEPTION USING DETAIL = 'network_requires_subnet', MESSAGE = format(
                'Network %s has no subnet, so an instance on it would get no address; add a subnet first.',
                nets[k]);
        END IF;
    END LOOP;

    -- locked in id order, as ipam.lock_subnets does; a subnet deleted meanwhile is skipped
    IF (SELECT count(*) FROM (SELECT s.id FROM subnets s WHERE s.id = ANY(subnet_of)
                               ORDER BY s.id FOR UPDATE) l)
       <> (SELECT count(DISTINCT u) FROM unnest(subnet_of) u) THEN
        RAISE EXCEPTION USING DETAIL = 'subnet_not_found',
            MESSAGE = 'A subnet of the requested networks was deleted meanwhile; try again.';
    END IF;

    FOR k IN 1..coalesce(cardinality(nets), 0) LOOP
        SELECT s.id, s.network_id, s.cidr, s.gateway_ip, s.ip_version
          INTO sub FROM subnets s WHERE s.id = subnet_of[k];
        SELECT n.name, n.mtu INTO net FROM networks n WHERE n.id = nets[k];
        address := (subnet_free_addresses(sub.id, 1))[1];
        IF address IS NULL THEN
            RAISE EXCEPTION USING DETAIL = 'ip_exhausted', MESSAGE = format(
                'No more IP addresses available on network %s (subnet %s, %s).', sub.network_id, sub.id, sub.cidr);
        END IF;
        new_port := NULL;
        FOR attempt IN 1..16 LOOP  -- a random MAC (fa:16:3e, as Nova's) that nobody has
            INSERT INTO ports AS p (id, network_id, project_id, mac_address, device_id, device_owner,
                                    status, binding_host, auto_created, device_index)
            VALUES (gen_random_uuid(), nets[k], project,
                    ('fa:16:3e:' || lpad(to_hex(floor(random() * 256)::int), 2, '0') || ':'
                     || lpad(to_hex(floor(random() * 256)::int), 2, '0') || ':'
                     || lpad(to_hex(floor(random() * 256)::int), 2, '0'))::macaddr,
                    device, 'compute:nova', 'ACTIVE', host, true, k - 1)
            ON CONFLICT ON CONSTRAINT ports_mac_address_key DO NOTHING
            RETURNING p.id, p.mac_address INTO new_port, new_mac;
            EXIT WHEN new_port IS NOT NULL;
        END LOOP;
        IF new_port IS NULL THEN
            RAISE EXCEPTION USING DETAIL = 'mac_generation_failed', MESSAGE = 'Could not find a free MAC address.';
        END IF;
        INSERT INTO ip_allocations (subnet_id, ip_address, port_id) VALUES (sub.id, address, new_port);
        -- every pool address below this one is taken (a pool before it is full, or this is the
        -- lowest free one of its pool)
        UPDATE subnets s SET allocated_below = address + 1 WHERE s.id = sub.id;
        -- the port as device_vifs would read it back, in NIC order
        port_id := new_port; network_id := nets[k]; mac_address := new_mac; network_name := net.name;
        mtu := net.mtu; ip_address := address; subnet_id := sub.id; cidr := sub.cidr;
        gateway_ip := sub.gateway_ip; ip_version := sub.ip_version;
        RETURN NEXT;
    END LOOP;
END
$$;
