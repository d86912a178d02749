-- placement_claim_problems: why consumer number k of an allocation write was refused, row by
-- row, for the refusal's message. placement_write_allocations calls it after writing the rows
-- that fit: `own` is what the consumer was just given, so used - own is everybody else's usage.
CREATE OR REPLACE FUNCTION placement_claim_problems(cid bigint, k int, a_consumer int[], provider_ids bigint[],
                                         a_classes text[], a_amounts int[])
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT string_agg(p.problem, '; ' ORDER BY p.ord)
      FROM (SELECT w.ord, CASE
                -- upstream's sentences first (clients match them), then what we know besides
                WHEN i.total IS NULL THEN format(
                    'Inventory for ''%s'' on resource provider ''%s'' invalid: %s (%s) has no '
                    'inventory of %s.', w.rc, rp.uuid, rp.name, rp.uuid, w.rc)
                WHEN w.amount < i.min_unit OR w.amount > i.max_unit OR w.amount % i.step_size <> 0
                THEN format('Unable to create allocation for ''%s'' on resource provider ''%s''. '
                            'The requested amount would violate inventory constraints: %s %s on '
                            'resource provider %s (%s) violates min_unit %s, max_unit %s or step_size %s.',
                            w.rc, rp.uuid, w.rc, w.amount, rp.name, rp.uuid, i.min_unit,
                            i.max_unit, i.step_size)
                WHEN w.amount > trunc((i.total - i.reserved) * i.allocation_ratio)
                                - (i.used - coalesce(own.used, 0))
                THEN format('Unable to create allocation for ''%s'' on resource provider ''%s''. '
                            'The requested amount would exceed the capacity: %s %s requested on '
                            'resource provider %s (%s) but only %s of %s is free.',
                            w.rc, rp.uuid, w.rc, w.amount, rp.name, rp.uuid,
                            greatest(trunc((i.total - i.reserved) * i.allocation_ratio)
                                     - (i.used - coalesce(own.used, 0)), 0),
                            trunc((i.total - i.reserved) * i.allocation_ratio))
            END AS problem
              FROM unnest(a_consumer, provider_ids, a_classes, a_amounts)
                   WITH ORDINALITY AS w(pos, provider_id, rc, amount, ord)
              JOIN resource_providers rp ON rp.id = w.provider_id
              LEFT JOIN inventories i ON i.resource_provider_id = w.provider_id
                                     AND i.resource_class = w.rc
              LEFT JOIN allocations own ON own.consumer_id = cid
                                       AND own.resource_provider_id = w.provider_id
                                       AND own.resource_class = w.rc
             WHERE w.pos = k) p
$$;
