-- A question the scheduler answers once across its copies (scheduler/answers.py).

-- name: take_question
-- Question $1 for process $2: its row, and whether this call made it (the question is ours).
-- The no-op update returns an existing row; xmax is 0 only for the row this INSERT wrote.
INSERT INTO scheduler_answers AS a (question_id, worker) VALUES ($1, $2)
ON CONFLICT (question_id) DO UPDATE SET question_id = a.question_id
RETURNING a.worker, a.answer, (a.xmax = 0) AS taken;

-- name: take_over_question
-- Question $1 from dead process $2, for process $3, if nobody took it over first.
UPDATE scheduler_answers SET worker = $3
 WHERE question_id = $1 AND worker = $2 AND answer IS NULL
RETURNING question_id;

-- name: record_answer
UPDATE scheduler_answers SET answer = $2 WHERE question_id = $1;

-- name: forget_question
-- A question its copy could not answer (an error): another copy of it decides for itself.
DELETE FROM scheduler_answers WHERE question_id = $1 AND answer IS NULL;

-- name: forget_old_answers
DELETE FROM scheduler_answers WHERE asked_at < now() - make_interval(secs => $1);
