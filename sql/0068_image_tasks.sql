-- 0068: Glance's tasks (/v2/tasks): an import of an image from a URL, done in the
-- background by the image role. `image_id` is the image the task made, recorded as soon as
-- it exists, so a failure (or a restart that finds the task unfinished) knows which
-- image to take away; `result` names it only once the task succeeded.
CREATE TABLE image_tasks (
    id         uuid PRIMARY KEY,
    type       text NOT NULL,
    status     text NOT NULL DEFAULT 'pending',
    owner      text,
    input      jsonb NOT NULL,
    result     jsonb,
    message    text NOT NULL DEFAULT '',
    image_id   uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    CHECK (status IN ('pending', 'processing', 'success', 'failure'))
);

CREATE INDEX image_tasks_image_id ON image_tasks (image_id);
CREATE INDEX image_tasks_unfinished ON image_tasks (status) WHERE status IN ('pending', 'processing');
