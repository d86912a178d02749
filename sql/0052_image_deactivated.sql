-- An admin may deactivate an active image (Glance's POST /v2/images/{id}/actions/deactivate):
-- it keeps its data, but only admins may download it until it is reactivated.
ALTER TABLE images
    DROP CONSTRAINT images_status_check,
    ADD CONSTRAINT images_status_check CHECK (status IN ('queued', 'saving', 'active', 'deactivated'));
