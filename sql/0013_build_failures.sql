-- Consecutive failed builds per compute node: the scheduler's BuildFailureWeigher steers new
-- instances away from a host whose builds keep failing; a successful build resets it.
ALTER TABLE compute_nodes ADD COLUMN failed_builds integer NOT NULL DEFAULT 0;
