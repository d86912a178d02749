-- Per-project quota limits an admin has set (os-quota-sets). A resource without a row here
-- has the default from the [quota] settings. Usage is never stored: it is counted from the
-- instances themselves, so it cannot drift (Nova's counting quotas).
CREATE TABLE quota_limits (
    project_id text NOT NULL,
    resource   text NOT NULL,
    hard_limit integer NOT NULL CHECK (hard_limit >= -1),   -- -1: unlimited
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, resource)
);
