-- subnet_pools_changed: a subnet whose allocation pools change forgets its allocated_below
-- mark; network_allocate_ports searches from the start again.
CREATE OR REPLACE FUNCTION subnet_pools_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.allocated_below := NULL;
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER subnets_pools_changed BEFORE UPDATE OF allocation_pools ON subnets
    FOR EACH ROW WHEN (OLD.allocation_pools IS DISTINCT FROM NEW.allocation_pools)
    EXECUTE FUNCTION subnet_pools_changed();
