-- placement_flat_entry: a provider's whole entry in an allocation-candidates
-- `provider_summaries` at 1.29+ while the world is flat (no parent: parent null, itself the
-- root), compact JSON. Kept on provider_summaries.flat_entry by the summary triggers.
CREATE OR REPLACE FUNCTION placement_flat_entry(uuid text, resources text, traits text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT '"' || uuid || '":{"resources":{' || resources || '}' || traits
           || ',"parent_provider_uuid":null,"root_provider_uuid":"' || uuid || '"}'
$$;
