-- Key pairs, per user.

-- name: insert
INSERT INTO keypairs (user_id, name, type, public_key, fingerprint) VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- name: get
SELECT * FROM keypairs WHERE user_id = $1 AND name = $2;

-- name: list
-- $3/$4: page after the key named $3 (by name), at most $4.
SELECT * FROM keypairs WHERE user_id = $1 AND ($2::text IS NULL OR name > $2) ORDER BY name LIMIT $3;

-- name: count
SELECT count(*) FROM keypairs WHERE user_id = $1;

-- name: delete
DELETE FROM keypairs WHERE user_id = $1 AND name = $2 RETURNING id;

-- name: lock_user
SELECT pg_advisory_xact_lock(hashtextextended('keypairs:' || $1, 0));
