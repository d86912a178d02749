-- Remote console tokens (api: remote_consoles.py issues them, console_proxy.py spends them).

-- name: issue
-- Tokens nobody used are swept as new ones are made: the table stays as small as the
-- number of consoles asked for in the last token lifetime.
WITH swept AS (
    DELETE FROM console_auth_tokens WHERE expires_at <= now()
)
INSERT INTO console_auth_tokens (token_hash, instance_uuid, console_type, expires_at)
VALUES ($1, $2, $3, now() + make_interval(secs => $4));

-- name: spend
-- The token's one use: gone once read. An expired token, a token for another console
-- type and a token of a deleted instance are not accepted.
DELETE FROM console_auth_tokens t
 USING instances i
 WHERE t.token_hash = $1 AND t.console_type = $2 AND t.expires_at > now()
   AND i.uuid = t.instance_uuid AND i.deleted_at IS NULL
RETURNING t.instance_uuid, i.host;
