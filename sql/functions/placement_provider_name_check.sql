-- placement_provider_name_check: a provider's name is 1 to 200 characters. As a CHECK it was
-- planned in every statement that writes resource_providers, every claim's generation bump
-- included; as a trigger on `name` it runs only when the name is set, and raises the same
-- check_violation, naming the constraint it replaces.
CREATE OR REPLACE FUNCTION placement_provider_name_check() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE TRIGGER resource_providers_name_check
    BEFORE INSERT OR UPDATE OF name ON resource_providers
    FOR EACH ROW EXECUTE FUNCTION placement_provider_name_check();
