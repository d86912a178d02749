-- 0055: quota classes. An admin's limits for a quota class (`os-quota-class-sets`); the
-- class "default" applies to every project without a limit of its own for a resource, in
-- place of the [quota] settings. Other classes are kept and shown, and apply to nobody, as
-- in Nova.
CREATE TABLE quota_class_limits (
    class_name  text NOT NULL,
    resource    text NOT NULL,
    hard_limit  integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz,
    PRIMARY KEY (class_name, resource)
);
