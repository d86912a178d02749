-- 0069: the public event stream (GET /compute/v2.1/events, nova_async/api/event_stream.py).
-- Every database with instances (each cell; the API database too, for what adoption moves)
-- records each change of a server the stream shows, of its actions and of its faults as one
-- row here, written by the triggers of sql/functions/server_events_*.sql in the writer's own
-- transaction. A row carries the fields the stream shows as that change committed them (a
-- copy of a few columns, not the row as JSON): every state a client is sent is one that was
-- committed, in order, the same on a replay, and still there once its record is gone (a
-- fault moved to cell0 with its server, an action deleted with it).
--
-- `id` is taken at insert, so ids do not follow commit order: a reader of `id > last` would
-- skip a row that commits after a larger id. `seq` is the stream's position instead, given
-- only to committed rows by the sequencer (sql/queries/server_events.sql `sequence`), one
-- transaction at a time, from server_event_counter: contiguous, in commit order. Rows are
-- pruned oldest first beyond the backlog ([api] event_backlog).
CREATE TABLE server_events (
    id            bigserial PRIMARY KEY,
    seq           bigint UNIQUE,
    kind          text NOT NULL CHECK (kind IN ('server', 'deleted', 'action', 'fault')),
    instance_uuid uuid NOT NULL,
    project_id    text NOT NULL,
    ref_id        bigint,            -- action: instance_actions.id; fault: instance_faults.id
    -- kind server: the row as this change left it
    name          text,
    vm_state      text,
    task_state    text,
    power_state   integer,
    host          text,
    locked        boolean,
    image_ref     text,
    flavor_name   text,
    network_info  jsonb,
    created       timestamptz,
    updated       timestamptz,
    deleted       boolean,
    -- kind action: the action, and its latest event's name and result
    request_id    text,
    action        text,
    start_time    timestamptz,
    finish_time   timestamptz,
    message       text,              -- and a fault's
    event         text,
    result        text,
    -- kind fault (its time in `created`)
    code          integer,
    details       text,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX server_events_unsequenced ON server_events (id) WHERE seq IS NULL;

-- The last seq given; one row. Only the sequencer (holding its advisory lock) moves it.
CREATE TABLE server_event_counter (
    last bigint NOT NULL
);
INSERT INTO server_event_counter VALUES (0);
