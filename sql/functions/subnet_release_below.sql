-- subnet_release_below: an address released below a subnet's allocated_below mark moves the
-- mark back to it, so that network_allocate_ports finds it again.
CREATE OR REPLACE FUNCTION subnet_release_below() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- evaluated on the newest row version: a concurrent allocation that moved the mark on and
    -- committed meanwhile is moved back, not overwritten
    UPDATE subnets SET allocated_below = least(allocated_below, OLD.ip_address)
     WHERE id = OLD.subnet_id AND allocated_below > OLD.ip_address;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER ip_allocations_release AFTER DELETE ON ip_allocations
    FOR EACH ROW EXECUTE FUNCTION subnet_release_below();
