-- Server groups and their members; "members" are instances that are not deleted.

-- name: insert
INSERT INTO server_groups (uuid, name, project_id, user_id, policy, max_server_per_host)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING *;

-- name: get
-- $2: the caller's project, NULL for an admin (who sees every project's groups).
SELECT * FROM server_groups WHERE uuid = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR project_id = $2);

-- name: get_for_update
SELECT * FROM server_groups WHERE uuid = $1 AND deleted_at IS NULL FOR UPDATE;

-- name: list
SELECT * FROM server_groups
 WHERE deleted_at IS NULL AND ($1::text IS NULL OR project_id = $1)
 ORDER BY created_at, uuid LIMIT $2 OFFSET $3;

-- name: count_in_project
SELECT count(*) FROM server_groups WHERE project_id = $1 AND deleted_at IS NULL;

-- name: delete
UPDATE server_groups SET deleted_at = now() WHERE uuid = $1 AND deleted_at IS NULL RETURNING uuid;

-- name: members
-- Members of the groups $1, with the host each was placed on, if any. (A member leaves its
-- group when it is deleted; the instances themselves are in the cells' databases.)
SELECT m.group_uuid, m.instance_uuid, m.host
  FROM server_group_members m
 WHERE m.group_uuid = ANY($1::uuid[])
 ORDER BY m.created_at, m.instance_uuid;

-- name: drop_member
DELETE FROM server_group_members WHERE instance_uuid = $1;

-- name: add_member
INSERT INTO server_group_members (instance_uuid, group_uuid) VALUES ($1, $2);

-- name: placed_members
-- For the scheduler: group $1's members and the host each was placed on (NULL: not yet),
-- none once the group is deleted (a move of a former member is held to no policy, as in Nova).
SELECT m.instance_uuid, m.host
  FROM server_group_members m JOIN server_groups g ON g.uuid = m.group_uuid
 WHERE m.group_uuid = $1 AND g.deleted_at IS NULL;

-- name: set_member_host
UPDATE server_group_members SET host = $2 WHERE instance_uuid = $1;

-- name: groups_of_array
-- The groups instance $1 belongs to (2.71's server_groups in GET /servers/{id}).
SELECT ARRAY(SELECT group_uuid::text FROM server_group_members WHERE instance_uuid = $1 ORDER BY group_uuid);
