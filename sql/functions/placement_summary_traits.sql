-- placement_summary_traits: a provider's `,"traits":[...]` summary text, names in C-collation
-- order (as Python's sorted()).
CREATE OR REPLACE FUNCTION placement_summary_traits(provider bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT ',"traits":[' || coalesce(string_agg('"' || t.name || '"', ',' ORDER BY t.name COLLATE "C"), '')
           || ']'
      FROM provider_traits pt JOIN traits t ON t.id = pt.trait_id
     WHERE pt.resource_provider_id = provider
$$;
