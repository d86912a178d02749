-- The data plane (nova_async/dataplane/): what it made on a host, and the desired state it reads.

-- name: made_record
INSERT INTO dataplane_objects (host, kind, name, detail) VALUES ($1, $2, $3, $4)
ON CONFLICT (host, kind, name) DO UPDATE SET detail = EXCLUDED.detail;

-- name: made_forget
DELETE FROM dataplane_objects WHERE host = $1 AND kind = $2 AND name = $3;

-- name: made_listed
SELECT name, detail FROM dataplane_objects WHERE host = $1 AND kind = $2 ORDER BY name;
