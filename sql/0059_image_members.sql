-- 0059: image members (Glance's /v2/images/{id}/members). A 'shared' image is usable by its
-- owner and by each project listed here; the member project answers with its status
-- (pending, accepted, rejected), which decides whether the image shows in its lists. Any
-- member may read the image itself, whatever its answer, as in Glance.
CREATE TABLE image_members (
    image_id   uuid NOT NULL REFERENCES images (id) ON DELETE CASCADE,
    member     text NOT NULL,
    status     text NOT NULL DEFAULT 'pending',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (image_id, member),
    CHECK (status IN ('pending', 'accepted', 'rejected'))
);

CREATE INDEX image_members_member ON image_members (member);
