-- Identity: one token revoked by itself (Keystone's `DELETE /v3/auth/tokens`). Such an event
-- names the token's audit id, which every token carries and Keystone revokes by, rather than
-- a user or a project; the rest of the table (0020) is unchanged: a token issued at or before
-- revoked_at that the event matches is refused, in memory, by every process.
ALTER TABLE token_revocations ADD COLUMN audit_id text;
