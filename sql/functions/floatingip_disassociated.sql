-- floatingip_disassociated: a floating IP without a port is not associated, whichever way
-- it lost the port: the API's PUT {"port_id": null}, or the guest's port deleted (the foreign
-- key sets port_id NULL and nothing else). Its fixed IP and router go with the port, and it
-- is DOWN, so the data plane stops NATting an address nobody holds.
CREATE OR REPLACE FUNCTION floatingip_disassociated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.fixed_ip_address := NULL;
    NEW.router_id := NULL;
    NEW.status := 'DOWN';
    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER floatingips_disassociated BEFORE UPDATE OF port_id ON floatingips
    FOR EACH ROW WHEN (NEW.port_id IS NULL AND OLD.port_id IS NOT NULL)
    EXECUTE FUNCTION floatingip_disassociated();
