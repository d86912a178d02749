-- placement_room_range: an inventory's room as one range in its class's band: the amounts a
-- single allocation may take, [min_unit, least(max_unit, capacity - used)], plus
-- class_number * 2^32 (amounts are int4, so the bands never meet); NULL when nothing fits.
-- provider_summaries.room is their union over the provider's inventories.
CREATE OR REPLACE FUNCTION placement_room_range(class_number int, min_unit int, max_unit int, capacity bigint,
                                     used bigint)
RETURNS int8range LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN min_unit <= least(max_unit, capacity - used)
                THEN int8range(class_number::bigint * 4294967296 + min_unit,
                               class_number::bigint * 4294967296 + least(max_unit, capacity - used), '[]')
           END
$$;
