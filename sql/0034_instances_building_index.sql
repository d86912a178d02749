-- The scheduler asks, once per decision, how many instances are building on each of the hosts
-- it weighs (scheduler.sql `building`). With only `instances_host` and `instances_project` to
-- choose from, the plan read every live instance of the cell and filtered them: a cost that
-- grows with the cloud, paid per decision. Building instances are few at any time; an index
-- of just those answers the question with a handful of probes.
CREATE INDEX instances_building ON instances (host) WHERE deleted_at IS NULL AND vm_state = 'building';
