-- Host aggregates (os-aggregates): named sets of compute hosts with metadata. An aggregate's
-- `availability_zone` metadata puts its hosts in that zone; services.zone is kept equal to it
-- (in the same transaction as the change), so everything that asks a service for its zone
-- (os-services, os-availability-zone, the AvailabilityZoneFilter) agrees.
CREATE TABLE aggregates (
    id                serial PRIMARY KEY,
    uuid              uuid NOT NULL UNIQUE,
    name              text NOT NULL,
    availability_zone text,
    metadata          jsonb NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz,
    deleted_at        timestamptz
);
CREATE UNIQUE INDEX aggregates_live_name ON aggregates (name) WHERE deleted_at IS NULL;

CREATE TABLE aggregate_hosts (
    aggregate_id integer NOT NULL REFERENCES aggregates (id),
    host         text NOT NULL,
    PRIMARY KEY (aggregate_id, host)
);
CREATE INDEX aggregate_hosts_host ON aggregate_hosts (host);
