-- Security groups and their rules (Neutron v2.0), and which groups each port is in.
-- Who sees what: $1 is "the caller is an admin", $2 the caller's project. A group is seen
-- by its project; a rule by its own project and by the project of its group.

-- name: default_group
SELECT id FROM security_groups WHERE project_id = $1 AND is_default;

-- name: make_default_group
-- The project's `default` group with Neutron's default rules (egress anywhere, ingress from
-- members of the group, for IPv4 and IPv6). No row when another transaction made it first
-- (the unique partial index security_groups_one_default); default_group then finds it.
WITH made AS (
    INSERT INTO security_groups (id, project_id, name, description, is_default)
    VALUES (gen_random_uuid(), $1, 'default', 'Default security group', true)
    ON CONFLICT (project_id) WHERE is_default DO NOTHING
    RETURNING id, project_id
), rules AS (
    INSERT INTO security_group_rules (id, security_group_id, project_id, direction, ethertype, remote_group_id)
    SELECT gen_random_uuid(), made.id, made.project_id, r.direction, r.ethertype,
           CASE WHEN r.direction = 'ingress' THEN made.id END
      FROM made, (VALUES ('egress', 'IPv4'), ('egress', 'IPv6'),
                         ('ingress', 'IPv4'), ('ingress', 'IPv6')) AS r(direction, ethertype)
)
SELECT id FROM made;

-- name: get_group
SELECT * FROM security_groups WHERE id = $1;

-- name: lock_group
-- One change to a group (and its rules) at a time; NO KEY UPDATE, so ports joining the group
-- meanwhile (whose foreign key takes KEY SHARE) do not wait for it.
SELECT * FROM security_groups WHERE id = $1 FOR NO KEY UPDATE;

-- name: list_groups
SELECT g.*
  FROM security_groups g
 WHERE ($1 OR g.project_id = $2)
   AND ($3::uuid[] IS NULL OR g.id = ANY($3))
   AND ($4::text[] IS NULL OR g.name = ANY($4))
   AND ($5::text[] IS NULL OR g.project_id = ANY($5))
   AND ($6::text[] IS NULL OR g.description = ANY($6))
 ORDER BY g.created_at, g.id;

-- name: groups_by_name_or_id
-- The groups of project $1 that $2 names, each by id or by name; `wanted` says which entry of
-- $2 a row answers (a name two groups share gives two rows).
SELECT w.wanted, g.id, g.name
  FROM unnest($2::text[]) AS w(wanted)
  JOIN security_groups g
    ON g.project_id = $1 AND (g.name = w.wanted OR g.id::text = lower(w.wanted));

-- name: insert_group
-- A new group lets its members send anywhere (IPv4 and IPv6 egress rules), as Neutron's do.
WITH made AS (
    INSERT INTO security_groups (id, project_id, name, description, stateful)
    VALUES ($1, $2, $3, $4, $5)
    RETURNING *
), rules AS (
    INSERT INTO security_group_rules (id, security_group_id, project_id, direction, ethertype)
    SELECT gen_random_uuid(), made.id, made.project_id, 'egress', e.ethertype
      FROM made, (VALUES ('IPv4'), ('IPv6')) AS e(ethertype)
)
SELECT * FROM made;

-- name: update_group
UPDATE security_groups
   SET name = coalesce($2, name), description = coalesce($3, description),
       stateful = coalesce($4, stateful), updated_at = now()
 WHERE id = $1
RETURNING *;

-- name: group_in_use
SELECT EXISTS (SELECT 1 FROM port_security_groups WHERE security_group_id = $1);

-- name: delete_group
DELETE FROM security_groups WHERE id = $1;

-- name: lock_project_groups
-- One creator of groups or rules per project at a time, so the quota count stays true.
SELECT pg_advisory_xact_lock(hashtextextended('nova-async:security-groups:' || $1::text, 0));

-- name: project_counts
SELECT (SELECT count(*) FROM security_groups WHERE project_id = $1) AS security_group,
       (SELECT count(*) FROM security_group_rules WHERE project_id = $1) AS security_group_rule;

-- name: group_rules
SELECT * FROM security_group_rules
 WHERE security_group_id = ANY($1::uuid[])
 ORDER BY created_at, id;

-- name: get_rule
SELECT r.*, g.project_id AS group_project_id
  FROM security_group_rules r JOIN security_groups g ON g.id = r.security_group_id
 WHERE r.id = $1;

-- name: list_rules
SELECT r.*
  FROM security_group_rules r JOIN security_groups g ON g.id = r.security_group_id
 WHERE ($1 OR r.project_id = $2 OR g.project_id = $2)
   AND ($3::uuid[] IS NULL OR r.id = ANY($3))
   AND ($4::uuid[] IS NULL OR r.security_group_id = ANY($4))
   AND ($5::text[] IS NULL OR r.direction = ANY($5))
   AND ($6::text[] IS NULL OR r.ethertype = ANY($6))
   AND ($7::text[] IS NULL OR r.protocol = ANY($7))
   AND ($8::text[] IS NULL OR r.project_id = ANY($8))
   AND ($9::uuid[] IS NULL OR r.remote_group_id = ANY($9))
 ORDER BY r.created_at, r.id;

-- name: insert_rule
INSERT INTO security_group_rules (id, security_group_id, project_id, direction, ethertype, protocol,
                                  port_range_min, port_range_max, remote_ip_prefix, remote_group_id,
                                  description)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::inet, $10, $11)
RETURNING *;

-- name: delete_rule
DELETE FROM security_group_rules WHERE id = $1;

-- name: port_groups
-- The groups of each port $1, with their names (ports in no group: no row).
SELECT p.port_id, g.id, g.name
  FROM port_security_groups p JOIN security_groups g ON g.id = p.security_group_id
 WHERE p.port_id = ANY($1::uuid[])
 ORDER BY g.created_at, g.id;

-- name: set_port_groups
-- Port $1 in exactly the groups $2.
WITH gone AS (
    DELETE FROM port_security_groups WHERE port_id = $1 AND security_group_id <> ALL($2::uuid[])
)
INSERT INTO port_security_groups (port_id, security_group_id)
SELECT $1, g FROM unnest($2::uuid[]) AS g
ON CONFLICT DO NOTHING;

-- name: disable_port_security
UPDATE ports SET port_security_enabled = false WHERE id = $1;

-- name: attach_device_groups
-- For each instance $1[k]: the groups $2[k] (the text of a uuid array) on the ports made for
-- it that are in none yet (a retried AllocatePorts finds them there already and changes
-- nothing). Coalesced (db/coalesce.py): the boots that get here at once share the statement.
-- A group deleted since the boot was accepted is left out: the port is in fewer groups, which
-- lets less in, never more.
WITH w AS (
    SELECT * FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS w(device, wanted, ord)
), joined AS (
    INSERT INTO port_security_groups (port_id, security_group_id)
    SELECT p.id, g.id
      FROM w
      JOIN ports p ON p.device_id = w.device AND p.device_id <> '' AND p.auto_created AND p.port_security_enabled
      JOIN security_groups g ON g.id = ANY (w.wanted::uuid[])
     WHERE NOT EXISTS (SELECT 1 FROM port_security_groups x WHERE x.port_id = p.id)
    ON CONFLICT DO NOTHING
)
SELECT ord FROM w;

-- name: device_ports
-- The ports of instances $1 (device ids), with whether they may hold groups.
SELECT id, device_id, port_security_enabled
  FROM ports
 WHERE device_id = ANY($1::text[]) AND device_id <> ''
 ORDER BY device_index, created_at, id;

-- name: device_groups
-- The groups on the ports of instances $1, by instance, each group once per instance.
SELECT DISTINCT p.device_id, g.id, g.name, g.created_at
  FROM ports p
  JOIN port_security_groups x ON x.port_id = p.id
  JOIN security_groups g ON g.id = x.security_group_id
 WHERE p.device_id = ANY($1::text[]) AND p.device_id <> ''
 ORDER BY p.device_id, g.created_at, g.id;

-- name: add_device_group
INSERT INTO port_security_groups (port_id, security_group_id)
SELECT p.id, $2
  FROM ports p
 WHERE p.device_id = $1 AND p.device_id <> '' AND p.port_security_enabled
ON CONFLICT DO NOTHING;

-- name: remove_device_group
DELETE FROM port_security_groups x
 USING ports p
 WHERE x.port_id = p.id AND p.device_id = $1 AND p.device_id <> '' AND x.security_group_id = $2;
