-- placement_summary_resources: a provider's `resources` summary text, its inventories' pieces
-- in class name order (C collation).
-- Nothing calls it any more: placement_summary_refresh_resources reads the inventories inline,
-- because PostgreSQL cannot inline a LANGUAGE sql function that aggregates and plans its body
-- afresh for every statement that calls it. Databases have it, so it stays here until a
-- migration drops it (and this file goes).
CREATE OR REPLACE FUNCTION placement_summary_resources(provider bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(string_agg(i.summary, ',' ORDER BY i.resource_class COLLATE "C"), '')
      FROM inventories i WHERE i.resource_provider_id = provider
$$;
