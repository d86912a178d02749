-- placement_summary_classes: a provider's resource classes, in name order (C collation).
-- Nothing calls it any more: placement_summary_refresh_resources reads the inventories inline,
-- because PostgreSQL cannot inline a LANGUAGE sql function that aggregates and plans its body
-- afresh for every statement that calls it. Databases have it, so it stays here until a
-- migration drops it (and this file goes).
CREATE OR REPLACE FUNCTION placement_summary_classes(provider bigint) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT array(SELECT i.resource_class FROM inventories i WHERE i.resource_provider_id = provider
                  ORDER BY i.resource_class COLLATE "C")
$$;
