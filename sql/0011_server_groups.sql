-- Server groups (os-server-groups): a policy shared by their members. The member's host is
-- recorded by the scheduler when it claims one, under the group's lock, so the next
-- decision for the group sees it before the conductor has written instances.host.
CREATE TABLE server_groups (
    uuid                uuid PRIMARY KEY,
    name                text NOT NULL,
    project_id          text NOT NULL,
    user_id             text NOT NULL,
    policy              text NOT NULL CHECK (policy IN ('affinity', 'anti-affinity', 'soft-affinity',
                                                        'soft-anti-affinity')),
    max_server_per_host integer CHECK (max_server_per_host >= 1),
    created_at          timestamptz NOT NULL DEFAULT now(),
    deleted_at          timestamptz
);
CREATE INDEX server_groups_project ON server_groups (project_id) WHERE deleted_at IS NULL;

CREATE TABLE server_group_members (
    instance_uuid uuid PRIMARY KEY,
    group_uuid    uuid NOT NULL REFERENCES server_groups (uuid),
    host          text,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX server_group_members_group ON server_group_members (group_uuid);
