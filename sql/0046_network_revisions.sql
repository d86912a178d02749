-- Networks, subnets and ports can now be updated (PUT), so each keeps Neutron's
-- revision_number: 1 when made, one more on every update through the API. Clients show it;
-- openstacksdk sends it back in If-Match only when its caller asks (`if_revision`).
ALTER TABLE networks ADD COLUMN revision_number bigint NOT NULL DEFAULT 1;
ALTER TABLE subnets ADD COLUMN revision_number bigint NOT NULL DEFAULT 1;
ALTER TABLE ports ADD COLUMN revision_number bigint NOT NULL DEFAULT 1;
