-- Who locked an instance ('owner' or 'admin': a member cannot unlock an admin's lock) and why
-- (2.73+).
ALTER TABLE instances ADD COLUMN locked_by text CHECK (locked_by IN ('owner', 'admin')),
                      ADD COLUMN locked_reason text;
