-- placement_summary_refresh_resources: inventories changed (a claim's `used`, or their
-- definition), so their providers' provider_summaries rows are rewritten in the same
-- statement: the resources text, the room (placement_room_range) and whether any inventory is
-- stepped, the flat entry, and the classes when inventories came or went (a claim's UPDATE
-- keeps them). One pass over each provider's inventories, written inline: a LANGUAGE sql
-- helper would be planned afresh on every claim.
CREATE OR REPLACE FUNCTION placement_summary_refresh_resources() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE provider_summaries s
       SET resources = r.resources, room = r.room, stepped = r.stepped,
           classes = CASE WHEN TG_OP = 'UPDATE' THEN s.classes ELSE r.classes END,
           flat_entry = placement_flat_entry(s.uuid, r.resources, s.traits)
      FROM (SELECT DISTINCT c.resource_provider_id AS id FROM changed c) p
     CROSS JOIN LATERAL (
           SELECT coalesce(string_agg(i.summary, ',' ORDER BY i.resource_class COLLATE "C"), '') AS resources,
                  coalesce(range_agg(placement_room_range(i.class_number, i.min_unit, i.max_unit,
                                                          i.capacity, i.used)), '{}') AS room,
                  coalesce(bool_or(i.step_size > 1), false) AS stepped,
                  -- classes change only when inventories come or go, not with a claim's usage
                  coalesce(array_agg(i.resource_class ORDER BY i.resource_class COLLATE "C")
                           FILTER (WHERE TG_OP <> 'UPDATE'), '{}') AS classes
             FROM inventories i WHERE i.resource_provider_id = p.id) r
     WHERE s.provider_id = p.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER inventories_summary_delete AFTER DELETE ON inventories
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_resources();

CREATE OR REPLACE TRIGGER inventories_summary_insert AFTER INSERT ON inventories
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_resources();

CREATE OR REPLACE TRIGGER inventories_summary_update AFTER UPDATE ON inventories
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION placement_summary_refresh_resources();
