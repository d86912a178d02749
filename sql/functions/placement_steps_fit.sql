-- placement_steps_fit: whether every requested amount is a multiple of that inventory's
-- step_size, the one rule a provider's room (placement_room_range) does not hold.
CREATE OR REPLACE FUNCTION placement_steps_fit(provider bigint, classes text[], amounts int[])
RETURNS bool LANGUAGE sql STABLE AS $$
    SELECT NOT EXISTS (
        SELECT 1 FROM unnest(classes, amounts) AS w(resource_class, amount)
          JOIN inventories i ON i.resource_provider_id = provider AND i.resource_class = w.resource_class
         WHERE w.amount % i.step_size <> 0)
$$;
