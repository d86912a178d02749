-- Who reserved an attachment: compute (its API, for a server's volume, over the bus) or a
-- user of the volume API (`POST /attachments`, Cinder's new-style flow by hand). Only compute's
-- reservations that no block device mapping took up are cleaned away: one made through the
-- volume API stays reserved until its maker completes or deletes it, as in Cinder.
-- Rows from before were all compute's (no one else reserved without a connector); new rows
-- must say.
ALTER TABLE volume_attachments
    ADD COLUMN made_by text NOT NULL DEFAULT 'compute' CHECK (made_by IN ('compute', 'volume-api'));
ALTER TABLE volume_attachments ALTER COLUMN made_by DROP DEFAULT;
