-- phase: expand
-- 0074: the scheduler's answers by question, so that a question that reaches two copies of
-- the scheduler (its sender's publish retried after the broker's confirm was lost) is decided
-- and claimed once: the copy that takes it records its incarnation (`worker`, as in 0073), the
-- other waits for `answer` and gives the same one, or takes the question over if that process
-- died first. Rows older than an hour are removed by the scheduler (scheduler/answers.py).
-- Expand only: a release before it sends no question id and never reads the table.
CREATE TABLE scheduler_answers (
    question_id uuid PRIMARY KEY,
    worker      uuid NOT NULL,
    answer      bytea,
    asked_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX scheduler_answers_asked_at ON scheduler_answers (asked_at);
