"""PostgreSQL access: the pool, named queries from `sql/queries/*.sql`, migrations, and the
private cluster nova-async runs when no DSN is given."""
