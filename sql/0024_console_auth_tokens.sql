-- Remote console tokens. A console URL carries a random token; only its SHA-256 is kept,
-- so the table holds nothing a reader could connect with. A token opens one console (the
-- type it was made for) of one instance, once, before it expires: the proxy deletes the
-- row as it accepts it, in one statement, so of two connections with the same token at
-- most one gets through, whichever process serves it.
CREATE TABLE console_auth_tokens (
    token_hash    text PRIMARY KEY,
    instance_uuid uuid NOT NULL REFERENCES instances (uuid) ON DELETE CASCADE,
    console_type  text NOT NULL CHECK (console_type IN ('serial', 'novnc')),
    expires_at    timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_auth_tokens_expiry ON console_auth_tokens (expires_at);
