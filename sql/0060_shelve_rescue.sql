-- 0060: shelve and rescue. A shelved server keeps the id of the image its root disk was
-- written into (the one unshelve boots from, then deletes), when and where it was shelved
-- (Nova keeps these three in system_metadata as shelved_image_id/_at/_host); a server being
-- rescued keeps the image its rescue disk is made from, so a restart can finish the rescue.
ALTER TABLE instances ADD COLUMN shelved_image_id text;
ALTER TABLE instances ADD COLUMN shelved_at timestamptz;
ALTER TABLE instances ADD COLUMN shelved_host text;
ALTER TABLE instances ADD COLUMN rescue_image_ref text;
