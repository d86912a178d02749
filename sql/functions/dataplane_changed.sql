-- Tell the data plane (dataplane/reconcile.py) that what it serves changed: one
-- notification per statement on any table it reads. The payload is empty; the data plane
-- reads the whole desired state again (changes that arrive while it works are one more pass).
CREATE OR REPLACE FUNCTION dataplane_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('nova_async_dataplane', '');
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER networks_dataplane AFTER INSERT OR UPDATE OR DELETE ON networks
    FOR EACH STATEMENT EXECUTE FUNCTION dataplane_changed();
CREATE OR REPLACE TRIGGER subnets_dataplane AFTER INSERT OR UPDATE OR DELETE ON subnets
    FOR EACH STATEMENT EXECUTE FUNCTION dataplane_changed();
CREATE OR REPLACE TRIGGER ports_dataplane AFTER INSERT OR UPDATE OR DELETE ON ports
    FOR EACH STATEMENT EXECUTE FUNCTION dataplane_changed();
CREATE OR REPLACE TRIGGER ip_allocations_dataplane AFTER INSERT OR UPDATE OR DELETE ON ip_allocations
    FOR EACH STATEMENT EXECUTE FUNCTION dataplane_changed();
CREATE OR REPLACE TRIGGER security_group_rules_dataplane AFTER INSERT OR UPDATE OR DELETE ON security_group_rules
    FOR EACH STATEMENT EXECUTE FUNCTION dataplane_changed();
CREATE OR REPLACE TRIGGER port_security_groups_dataplane AFTER INSERT OR UPDATE OR DELETE ON port_security_groups
    FOR EACH STATEMENT EXECUTE FUNCTION dataplane_changed();
CREATE OR REPLACE TRIGGER routers_dataplane AFTER INSERT OR UPDATE OR DELETE ON routers
    FOR EACH STATEMENT EXECUTE FUNCTION dataplane_changed();
CREATE OR REPLACE TRIGGER floatingips_dataplane AFTER INSERT OR UPDATE OR DELETE ON floatingips
    FOR EACH STATEMENT EXECUTE FUNCTION dataplane_changed();
