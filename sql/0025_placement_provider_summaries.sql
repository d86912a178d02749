-- Placement: every provider's piece of an allocation-candidates answer, kept ready as text.
--
-- GET /allocation_candidates without a limit answers with every provider that has room, and
-- for each one its summary: every inventory's capacity and usage, and its traits in name
-- order. Built per request (as 0023 left it), that means grouping every inventory row of the
-- cloud, sorting every provider's traits and concatenating thousands of small strings, every
-- time, for an answer that changes only when somebody writes. Here the two pieces that take
-- the work are kept per provider, rewritten by triggers in the same transaction as the write
-- that changes them, so they cannot drift, and a request reads one row per candidate:
--
--   resources  `"DISK_GB":{"capacity":..,"used":..},"MEMORY_MB":{...},...` (every class, in
--              class name order: the inner text of the "resources" object, 1.27+);
--   traits     `,"traits":["A","B"]` (name order, C collation as Python's sorted());
--   classes    the provider's resource classes, in name order, for "has every requested class";
--   flat_entry the provider's whole entry in provider_summaries at 1.29+ while the world is
--              flat (no parent, so parent null and itself the root): what most requests want.
--
-- Usage changes with every claim, so the claim pays for keeping `resources` current. To keep
-- that to one small UPDATE per claim, the usage trigger of 0004 becomes statement-level: one
-- UPDATE of inventories per allocation write (not one per allocation row), and so one refresh
-- of the provider's summary. Every trigger here is per statement, with transition tables, so a
-- bulk COPY refreshes each provider once.

CREATE TABLE provider_summaries (
    provider_id bigint PRIMARY KEY REFERENCES resource_providers (id) ON DELETE CASCADE,
    uuid        text NOT NULL,
    resources   text NOT NULL DEFAULT '',
    traits      text NOT NULL DEFAULT ',"traits":[]',
    classes     text[] NOT NULL DEFAULT '{}',
    flat_entry  text GENERATED ALWAYS AS (
        '"' || uuid || '":{"resources":{' || resources || '}' || traits
        || ',"parent_provider_uuid":null,"root_provider_uuid":"' || uuid || '"}') STORED
) WITH (fillfactor = 50);  -- rewritten by every claim on the provider: room for HOT updates

CREATE FUNCTION placement_summary_resources(provider bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(string_agg(i.summary, ',' ORDER BY i.resource_class COLLATE "C"), '')
      FROM inventories i WHERE i.resource_provider_id = provider
$$;

CREATE FUNCTION placement_summary_classes(provider bigint) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT array(SELECT i.resource_class FROM inventories i WHERE i.resource_provider_id = provider
                  ORDER BY i.resource_class COLLATE "C")
$$;

CREATE FUNCTION placement_summary_traits(provider bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT ',"traits":[' || coalesce(string_agg('"' || t.name || '"', ',' ORDER BY t.name COLLATE "C"), '')
           || ']'
      FROM provider_traits pt JOIN traits t ON t.id = pt.trait_id
     WHERE pt.resource_provider_id = provider
$$;

CREATE FUNCTION placement_summary_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO provider_summaries (provider_id, uuid)
    SELECT c.id, c.uuid::text FROM changed c;
    RETURN NULL;
END
$$;

CREATE TRIGGER resource_providers_summary AFTER INSERT ON resource_providers
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION placement_summary_add();

-- A claim only changes usage (UPDATE): the classes stay as they are.
CREATE FUNCTION placement_summary_refresh_resources() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        UPDATE provider_summaries s SET resources = placement_summary_resources(s.provider_id)
         WHERE s.provider_id IN (SELECT DISTINCT c.resource_provider_id FROM changed c);
    ELSE
        UPDATE provider_summaries s SET resources = placement_summary_resources(s.provider_id),
                                        classes = placement_summary_classes(s.provider_id)
         WHERE s.provider_id IN (SELECT DISTINCT c.resource_provider_id FROM changed c);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER inventories_summary_insert AFTER INSERT ON inventories
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_resources();
CREATE TRIGGER inventories_summary_update AFTER UPDATE ON inventories
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_resources();
CREATE TRIGGER inventories_summary_delete AFTER DELETE ON inventories
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_resources();

CREATE FUNCTION placement_summary_refresh_traits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE provider_summaries s SET traits = placement_summary_traits(s.provider_id)
     WHERE s.provider_id IN (SELECT DISTINCT c.resource_provider_id FROM changed c);
    RETURN NULL;
END
$$;

CREATE TRIGGER provider_traits_summary_insert AFTER INSERT ON provider_traits
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_traits();
CREATE TRIGGER provider_traits_summary_update AFTER UPDATE ON provider_traits
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_traits();
CREATE TRIGGER provider_traits_summary_delete AFTER DELETE ON provider_traits
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_traits();

-- inventories.used, per statement: the net change per (provider, class) in one UPDATE
DROP TRIGGER allocations_track_usage ON allocations;
DROP FUNCTION placement_track_usage();

CREATE FUNCTION placement_track_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE inventories i SET used = i.used + d.delta
          FROM (SELECT n.resource_provider_id, n.resource_class, sum(n.used) AS delta
                  FROM new_rows n GROUP BY 1, 2) d
         WHERE i.resource_provider_id = d.resource_provider_id AND i.resource_class = d.resource_class;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE inventories i SET used = i.used - d.delta
          FROM (SELECT o.resource_provider_id, o.resource_class, sum(o.used) AS delta
                  FROM old_rows o GROUP BY 1, 2) d
         WHERE i.resource_provider_id = d.resource_provider_id AND i.resource_class = d.resource_class;
    ELSE
        UPDATE inventories i SET used = i.used + d.delta
          FROM (SELECT x.resource_provider_id, x.resource_class, sum(x.used) AS delta
                  FROM (SELECT n.resource_provider_id, n.resource_class, n.used FROM new_rows n
                        UNION ALL
                        SELECT o.resource_provider_id, o.resource_class, -o.used FROM old_rows o) x
                 GROUP BY 1, 2) d
         WHERE i.resource_provider_id = d.resource_provider_id AND i.resource_class = d.resource_class
           AND d.delta <> 0;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER allocations_track_usage_insert AFTER INSERT ON allocations
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION placement_track_usage();
CREATE TRIGGER allocations_track_usage_update AFTER UPDATE ON allocations
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION placement_track_usage();
CREATE TRIGGER allocations_track_usage_delete AFTER DELETE ON allocations
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION placement_track_usage();

INSERT INTO provider_summaries (provider_id, uuid, resources, traits, classes)
SELECT rp.id, rp.uuid::text, placement_summary_resources(rp.id), placement_summary_traits(rp.id),
       placement_summary_classes(rp.id)
  FROM resource_providers rp;
