-- placement_summary_add: a new provider gets its provider_summaries row, without inventories
-- or traits yet.
--
-- provider_summaries keeps every provider's piece of an allocation-candidates answer ready
-- (its resources and traits as text, its classes, its room, its whole entry while the world is
-- flat), rewritten by these triggers in the same transaction as the write that changes it, so
-- it cannot drift and a request reads one row per candidate. Every summary trigger is per
-- statement, with transition tables, so a bulk write refreshes each provider once.
CREATE OR REPLACE FUNCTION placement_summary_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO provider_summaries (provider_id, uuid, flat_entry)
    SELECT c.id, c.uuid::text, placement_flat_entry(c.uuid::text, '', ',"traits":[]') FROM changed c;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER resource_providers_summary AFTER INSERT ON resource_providers
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION placement_summary_add();
