-- A server's OS-DCF:diskConfig: AUTO (true) or MANUAL (false), as its create, update or
-- rebuild request set it (Nova's instances.auto_disk_config). It is shown, not acted on:
-- our guests' root disks are the image's size grown to the flavor's either way.
ALTER TABLE instances ADD COLUMN auto_disk_config boolean NOT NULL DEFAULT false;
