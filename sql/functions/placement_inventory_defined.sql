-- placement_inventory_defined: an inventory's definition checked, and what is derived from it
-- (capacity, the summary text) written, by a BEFORE trigger on the columns it is made of. As
-- CHECK constraints and generated columns, these were planned afresh in every statement that
-- writes inventories, every claim's update of `used` included; as a trigger `UPDATE OF` those
-- columns, only a change of the definition runs them. A broken rule raises check_violation
-- naming the constraint it replaces, which providers.py turns into the same 400.
CREATE OR REPLACE FUNCTION placement_inventory_defined() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    broken text := CASE
        WHEN NEW.resource_class !~ '^[A-Z0-9_]{1,255}$' THEN 'inventories_resource_class_check'
        WHEN NEW.total < 1 THEN 'inventories_total_check'
        WHEN NEW.reserved < 0 THEN 'inventories_reserved_check'
        WHEN NEW.min_unit < 1 THEN 'inventories_min_unit_check'
        WHEN NEW.max_unit < 1 THEN 'inventories_max_unit_check'
        WHEN NEW.step_size < 1 THEN 'inventories_step_size_check'
        WHEN NOT NEW.allocation_ratio > 0 THEN 'inventories_allocation_ratio_check'
    END;
BEGIN
    IF broken IS NOT NULL THEN
        RAISE EXCEPTION 'new row for relation "inventories" violates check constraint "%"', broken
            USING ERRCODE = 'check_violation', CONSTRAINT = broken, TABLE = 'inventories';
    END IF;
    NEW.capacity := floor((NEW.total - NEW.reserved) * NEW.allocation_ratio)::bigint;
    NEW.summary := placement_inventory_text(NEW.resource_class, NEW.capacity, NEW.used);
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER inventories_defined
    BEFORE INSERT OR UPDATE OF resource_class, total, reserved, min_unit, max_unit, step_size,
                               allocation_ratio ON inventories
    FOR EACH ROW EXECUTE FUNCTION placement_inventory_defined();
