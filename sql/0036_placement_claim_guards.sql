-- Placement: a claim no longer re-proves, row by row, what only an inventory write can break.
--
-- Every claim updates `used` on the provider's inventory rows and bumps the provider's
-- generation, and inserts its allocation rows. PostgreSQL makes each of those statements pay
-- for every rule of the table, whichever columns the statement touches:
--
--   * a CHECK constraint, and a stored generated column, is read back from its stored text and
--     planned afresh in every statement that writes the table: eight CHECKs (a regular
--     expression among them) and two generated columns on inventories for a claim that only
--     changes `used`; one CHECK on resource_providers for a claim that only changes the
--     generation; provider_summaries' generated entry on every refresh;
--   * a foreign key is checked by one query per written row: six per claim of three classes
--     (its consumer, its inventory), each taking a row lock that writes to the WAL;
--
-- Together that was about a sixth of a claim's time in the database. The same rules now hold
-- in ways a claim does not pay for:
--
--   * the CHECKs on an inventory's definition, and on a provider's name, are BEFORE triggers on
--     the columns they test (`UPDATE OF`), so only a statement that sets those columns runs
--     them. They raise check_violation naming the same constraint as before, which
--     providers.py turns into the same 400. `used >= 0` stays a CHECK: claims change `used`.
--   * inventories.capacity and .summary, and provider_summaries.flat_entry, are plain columns
--     written by the statements that change what they are made of: the inventory's BEFORE
--     trigger (its definition), the usage trigger (`used`, the only writer of `used`), the
--     summary triggers (resources, traits). Each text is made by one function.
--   * allocation -> inventory: an inventory whose `used` is not 0 cannot be deleted (a BEFORE
--     DELETE trigger, the foreign key's error code); `used` is the sum of the inventory's
--     allocations, kept by the usage trigger in the same transaction (0025). And the usage
--     trigger refuses a new allocation row whose inventory does not exist (it finds no row to
--     count it against).
--   * allocation -> consumer: deleting a consumer deletes its allocations (a statement
--     trigger, as ON DELETE CASCADE did). Allocations are only written by
--     placement_write_allocations, under the lock of the consumer row it has just created or
--     locked.

CREATE FUNCTION placement_inventory_text(resource_class text, capacity bigint, used bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT '"' || resource_class || '":{"capacity":' || capacity::text || ',"used":' || used::text || '}'
$$;

CREATE FUNCTION placement_flat_entry(uuid text, resources text, traits text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT '"' || uuid || '":{"resources":{' || resources || '}' || traits
           || ',"parent_provider_uuid":null,"root_provider_uuid":"' || uuid || '"}'
$$;

ALTER TABLE inventories ALTER COLUMN capacity DROP EXPRESSION, ALTER COLUMN summary DROP EXPRESSION;
ALTER TABLE provider_summaries ALTER COLUMN flat_entry DROP EXPRESSION;

ALTER TABLE inventories
    DROP CONSTRAINT inventories_resource_class_check,
    DROP CONSTRAINT inventories_total_check,
    DROP CONSTRAINT inventories_reserved_check,
    DROP CONSTRAINT inventories_min_unit_check,
    DROP CONSTRAINT inventories_max_unit_check,
    DROP CONSTRAINT inventories_step_size_check,
    DROP CONSTRAINT inventories_allocation_ratio_check;

-- an inventory's definition: checked, and what is derived from it written
CREATE FUNCTION placement_inventory_defined() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER inventories_defined
    BEFORE INSERT OR UPDATE OF resource_class, total, reserved, min_unit, max_unit, step_size,
                               allocation_ratio ON inventories
    FOR EACH ROW EXECUTE FUNCTION placement_inventory_defined();

ALTER TABLE resource_providers DROP CONSTRAINT resource_providers_name_check;

CREATE FUNCTION placement_provider_name_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT length(NEW.name) BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'new row for relation "resource_providers" violates check constraint "%"',
                        'resource_providers_name_check'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'resource_providers_name_check',
                  TABLE = 'resource_providers';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER resource_providers_name_check
    BEFORE INSERT OR UPDATE OF name ON resource_providers
    FOR EACH ROW EXECUTE FUNCTION placement_provider_name_check();

ALTER TABLE allocations
    DROP CONSTRAINT allocations_consumer_id_fkey,
    DROP CONSTRAINT allocations_resource_provider_id_resource_class_fkey;

CREATE FUNCTION placement_inventory_in_use() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.used <> 0 THEN
        RAISE EXCEPTION 'inventory of % on resource provider % is in use', OLD.resource_class,
                        OLD.resource_provider_id
            USING ERRCODE = 'foreign_key_violation', TABLE = 'inventories';
    END IF;
    RETURN OLD;
END
$$;

CREATE TRIGGER inventories_in_use BEFORE DELETE ON inventories
    FOR EACH ROW EXECUTE FUNCTION placement_inventory_in_use();

CREATE FUNCTION placement_consumer_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM allocations a USING gone g WHERE a.consumer_id = g.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER consumers_allocations_gone AFTER DELETE ON consumers
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION placement_consumer_gone();

-- provider_summaries' writers (0025, 0029) now write flat_entry too
CREATE OR REPLACE FUNCTION placement_summary_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO provider_summaries (provider_id, uuid, flat_entry)
    SELECT c.id, c.uuid::text, placement_flat_entry(c.uuid::text, '', ',"traits":[]') FROM changed c;
    RETURN NULL;
END
$$;

-- an inventory changed: the provider's resources (and, when inventories came or went, its
-- classes)
CREATE OR REPLACE FUNCTION placement_summary_refresh_resources() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        UPDATE provider_summaries s
           SET resources = r.resources, flat_entry = placement_flat_entry(s.uuid, r.resources, s.traits)
          FROM (SELECT p.id,
                       (SELECT coalesce(string_agg(i.summary, ',' ORDER BY i.resource_class COLLATE "C"), '')
                          FROM inventories i WHERE i.resource_provider_id = p.id) AS resources
                  FROM (SELECT DISTINCT c.resource_provider_id AS id FROM changed c) p) r
         WHERE s.provider_id = r.id;
    ELSE
        UPDATE provider_summaries s
           SET resources = r.resources, classes = r.classes,
               flat_entry = placement_flat_entry(s.uuid, r.resources, s.traits)
          FROM (SELECT p.id,
                       (SELECT coalesce(string_agg(i.summary, ',' ORDER BY i.resource_class COLLATE "C"), '')
                          FROM inventories i WHERE i.resource_provider_id = p.id) AS resources,
                       array(SELECT i.resource_class FROM inventories i WHERE i.resource_provider_id = p.id
                              ORDER BY i.resource_class COLLATE "C") AS classes
                  FROM (SELECT DISTINCT c.resource_provider_id AS id FROM changed c) p) r
         WHERE s.provider_id = r.id;
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION placement_summary_refresh_traits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE provider_summaries s
       SET traits = t.traits, flat_entry = placement_flat_entry(s.uuid, s.resources, t.traits)
      FROM (SELECT p.id, placement_summary_traits(p.id) AS traits
              FROM (SELECT DISTINCT c.resource_provider_id AS id FROM changed c) p) t
     WHERE s.provider_id = t.id;
    RETURN NULL;
END
$$;

-- 0025's usage trigger, which now writes the inventory's text with `used`, and finds every
-- new row's inventory or refuses the write
CREATE OR REPLACE FUNCTION placement_track_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    wanted  int;
    counted int;
BEGIN
    -- an UPDATE gives back what its old rows held, then takes what its new rows hold
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE inventories i
           SET used = i.used - d.delta,
               summary = placement_inventory_text(i.resource_class, i.capacity, i.used - d.delta)
          FROM (SELECT o.resource_provider_id, o.resource_class, sum(o.used) AS delta
                  FROM old_rows o GROUP BY 1, 2) d
         WHERE i.resource_provider_id = d.resource_provider_id AND i.resource_class = d.resource_class;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        WITH d AS (SELECT n.resource_provider_id, n.resource_class, sum(n.used) AS delta
                     FROM new_rows n GROUP BY 1, 2),
             changed AS (
                UPDATE inventories i
                   SET used = i.used + d.delta,
                       summary = placement_inventory_text(i.resource_class, i.capacity, i.used + d.delta)
                  FROM d
                 WHERE i.resource_provider_id = d.resource_provider_id
                   AND i.resource_class = d.resource_class
                RETURNING 1)
        SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM changed) INTO wanted, counted;
        IF counted <> wanted THEN
            RAISE EXCEPTION 'an allocation names an inventory that does not exist'
                USING ERRCODE = 'foreign_key_violation', TABLE = 'allocations';
        END IF;
    END IF;
    RETURN NULL;
END
$$;
