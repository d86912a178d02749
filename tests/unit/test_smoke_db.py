async def test_migrations_apply(pool):
    names = {r["table_name"] for r in await pool.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")}
    assert {"instances", "flavors", "service_keys"} <= names
