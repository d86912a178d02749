-- placement_inventory_text: an inventory's piece of a provider summary,
-- `"VCPU":{"capacity":64,"used":3}` (compact JSON; class names are [A-Z0-9_], nothing to
-- escape). Kept on inventories.summary by the triggers that change `used` or the definition.
CREATE OR REPLACE FUNCTION placement_inventory_text(resource_class text, capacity bigint, used bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT '"' || resource_class || '":{"capacity":' || capacity::text || ',"used":' || used::text || '}'
$$;
