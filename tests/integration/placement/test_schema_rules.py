"""The rules the placement tables keep whoever writes to them (sql/0036): an inventory's
definition is checked, an inventory in use cannot go, an allocation needs its inventory, a
consumer takes its allocations with it, and the texts derived from an inventory follow it.
Written with plain SQL, as a careless writer would, not through placement's own code."""

from __future__ import annotations

import json
import uuid

import asyncpg
import pytest

from nova_async.db.queries import queries
from nova_async.placement import allocations, providers

VCPU = providers.Inventory(total=8)


@pytest.fixture
async def provider(pool) -> tuple[str, int]:
    rp = str(uuid.uuid4())
    await providers.ensure_provider(pool, rp, f"rules-{rp[:8]}", {"VCPU": VCPU})
    return rp, await pool.fetchval("SELECT id FROM resource_providers WHERE uuid = $1", rp)


async def claim(pool, rp: str, vcpu: int) -> str:
    consumer = str(uuid.uuid4())
    await allocations.replace_allocations(pool, consumer, {rp: {"VCPU": vcpu}}, project_id="p", user_id="u")
    return consumer


@pytest.mark.parametrize(("column", "value", "constraint"), [
    ("total", 0, "inventories_total_check"),
    ("reserved", -1, "inventories_reserved_check"),
    ("min_unit", 0, "inventories_min_unit_check"),
    ("max_unit", 0, "inventories_max_unit_check"),
    ("step_size", 0, "inventories_step_size_check"),
    ("allocation_ratio", 0, "inventories_allocation_ratio_check"),
])
async def test_an_inventory_definition_is_checked(pool, provider, column, value, constraint):
    _, pid = provider
    with pytest.raises(asyncpg.CheckViolationError) as caught:
        await pool.execute(f"UPDATE inventories SET {column} = $2 WHERE resource_provider_id = $1", pid, value)
    assert caught.value.constraint_name == constraint


async def test_an_inventory_class_name_is_checked(pool, provider):
    _, pid = provider
    with pytest.raises(asyncpg.CheckViolationError) as caught:
        await pool.execute("INSERT INTO inventories (resource_provider_id, resource_class, total, max_unit) "
                           "VALUES ($1, 'not a class', 1, 1)", pid)
    assert caught.value.constraint_name == "inventories_resource_class_check"


async def test_a_provider_name_is_checked(pool, provider):
    _, pid = provider
    with pytest.raises(asyncpg.CheckViolationError) as caught:
        await pool.execute("UPDATE resource_providers SET name = '' WHERE id = $1", pid)
    assert caught.value.constraint_name == "resource_providers_name_check"


async def test_an_inventory_in_use_cannot_be_deleted(pool, provider):
    rp, pid = provider
    consumer = await claim(pool, rp, 2)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await pool.execute("DELETE FROM inventories WHERE resource_provider_id = $1", pid)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await pool.execute("DELETE FROM resource_providers WHERE id = $1", pid)
    assert await allocations.delete_allocations(pool, consumer)
    await pool.execute("DELETE FROM resource_providers WHERE id = $1", pid)  # now it may go


async def test_an_allocation_needs_its_inventory(pool, provider):
    rp, pid = provider
    consumer = await claim(pool, rp, 1)
    cid = await pool.fetchval("SELECT id FROM consumers WHERE uuid = $1", consumer)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await pool.execute("INSERT INTO allocations (consumer_id, resource_provider_id, resource_class, used) "
                           "VALUES ($1, $2, 'MEMORY_MB', 1)", cid, pid)
    assert await pool.fetchval("SELECT sum(used) FROM allocations WHERE consumer_id = $1", cid) == 1


async def test_a_deleted_consumer_takes_its_allocations_and_gives_back_the_usage(pool, provider):
    rp, pid = provider
    consumer = await claim(pool, rp, 3)
    await pool.execute("DELETE FROM consumers WHERE uuid = $1", consumer)
    assert await pool.fetchval("SELECT count(*) FROM allocations WHERE resource_provider_id = $1", pid) == 0
    assert await pool.fetchval("SELECT used FROM inventories WHERE resource_provider_id = $1", pid) == 0


async def test_the_texts_follow_claims_and_definitions(pool, provider):
    rp, pid = provider

    async def texts() -> tuple[dict, dict]:
        row = await pool.fetchrow("SELECT i.capacity, i.summary, s.flat_entry FROM inventories i "
                                  "JOIN provider_summaries s ON s.provider_id = i.resource_provider_id "
                                  "WHERE i.resource_provider_id = $1", pid)
        inventory = json.loads("{" + row["summary"] + "}")["VCPU"]
        assert inventory["capacity"] == row["capacity"]
        return inventory, json.loads("{" + row["flat_entry"] + "}")[rp]

    consumer = await claim(pool, rp, 3)
    inventory, entry = await texts()
    assert inventory == {"capacity": 8, "used": 3} == entry["resources"]["VCPU"]
    await pool.execute("UPDATE inventories SET total = 20, reserved = 4, allocation_ratio = 2 "
                       "WHERE resource_provider_id = $1", pid)
    inventory, entry = await texts()
    assert inventory == {"capacity": 32, "used": 3} == entry["resources"]["VCPU"]
    assert await allocations.delete_allocations(pool, consumer)
    inventory, entry = await texts()
    assert inventory == {"capacity": 32, "used": 0} == entry["resources"]["VCPU"]
    assert entry["root_provider_uuid"] == rp and entry["traits"] == []


async def test_an_updated_allocation_moves_the_usage(pool, provider):
    rp, pid = provider
    await claim(pool, rp, 2)
    await pool.execute("UPDATE allocations SET used = 5 WHERE resource_provider_id = $1", pid)
    assert await pool.fetchval("SELECT used FROM inventories WHERE resource_provider_id = $1", pid) == 5
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await pool.execute("UPDATE allocations SET resource_class = 'MEMORY_MB' WHERE resource_provider_id = $1", pid)


async def test_a_claim_counts_its_usage_once_and_leaves_the_trigger_to_other_writers(pool, provider):
    """A new consumer's claim updates `used` itself and tells the usage trigger so for that one
    statement (sql/0040); an allocation written by plain SQL later in the same transaction is
    counted by the trigger as ever."""
    rp, pid = provider
    claim_sql = queries("placement").write_allocations
    async with pool.acquire() as conn, conn.transaction():
        await conn.fetch(claim_sql, [uuid.uuid4()], ["p"], ["u"], [None], [True], [None], [1], [rp],
                         ["VCPU"], [2])
        assert await conn.fetchval("SELECT used FROM inventories WHERE resource_provider_id = $1", pid) == 2
        other = await conn.fetchval("INSERT INTO consumers (uuid, project_id, user_id) "
                                    "VALUES ($1, 'p', 'u') RETURNING id", uuid.uuid4())
        await conn.execute("INSERT INTO allocations (consumer_id, resource_provider_id, resource_class, used) "
                           "VALUES ($1, $2, 'VCPU', 3)", other, pid)
        assert await conn.fetchval("SELECT used FROM inventories WHERE resource_provider_id = $1", pid) == 5
    assert await pool.fetchval("SELECT used FROM inventories WHERE resource_provider_id = $1", pid) == 5


async def test_a_refused_claim_changes_nothing(pool, provider):
    rp, pid = provider
    await claim(pool, rp, 6)
    before = await pool.fetchrow("SELECT r.generation, s.flat_entry FROM resource_providers r "
                                 "JOIN provider_summaries s ON s.provider_id = r.id WHERE r.id = $1", pid)
    with pytest.raises(allocations.ClaimRefused, match="VCPU 3 requested .* but only 2 of 8 is free"):
        await claim(pool, rp, 3)
    after = await pool.fetchrow("SELECT r.generation, s.flat_entry FROM resource_providers r "
                                "JOIN provider_summaries s ON s.provider_id = r.id WHERE r.id = $1", pid)
    assert after == before
    assert await pool.fetchval("SELECT used FROM inventories WHERE resource_provider_id = $1", pid) == 6
    assert await pool.fetchval("SELECT count(*) FROM consumers c JOIN allocations a ON a.consumer_id = c.id "
                               "WHERE a.resource_provider_id = $1", pid) == 1
