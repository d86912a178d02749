-- Secrets the service makes for itself on first start.

-- name: ensure_key
INSERT INTO service_keys (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING;

-- name: get_key
SELECT secret FROM service_keys WHERE name = $1;

-- name: step_done
SELECT EXISTS (SELECT 1 FROM bootstrap_steps WHERE name = $1);

-- name: mark_step_done
INSERT INTO bootstrap_steps (name) VALUES ($1) ON CONFLICT (name) DO NOTHING;
