-- Key pairs (os-keypairs): public keys a user names at boot; the instance keeps a copy of
-- the key it was booted with (key_data), which its config drive hands to the guest.
CREATE TABLE keypairs (
    id          serial PRIMARY KEY,
    user_id     text NOT NULL,
    name        text NOT NULL,
    type        text NOT NULL DEFAULT 'ssh' CHECK (type IN ('ssh', 'x509')),
    public_key  text NOT NULL,
    fingerprint text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, name)
);

ALTER TABLE instances ADD COLUMN key_data text;
