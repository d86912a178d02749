-- placement_track_usage: inventories.used is the sum of the allocations against each
-- inventory, kept in the same transaction as every allocation write, so it cannot drift; it
-- lets candidates and claims read usage from one row per inventory instead of summing
-- allocations. Per statement, with transition tables: one UPDATE of inventories per allocation
-- write, not one per row. With `used` it rewrites the inventory's summary text, and it refuses
-- a new allocation row whose inventory does not exist (it finds no row to count it against;
-- the foreign key's error code), the rule the dropped foreign key kept.
--
-- placement_write_allocations counts the common claim itself, in the statement that takes the
-- room: the insert trigger skips a statement while the transaction-local setting
-- placement.usage_counted is 'on'.
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

CREATE OR REPLACE TRIGGER allocations_track_usage_delete AFTER DELETE ON allocations
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION placement_track_usage();

CREATE OR REPLACE TRIGGER allocations_track_usage_insert AFTER INSERT ON allocations
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('placement.usage_counted', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION placement_track_usage();

CREATE OR REPLACE TRIGGER allocations_track_usage_update AFTER UPDATE ON allocations
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION placement_track_usage();
