-- network_allocate_ports_many: the port allocations of a burst of boots in one statement.
--
-- network_allocate_ports keeps the subnet locked from its address choice to its commit, so
-- instances built at once on one network would each wait for the one before to commit (a WAL
-- flush each). The calls that queue together (db/coalesce.py) come here instead: one
-- transaction, one flush, the subnet locked once.
--
-- Each call is still answered as it was alone:
--   * it runs network_allocate_ports in a block of its own (a subtransaction), so a call that
--     is refused (an exhausted subnet, a network it may not use) is undone alone, and the
--     others go on; its row says why: `refusal` (the exception's DETAIL, which
--     instance_ports.py maps to an error) and `message` (what the user sees);
--   * `wanted` is per call the text of a uuid array, or NULL for "the project's only network".
-- Every subnet the calls may take an address from is locked first, in id order: one call
-- after another would otherwise lock them in the order the calls come, which another
-- transaction locking in id order could meet head-on.
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
    k    int;
    why  text;
    said text;
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

    FOR k IN 1..coalesce(cardinality(devices), 0) LOOP
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
