-- Custom resource classes (CUSTOM_*). The standard ones come from the os-resource-classes
-- package and are not stored; traits (standard and custom) live in `traits` (0004), the
-- standard ones synced from os-traits when placement starts.
CREATE TABLE resource_classes (
    id   serial PRIMARY KEY,
    name text NOT NULL UNIQUE CHECK (name ~ '^CUSTOM_[A-Z0-9_]{1,248}$')
);
