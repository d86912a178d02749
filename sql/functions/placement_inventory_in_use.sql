-- placement_inventory_in_use: an inventory that allocations use (`used` is not 0) cannot be
-- deleted, with the error code of the foreign key from allocations that said so before (that
-- key cost every claim a query and a row lock per allocation row). `used` is the sum of the
-- inventory's allocations, kept by placement_track_usage in the same transaction.
CREATE OR REPLACE FUNCTION placement_inventory_in_use() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.used <> 0 THEN
        RAISE EXCEPTION 'inventory of % on resource provider % is in use', OLD.resource_class,
                        OLD.resource_provider_id
            USING ERRCODE = 'foreign_key_violation', TABLE = 'inventories';
    END IF;
    RETURN OLD;
END
$$;

CREATE OR REPLACE TRIGGER inventories_in_use BEFORE DELETE ON inventories
    FOR EACH ROW EXECUTE FUNCTION placement_inventory_in_use();
