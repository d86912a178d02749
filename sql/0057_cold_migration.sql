-- 0057: cold migration (the `migrate` server action): a migration of type 'migration' moves
-- a server with its flavor unchanged to another host, the one its admin named
-- (requested_dest, from microversion 2.56) or one the scheduler picks.
ALTER TABLE migrations ADD COLUMN requested_dest text;
