-- Secrets the service makes for itself on first start.

-- name: ensure_key
INSERT INTO service_keys (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING;

-- name: get_key
SELECT secret FROM service_keys WHERE name = $1;
