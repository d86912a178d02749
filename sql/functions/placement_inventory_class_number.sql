-- placement_inventory_class_number: every inventory's class has a number
-- (resource_class_numbers), given the first time the class appears; the band of the class in
-- a provider's room (placement_room_range).
CREATE OR REPLACE FUNCTION placement_inventory_class_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT n.number INTO NEW.class_number FROM resource_class_numbers n WHERE n.name = NEW.resource_class;
    IF NEW.class_number IS NULL THEN
        INSERT INTO resource_class_numbers (name) VALUES (NEW.resource_class) ON CONFLICT (name) DO NOTHING;
        SELECT n.number INTO NEW.class_number FROM resource_class_numbers n WHERE n.name = NEW.resource_class;
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER inventories_class_number BEFORE INSERT OR UPDATE OF resource_class ON inventories
    FOR EACH ROW EXECUTE FUNCTION placement_inventory_class_number();
