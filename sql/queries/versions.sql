-- What the services of a mixed-version site run and can receive (nova_async/bus/caps.py,
-- nova_async/db/migrate.py). `live` is judged by the database clock, as os-services does.

-- name: compute_caps
-- Every compute service's message caps, by host: one read serves every host's sends.
SELECT host, release, message_caps FROM services WHERE binary_name = 'nova-compute';

-- name: behind
-- The live services (a heartbeat within $2 seconds) whose release does not ship migration
-- $1, but those on hosts $3 (this process's own, which it is about to replace).
SELECT host, binary_name, coalesce(release, 'unknown') AS release, schema_level
  FROM services
 WHERE coalesce(schema_level, 0) < $1
   AND NOT forced_down
   AND last_seen_up >= now() - make_interval(secs => $2)
   AND NOT (host = ANY($3::text[]))
 ORDER BY host, binary_name;
