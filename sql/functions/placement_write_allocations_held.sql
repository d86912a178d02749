-- placement_write_allocations_held: placement_write_allocations, kept only if every holder
-- (h_pids[i] holding the advisory lock h_keys[i], see placement_holders_present) is still
-- there once the consumers are locked; otherwise it raises (DETAIL 'placement.holder_gone')
-- and the whole write is undone. Checked after the write, not before: by then the consumers'
-- rows are locked, so a writer for whoever took an instance over either waits for this one
-- and replaces what it wrote, or went first, after the old holder was gone, and this one is
-- refused.
CREATE OR REPLACE FUNCTION placement_write_allocations_held(
    c_uuids uuid[], c_projects text[], c_users text[], c_types text[], c_check bool[],
    c_expected int[], a_consumer int[], a_providers uuid[], a_classes text[], a_amounts int[],
    h_pids int[], h_keys bigint[])
RETURNS TABLE (written_consumer uuid, new_generation int)
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN QUERY SELECT w.written_consumer, w.new_generation
                   FROM placement_write_allocations(c_uuids, c_projects, c_users, c_types, c_check,
                                                    c_expected, a_consumer, a_providers, a_classes,
                                                    a_amounts) AS w;
    IF NOT placement_holders_present(h_pids, h_keys) THEN
        RAISE EXCEPTION USING DETAIL = 'placement.holder_gone', MESSAGE =
            'The claim was made for a scheduling request whose conductor no longer holds the instance.';
    END IF;
END
$$;
