-- 0058: flavor access. A private flavor (is_public false) is seen and booted only by admins
-- and by the projects an admin gave access to (os-flavor-access, addTenantAccess).
CREATE TABLE flavor_projects (
    flavor_id  text NOT NULL REFERENCES flavors (id) ON DELETE CASCADE,
    project_id text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flavor_id, project_id)
);
