-- subnet_free_addresses: the `wanted` lowest free addresses of a subnet's allocation pools, in
-- order, or fewer when the pools hold fewer. The caller holds the subnet's row lock.
--
-- The pools are sorted and do not overlap (ipam.plan_subnet), and every pool address below the
-- subnet's `allocated_below` mark is taken, so the search starts at the mark and walks up:
-- the addresses allocated above it, read in order through the primary key, are stepped over.
-- On a subnet filled from the bottom, as instance ports fill it, nothing is allocated above
-- the mark, and `wanted` addresses cost one index probe.
--
-- No address is computed past a pool's end, so a pool ending at the last address there is
-- does not overflow inet arithmetic.
CREATE OR REPLACE FUNCTION subnet_free_addresses(subnet uuid, wanted int)
RETURNS inet[]
LANGUAGE plpgsql
AS $$
DECLARE
    pools   jsonb;
    mark    inet;
    pool    record;
    got     inet[] := '{}';
    next_up inet;       -- the lowest address of the pool not looked at yet
    more    boolean;    -- false once the pool's last address has been looked at
    taken   inet;
BEGIN
    SELECT s.allocation_pools, s.allocated_below INTO pools, mark FROM subnets s WHERE s.id = subnet;
    FOR pool IN SELECT (x.p->>'start')::inet AS first, (x.p->>'end')::inet AS last
                  FROM jsonb_array_elements(pools) WITH ORDINALITY AS x(p, ord)
                 ORDER BY x.ord LOOP
        EXIT WHEN cardinality(got) >= wanted;
        next_up := greatest(pool.first, mark);
        CONTINUE WHEN next_up > pool.last;
        more := true;
        FOR taken IN SELECT a.ip_address FROM ip_allocations a
                      WHERE a.subnet_id = subnet AND a.ip_address BETWEEN next_up AND pool.last
                      ORDER BY a.ip_address LOOP
            WHILE next_up < taken AND cardinality(got) < wanted LOOP
                got := got || next_up;
                next_up := next_up + 1;
            END LOOP;
            EXIT WHEN cardinality(got) >= wanted;
            IF taken = pool.last THEN
                more := false;
                EXIT;
            END IF;
            next_up := taken + 1;
        END LOOP;
        WHILE more AND cardinality(got) < wanted LOOP
            got := got || next_up;
            EXIT WHEN next_up = pool.last;
            next_up := next_up + 1;
        END LOOP;
    END LOOP;
    RETURN got;
END
$$;
