-- Placement: each inventory row carries its capacity and its piece of an allocation-candidates
-- provider summary (`"VCPU":{"capacity":64,"used":3}`, compact JSON) as stored generated columns.
--
-- GET /allocation_candidates builds its whole response in PostgreSQL
-- (placement_candidates.sql `flat_candidates`); without these, every request would redo the
-- arithmetic and the text for every inventory of every provider. Stored, they are rewritten
-- only when the row changes, which for `used` is once per claim on that provider and class,
-- at the cost of a few microseconds inside the claim's own update.
-- The class names are [A-Z0-9_] (CHECK above), so the text needs no JSON escaping.

ALTER TABLE inventories
    ADD COLUMN capacity bigint
        GENERATED ALWAYS AS (floor((total - reserved) * allocation_ratio)::bigint) STORED,
    ADD COLUMN summary text
        GENERATED ALWAYS AS ('"' || resource_class || '":{"capacity":'
                             || floor((total - reserved) * allocation_ratio)::bigint::text
                             || ',"used":' || used::text || '}') STORED;
