-- placement_summary_refresh_traits: a provider's traits changed, so its provider_summaries row
-- gets its trait text, its trait ids (which the flat candidate search compares) and its flat
-- entry again, in the same statement.
CREATE OR REPLACE FUNCTION placement_summary_refresh_traits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE provider_summaries s
       SET traits = t.traits, trait_ids = t.ids,
           flat_entry = placement_flat_entry(s.uuid, s.resources, t.traits)
      FROM (SELECT p.id, placement_summary_traits(p.id) AS traits,
                   array(SELECT pt.trait_id FROM provider_traits pt WHERE pt.resource_provider_id = p.id
                          ORDER BY pt.trait_id) AS ids
              FROM (SELECT DISTINCT c.resource_provider_id AS id FROM changed c) p) t
     WHERE s.provider_id = t.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER provider_traits_summary_delete AFTER DELETE ON provider_traits
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_traits();

CREATE OR REPLACE TRIGGER provider_traits_summary_insert AFTER INSERT ON provider_traits
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_traits();

CREATE OR REPLACE TRIGGER provider_traits_summary_update AFTER UPDATE ON provider_traits
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_traits();
