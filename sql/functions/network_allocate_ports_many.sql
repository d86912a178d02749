-- network_allocate_ports_many: the port allocations of a burst of boots in one statement.
--
-- network_allocate_ports keeps the subnet locked from its address choice to its commit, so
-- instances built at once on one network would each wait for the one before to commit (a WAL
-- flush each). The calls that queue together (db/coalesce.py) come here instead: one
-- transaction, one flush, the subnet locked once.
--
-- Each call is still answered as it was alone. Most calls of a burst are alike: a device with
-- no ports yet, networks it may use, each with a subnet. Those are made together, a set at a
-- time: one walk per subnet for its addresses (subnet_free_addresses), one INSERT for all
-- their ports, one for their addresses, one move of each subnet's mark. They get what the
-- same calls made one after another, in call order, would have got: the lowest free
-- addresses, NICs in order.
--
-- Any other call is answered alone, after them: network_allocate_ports in a block of its own
-- (a subtransaction), so one that is refused is undone alone and the others go on. Its row
-- says why: `refusal` (the exception's DETAIL, which instance_ports.py maps to an error) and
-- `message` (what the user sees). Those are a device that already has ports (a retried
-- request: its ports come back, as they do to a device's second call in the statement), and
-- whatever would be refused (a network it may not use or that has no subnet, "the only
-- network" when there are several).
-- When a subnet has fewer free addresses than the calls made together want, every call is
-- answered alone, so each one refused is refused as it would have been in turn.
--
-- `wanted` is per call the text of a uuid array, or NULL for "the project's only network".
-- Every subnet the calls may take an address from is locked first, in id order: one call
-- after another would otherwise lock them in the order the calls come, which another
-- transaction locking in id order could meet head-on. The devices are locked next (the lock
-- network_allocate_ports and the general path take), in one order too.
--
-- Rows: the ports of call `ord` as network_allocate_ports returns them, in NIC order; or one
-- row with `refusal` and `message`, the rest NULL.
CREATE OR REPLACE FUNCTION network_allocate_ports_many(devices text[], hosts text[], projects text[], wanted text[])
RETURNS TABLE (ord int, port_id uuid, network_id uuid, mac_address macaddr, network_name text, mtu int,
               ip_address inet, subnet_id uuid, cidr cidr, gateway_ip inet, ip_version smallint,
               refusal text, message text)
LANGUAGE plpgsql
AS $$
DECLARE
    -- the NICs made together, sorted by subnet, call and NIC: one entry each
    nic_k    int[];
    nic_i    int[];
    nic_net  uuid[];
    nic_sub  uuid[];
    nic_addr inet[] := '{}';
    nic_port uuid[];
    nic_mac  macaddr[] := '{}';
    alone    int[];    -- the calls answered one at a time, in call order
    todo     int[];    -- NICs whose port is not made yet (its MAC address was taken)
    made_j   int[];    -- the NICs whose port the last INSERT made, and their MACs
    made_mac macaddr[];
    x        int;
    free     inet[];
    sub      record;
    k        int;
    why      text;
    said     text;
BEGIN
    PERFORM 1 FROM subnets s
     WHERE s.id IN (
           SELECT (SELECT f.id FROM subnets f WHERE f.network_id = n.id
                    ORDER BY f.ip_version, f.created_at, f.id LIMIT 1)
             FROM networks n
            WHERE n.id = ANY (ARRAY(SELECT unnest(w::uuid[]) FROM unnest(wanted) AS w WHERE w IS NOT NULL))
               OR (NOT n.external AND EXISTS (
                       SELECT 1 FROM unnest(projects, wanted) AS c(project, w)
                        WHERE c.w IS NULL AND (n.project_id = c.project OR n.shared))))
     ORDER BY s.id
       FOR UPDATE;
    PERFORM pg_advisory_xact_lock(l.key)
       FROM (SELECT DISTINCT hashtextextended('nova-async:ports:' || d, 0) AS key
               FROM unnest(devices) AS d ORDER BY 1) l;

    -- which calls are made together, and their NICs
    WITH asked AS (
        SELECT c.k::int AS k, c.device, c.project, c.w,
               CASE WHEN c.w IS NULL
                    THEN ARRAY(SELECT n.id FROM networks n
                                WHERE (n.project_id = c.project OR n.shared) AND NOT n.external
                                ORDER BY n.created_at, n.id)
                    ELSE c.w::uuid[] END AS nets,
               min(c.k) OVER (PARTITION BY c.device) = c.k AS first
          FROM unnest(devices, projects, wanted) WITH ORDINALITY AS c(device, project, w, k)),
    nic AS (
        SELECT asked.k, u.i::int AS i, u.net,
               (SELECT s.id FROM subnets s WHERE s.network_id = u.net
                 ORDER BY s.ip_version, s.created_at, s.id LIMIT 1) AS sub,
               asked.first AND (asked.w IS NOT NULL OR cardinality(asked.nets) <= 1)
                 AND had.port IS NULL
                 AND (u.net IS NULL OR coalesce(n.project_id = asked.project OR n.shared, false)) AS plain
          FROM asked
          -- a probe of the index per device (LIMIT keeps it one: a NOT EXISTS may be planned as
          -- a hash of every port with a device, and a plan is kept as long as the connection)
          LEFT JOIN LATERAL (SELECT p.id AS port FROM ports p
                              WHERE p.device_id = asked.device AND p.device_id <> '' LIMIT 1) had ON true
          LEFT JOIN LATERAL unnest(asked.nets) WITH ORDINALITY AS u(net, i) ON true
          LEFT JOIN networks n ON n.id = u.net),
    judged AS (
        SELECT nic.*, bool_and(nic.plain AND (nic.net IS NULL OR nic.sub IS NOT NULL))
                          OVER (PARTITION BY nic.k) AS together
          FROM nic)
    SELECT array_agg(j.k ORDER BY j.sub, j.k, j.i) FILTER (WHERE j.together AND j.net IS NOT NULL),
           array_agg(j.i ORDER BY j.sub, j.k, j.i) FILTER (WHERE j.together AND j.net IS NOT NULL),
           array_agg(j.net ORDER BY j.sub, j.k, j.i) FILTER (WHERE j.together AND j.net IS NOT NULL),
           array_agg(j.sub ORDER BY j.sub, j.k, j.i) FILTER (WHERE j.together AND j.net IS NOT NULL),
           array_agg(DISTINCT j.k) FILTER (WHERE NOT j.together)
      INTO nic_k, nic_i, nic_net, nic_sub, alone
      FROM judged j;

    IF nic_k IS NOT NULL THEN
        -- a subnet chosen after a concurrent change is not locked yet: lock it now, and if
        -- one is gone, or one lacks the addresses, answer every call alone
        IF (SELECT count(*) FROM (SELECT s.id FROM subnets s WHERE s.id = ANY (nic_sub)
                                   ORDER BY s.id FOR UPDATE) l)
           = (SELECT count(DISTINCT u) FROM unnest(nic_sub) u) THEN
            FOR sub IN SELECT u.sub AS id, count(*)::int AS need FROM unnest(nic_sub) AS u(sub)
                        GROUP BY u.sub ORDER BY u.sub LOOP
                free := subnet_free_addresses(sub.id, sub.need);
                IF cardinality(free) < sub.need THEN
                    nic_addr := NULL;
                    EXIT;
                END IF;
                nic_addr := nic_addr || free;
            END LOOP;
        ELSE
            nic_addr := NULL;
        END IF;
        IF nic_addr IS NULL THEN
            nic_k := NULL;
            alone := ARRAY(SELECT generate_series(1, cardinality(devices)));
        END IF;
    END IF;

    IF nic_k IS NOT NULL THEN
        nic_port := ARRAY(SELECT gen_random_uuid() FROM unnest(nic_k));
        todo := ARRAY(SELECT generate_subscripts(nic_k, 1));
        FOR attempt IN 1..16 LOOP  -- random MACs (fa:16:3e, as Nova's); one taken is drawn again
            WITH made AS (
                INSERT INTO ports AS p (id, network_id, project_id, mac_address, device_id, device_owner,
                                        status, binding_host, auto_created, device_index)
                SELECT nic_port[j], nic_net[j], projects[nic_k[j]],
                       ('fa:16:3e:' || lpad(to_hex(floor(random() * 256)::int), 2, '0') || ':'
                        || lpad(to_hex(floor(random() * 256)::int), 2, '0') || ':'
                        || lpad(to_hex(floor(random() * 256)::int), 2, '0'))::macaddr,
                       devices[nic_k[j]], 'compute:nova', 'ACTIVE', hosts[nic_k[j]], true, nic_i[j] - 1
                  FROM unnest(todo) AS j
                ON CONFLICT ON CONSTRAINT ports_mac_address_key DO NOTHING
                RETURNING p.id, p.mac_address),
            tried AS (SELECT j, m.mac_address AS mac FROM unnest(todo) AS j LEFT JOIN made m ON m.id = nic_port[j])
            SELECT coalesce(array_agg(t.j) FILTER (WHERE t.mac IS NULL), '{}'),
                   array_agg(t.j) FILTER (WHERE t.mac IS NOT NULL), array_agg(t.mac) FILTER (WHERE t.mac IS NOT NULL)
              INTO todo, made_j, made_mac
              FROM tried t;
            FOR x IN 1..coalesce(cardinality(made_j), 0) LOOP
                nic_mac[made_j[x]] := made_mac[x];
            END LOOP;
            EXIT WHEN cardinality(todo) = 0;
        END LOOP;
        IF cardinality(todo) > 0 THEN  -- 16 draws taken in a row: never seen; every call fails
            RAISE EXCEPTION USING DETAIL = 'mac_generation_failed', MESSAGE = 'Could not find a free MAC address.';
        END IF;
        INSERT INTO ip_allocations (subnet_id, ip_address, port_id)
        SELECT u.sub, u.address, u.port FROM unnest(nic_sub, nic_addr, nic_port) AS u(sub, address, port);
        -- every pool address below the highest given is taken now (they were the lowest free)
        UPDATE subnets s SET allocated_below = m.top + 1
          FROM (SELECT u.sub, max(u.address) AS top FROM unnest(nic_sub, nic_addr) AS u(sub, address)
                 GROUP BY u.sub) m
         WHERE s.id = m.sub;
        RETURN QUERY
        SELECT u.k, u.port, u.net, u.mac, n.name, n.mtu, u.address, s.id, s.cidr, s.gateway_ip, s.ip_version,
               NULL::text, NULL::text
          FROM unnest(nic_k, nic_i, nic_port, nic_net, nic_mac, nic_addr, nic_sub)
               AS u(k, i, port, net, mac, address, sub)
          JOIN networks n ON n.id = u.net
          JOIN subnets s ON s.id = u.sub
         ORDER BY u.k, u.i;
    END IF;

    FOREACH k IN ARRAY coalesce(alone, '{}') LOOP
        BEGIN
            RETURN QUERY
            SELECT k, a.port_id, a.network_id, a.mac_address, a.network_name, a.mtu, a.ip_address,
                   a.subnet_id, a.cidr, a.gateway_ip, a.ip_version, NULL::text, NULL::text
              FROM network_allocate_ports(devices[k], hosts[k], projects[k], wanted[k]::uuid[]) a;
        EXCEPTION WHEN raise_exception THEN
            GET STACKED DIAGNOSTICS why = PG_EXCEPTION_DETAIL, said = MESSAGE_TEXT;
            RETURN QUERY
            SELECT k, NULL::uuid, NULL::uuid, NULL::macaddr, NULL::text, NULL::int, NULL::inet,
                   NULL::uuid, NULL::cidr, NULL::inet, NULL::smallint, why, said;
        END;
    END LOOP;
END
$$;
