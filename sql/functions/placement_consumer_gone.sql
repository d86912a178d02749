-- placement_consumer_gone: deleting consumers deletes their allocations, as the foreign key's
-- ON DELETE CASCADE did; the key itself cost every claim a query and a row lock per allocation
-- row. Allocations are only written by placement_write_allocations, under the lock of the
-- consumer row it has just created or locked, so no allocation can outlive its consumer.
CREATE OR REPLACE FUNCTION placement_consumer_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM allocations a USING gone g WHERE a.consumer_id = g.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER consumers_allocations_gone AFTER DELETE ON consumers
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION placement_consumer_gone();
