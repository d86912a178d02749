-- project_usage: what a project's instances in this cell count against its quota, each
-- instance once: every instance that is not deleted (ERROR included) is one of `instances`,
-- and adds its flavor's vcpus and memory to `cores` and `ram`.
--
-- An instance that is being resized or migrated (its last migration neither confirmed,
-- reverted nor failed) counts with the larger of its old and new flavor, resource by
-- resource, until the user (or the confirm window) ends the move: the room an upsize was
-- granted stays taken while it is under way and a revert never has to find room again. It
-- is still counted once, not once per flavor (or per placement consumer) it holds.
--
-- Called in the statement of the caller (STABLE): it sees that statement's snapshot, so the
-- recount of servers.insert_many does not see the rows the same statement inserts.
CREATE OR REPLACE FUNCTION project_usage(project text,
                                         OUT instances bigint, OUT cores bigint, OUT ram bigint)
LANGUAGE sql STABLE AS $$
    SELECT count(*),
           coalesce(sum(greatest((i.flavor ->> 'vcpus')::bigint, (m.old_flavor ->> 'vcpus')::bigint,
                                 (m.new_flavor ->> 'vcpus')::bigint)), 0),
           coalesce(sum(greatest((i.flavor ->> 'memory_mb')::bigint, (m.old_flavor ->> 'memory_mb')::bigint,
                                 (m.new_flavor ->> 'memory_mb')::bigint)), 0)
      FROM instances i
      LEFT JOIN LATERAL (SELECT x.status, x.old_flavor, x.new_flavor FROM migrations x
                          WHERE x.instance_uuid = i.uuid
                          ORDER BY x.id DESC LIMIT 1) m
             ON m.status NOT IN ('confirmed', 'reverted', 'error')
     WHERE i.project_id = project AND i.deleted_at IS NULL
$$;
