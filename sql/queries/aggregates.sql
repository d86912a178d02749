-- Host aggregates and the zones they give their hosts.

-- name: insert
INSERT INTO aggregates (uuid, name, availability_zone, metadata) VALUES ($1, $2, $3, $4) RETURNING *;

-- name: get
SELECT * FROM aggregates WHERE id = $1 AND deleted_at IS NULL;

-- name: get_for_update
SELECT * FROM aggregates WHERE id = $1 AND deleted_at IS NULL FOR UPDATE;

-- name: list
SELECT * FROM aggregates WHERE deleted_at IS NULL ORDER BY id;

-- name: hosts
SELECT aggregate_id, host FROM aggregate_hosts WHERE aggregate_id = ANY($1::int[]) ORDER BY host;

-- name: update
UPDATE aggregates SET name = $2, availability_zone = $3, metadata = $4, updated_at = now()
 WHERE id = $1 RETURNING *;

-- name: delete
UPDATE aggregates SET deleted_at = now() WHERE id = $1 RETURNING id;

-- name: add_host
INSERT INTO aggregate_hosts (aggregate_id, host) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING host;

-- name: remove_host
DELETE FROM aggregate_hosts WHERE aggregate_id = $1 AND host = $2 RETURNING host;

-- name: compute_host_exists
SELECT EXISTS (SELECT 1 FROM services WHERE host = $1 AND binary_name = 'nova-compute');

-- name: other_zones
-- The zones host $1 has from aggregates other than $2.
SELECT DISTINCT a.availability_zone
  FROM aggregates a JOIN aggregate_hosts ah ON ah.aggregate_id = a.id
 WHERE ah.host = $1 AND a.id <> $2 AND a.deleted_at IS NULL AND a.availability_zone IS NOT NULL;

-- name: refresh_zones
-- Give the compute services of hosts $1 the zone their aggregates say, or the default zone
-- $2 (a conductor or scheduler on the same host stays `internal`, as in Nova).
UPDATE services s
   SET zone = coalesce((SELECT a.availability_zone
                          FROM aggregates a JOIN aggregate_hosts ah ON ah.aggregate_id = a.id
                         WHERE ah.host = s.host AND a.deleted_at IS NULL
                           AND a.availability_zone IS NOT NULL
                         ORDER BY a.id LIMIT 1), $2),
       updated_at = now()
 WHERE s.host = ANY($1::text[]) AND s.binary_name = 'nova-compute';
