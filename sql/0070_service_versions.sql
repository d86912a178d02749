-- phase: expand
-- 0070: what each service runs, for mixed-version sites (a rolling upgrade, one host at a
-- time). A service writes these when it registers (nova_async/compute/registration.py):
--   release       the nova-async release it runs ("0.1.0");
--   schema_level  the highest migration that release ships: `db migrate --contract` waits
--                 until every live service's is at least the contract migration's number;
--   message_caps  the version of each message it can receive ({"RebuildInstance": "1.1"}),
--                 which senders convert their messages down to (nova_async/bus/caps.py).
-- A record written before this migration has none of them: its service is taken to speak
-- the oldest version of each message this release still produces, and to block contracts.
ALTER TABLE services
    ADD COLUMN release      text,
    ADD COLUMN schema_level integer,
    ADD COLUMN message_caps jsonb NOT NULL DEFAULT '{}';
