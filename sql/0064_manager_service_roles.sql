-- Keystone's bootstrap has made two more roles since 2024.2: `manager` (a project's manager:
-- implied by admin, implies member; Nova lets it move its project's servers) and `service`
-- (what other services' users hold to call service-only APIs such as
-- os-server-external-events). Same stable ids as 0020: sha256("role/<name>")[:32].
INSERT INTO roles (id, name, description)
SELECT substr(encode(sha256(convert_to('role/' || name, 'UTF8')), 'hex'), 1, 32), name, description
  FROM (VALUES ('manager', 'Manages its own project: what a member does, and moving its servers.'),
               ('service', 'For other services'' users: the APIs only services call.')) AS r (name, description)
ON CONFLICT (name) DO NOTHING;
