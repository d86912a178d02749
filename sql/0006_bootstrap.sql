-- One-time start-up steps the service has done on this database (e.g. registering the demo
-- guest's images). A step that is recorded here is never repeated, even if what it made
-- has since been deleted by a user.
CREATE TABLE bootstrap_steps (
    name    text PRIMARY KEY,
    done_at timestamptz NOT NULL DEFAULT now()
);
