-- The compute API's admin views of services and hypervisors. `up` is judged by the
-- database clock, the one the heartbeats were written with; $1 is service_down_time.

-- name: services
SELECT s.*, coalesce(s.last_seen_up >= now() - make_interval(secs => $1), false) AS up
  FROM services s
 WHERE ($2::text IS NULL OR s.host = $2) AND ($3::text IS NULL OR s.binary_name = $3)
 ORDER BY s.binary_name, s.host;

-- name: hypervisors
SELECT n.*, s.host AS service_host, s.id AS service_uuid, s.disabled, s.disabled_reason,
       coalesce(s.last_seen_up >= now() - make_interval(secs => $1), false) AS up
  FROM compute_nodes n
  LEFT JOIN services s ON s.id = n.service_id
 ORDER BY n.hypervisor_hostname;
