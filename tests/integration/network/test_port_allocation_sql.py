"""The functions that hand out instance ports, checked against what they promise: a burst of
calls (network_allocate_ports_many) gets exactly what the same calls would get one after
another (network_allocate_ports, each in a savepoint), and a subnet's free addresses are the
lowest ones of its pools."""

from __future__ import annotations

import ipaddress
import random
import uuid

import asyncpg
import pytest

MANY = "SELECT * FROM network_allocate_ports_many($1::text[], $2::text[], $3::text[], $4::text[])"
ONE = "SELECT * FROM network_allocate_ports($1, $2, $3, $4::text::uuid[])"


async def add_network(conn, project, pools, *, cidr="10.0.0.0/24", shared=False, subnet=True):
    net = uuid.uuid4()
    await conn.execute("INSERT INTO networks (id, name, project_id, shared) VALUES ($1, $2, $3, $4)",
                       net, f"net-{str(net)[:4]}", project, shared)
    if subnet:
        await conn.execute(
            "INSERT INTO subnets (id, network_id, project_id, cidr, ip_version, allocation_pools)"
            " VALUES ($1, $2, $3, $4, $5, $6)", uuid.uuid4(), net, project, cidr,
            ipaddress.ip_network(cidr).version,
            [{"start": a, "end": b} for a, b in pools])   # the pool's jsonb codec encodes it
    return str(net)


async def take(conn, network, *addresses):
    """Addresses of `network` held by a port of nobody's instance (a user's port)."""
    sub = await conn.fetchval("SELECT id FROM subnets WHERE network_id = $1", uuid.UUID(network))
    for address in addresses:
        port = uuid.uuid4()
        await conn.execute("INSERT INTO ports (id, network_id, project_id, mac_address) VALUES ($1, $2, 'x', $3)",
                           port, uuid.UUID(network), "02:00:00:" + ":".join(f"{random.randrange(256):02x}" for _ in range(3)))
        await conn.execute("INSERT INTO ip_allocations (subnet_id, ip_address, port_id) VALUES ($1, $2, $3)",
                           sub, address, port)


def answer(rows):
    """What a call got, without the random parts (port ids and MACs): per call, its refusal or
    its NICs' networks and addresses in order."""
    got: dict[int, list] = {}
    for r in rows:
        got.setdefault(r["ord"], []).append(
            r["refusal"] if r["refusal"] else (str(r["network_id"]), str(r["ip_address"]), r["network_name"]))
    return got


async def one_by_one(conn, calls):
    rows = []
    for k, (device, host, project, wanted) in enumerate(calls, 1):
        try:
            async with conn.transaction():
                for r in await conn.fetch(ONE, device, host, project, wanted):
                    rows.append({**r, "ord": k, "refusal": None})
        except asyncpg.RaiseError as e:  # a refusal: its DETAIL says which
            rows.append({"ord": k, "refusal": e.detail})
    return rows


async def both_ways(conn, calls):
    """The answers and the resulting ports of `calls`, made together and one by one, each from
    the same state (a transaction rolled back); and how many calls the burst answered alone
    and did not refuse."""
    results = []
    await conn.execute("SET track_functions = 'pl'")
    for how in ("together", "one by one"):
        tx = conn.transaction()
        await tx.start()
        try:
            if how == "together":
                rows = await conn.fetch(MANY, *[list(c) for c in zip(*calls)])
                alone = await conn.fetchval("SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions"
                                            " WHERE funcname = 'network_allocate_ports'")
            else:
                rows = await one_by_one(conn, calls)
            ports = await conn.fetch(
                "SELECT p.device_id, p.device_index, p.binding_host, p.network_id, a.ip_address, p.mac_address"
                "  FROM ports p LEFT JOIN ip_allocations a ON a.port_id = p.id WHERE p.device_id <> ''"
                " ORDER BY p.device_id, p.device_index")
            marks = await conn.fetch("SELECT id, allocated_below FROM subnets ORDER BY id")
            results.append((answer(rows), [tuple(p)[:5] for p in ports], marks,
                            len({p["mac_address"] for p in ports}) == len(ports)))
        finally:
            await tx.rollback()
    return results, alone


def uuids_text(*networks):
    return "{" + ",".join(networks) + "}"


async def test_a_burst_gets_what_the_same_calls_one_by_one_would_get(pool):
    async with pool.acquire() as conn:
        # `holes`: two pools, an address taken above the free ones and a gap released below
        holes = await add_network(conn, "p", [("10.0.0.10", "10.0.0.14"), ("10.0.0.100", "10.0.0.140")])
        await take(conn, holes, "10.0.0.10", "10.0.0.11", "10.0.0.13", "10.0.0.14", "10.0.0.101")
        other = await add_network(conn, "p", [("10.0.1.2", "10.0.1.250")], cidr="10.0.1.0/24")
        shared = await add_network(conn, "r", [("10.0.3.2", "10.0.3.250")], cidr="10.0.3.0/24", shared=True)
        theirs = await add_network(conn, "r", [("10.0.4.2", "10.0.4.250")], cidr="10.0.4.0/24")
        bare = await add_network(conn, "p", [], subnet=False)
        # a retried request: this device has its port already, on another host
        retried = str(uuid.uuid4())
        await conn.fetch(ONE, retried, "host-0", "p", uuids_text(other))
        calls = [
            (str(uuid.uuid4()), "h1", "p", uuids_text(holes)),
            (str(uuid.uuid4()), "h1", "p", uuids_text(other, holes, holes)),   # three NICs
            (str(uuid.uuid4()), "h2", "z", None),                              # the only one: shared
            (retried, "h2", "p", uuids_text(other)),
            (str(uuid.uuid4()), "h1", "p", uuids_text(holes, theirs)),         # not theirs to use
            (str(uuid.uuid4()), "h1", "p", None),                              # several: ambiguous
            (str(uuid.uuid4()), "h1", "p", uuids_text(shared, holes)),
            (str(uuid.uuid4()), "h1", "p", uuids_text(holes, bare)),           # no subnet
            (str(uuid.uuid4()), "h1", "p", uuids_text(str(uuid.uuid4()))),    # no such network
            (str(uuid.uuid4()), "h3", "p", uuids_text(holes)),
        ]
        (together, one_by_one_), alone = await both_ways(conn, calls)
    assert together == one_by_one_
    assert alone == 1   # the retried device (a refused call raises, and is not counted)
    got, ports, _, macs_unique = together
    assert macs_unique
    assert got[1] == [(holes, "10.0.0.12", got[1][0][2])]
    assert [a for _, a, _ in got[2]] == ["10.0.1.3", "10.0.0.100", "10.0.0.102"]
    assert [a for _, a, _ in got[4]] == ["10.0.1.2"] and (retried, 0, "h2") in [p[:3] for p in ports]
    assert {k: got[k] for k in (5, 6, 8, 9)} == {5: ["network_not_found"], 6: ["network_ambiguous"],
                                                  8: ["network_requires_subnet"], 9: ["network_not_found"]}
    assert got[3] == [(shared, "10.0.3.2", got[3][0][2])]
    assert [a for _, a, _ in got[7]] == ["10.0.3.3", "10.0.0.103"]
    assert [a for _, a, _ in got[10]] == ["10.0.0.104"]


async def test_a_subnet_running_out_in_a_burst_refuses_the_calls_it_would_have_refused_in_turn(pool):
    async with pool.acquire() as conn:
        big = await add_network(conn, "p", [("10.0.0.2", "10.0.0.250")])
        small = await add_network(conn, "p", [("10.0.1.2", "10.0.1.6")], cidr="10.0.1.0/24")  # 5 addresses
        calls = [(str(uuid.uuid4()), "h", "p", uuids_text(big, small)) for _ in range(4)]
        calls += [(str(uuid.uuid4()), "h", "p", uuids_text(small)) for _ in range(2)]
        calls += [(str(uuid.uuid4()), "h", "p", uuids_text(big)) for _ in range(2)]
        (together, one_by_one_), alone = await both_ways(conn, calls)
    assert together == one_by_one_ and alone == len(calls) - 1   # all but the refused
    got = together[0]
    assert [got[k] for k in (6, 7, 8)] == [["ip_exhausted"], [(big, "10.0.0.6", got[7][0][2])],
                                           [(big, "10.0.0.7", got[8][0][2])]]


async def test_a_device_named_twice_in_a_burst_gets_one_set_of_ports(pool):
    async with pool.acquire() as conn:
        net = await add_network(conn, "p", [("10.0.0.2", "10.0.0.250")])
        twice = str(uuid.uuid4())
        calls = [(str(uuid.uuid4()), "h1", "p", None), (twice, "h1", "p", None), (twice, "h2", "p", None),
                 (str(uuid.uuid4()), "h1", "p", None)]
        (together, one_by_one_), alone = await both_ways(conn, calls)
    assert together == one_by_one_ and alone == 1
    got, ports, _, _ = together
    assert got[2] == got[3] == [(net, "10.0.0.3", got[2][0][2])]
    assert [p[:3] for p in ports if p[0] == twice] == [(twice, 0, "h2")]


@pytest.mark.parametrize("seed", range(6))
async def test_free_addresses_are_the_lowest_of_the_pools(pool, seed):
    rng = random.Random(seed)
    pools = [("10.0.0.4", "10.0.0.20"), ("10.0.0.40", "10.0.0.41"), ("10.0.0.60", "10.0.0.90")]
    in_pools = [ipaddress.ip_address(a) + i for a, b in pools
                for i in range(int(ipaddress.ip_address(b)) - int(ipaddress.ip_address(a)) + 1)]
    taken = sorted(rng.sample(in_pools, rng.randrange(len(in_pools))))
    free = [a for a in in_pools if a not in set(taken)]
    # a mark anywhere the rule allows it: no free pool address below it
    mark = rng.choice([None, ipaddress.ip_address("10.0.0.1"), *(a for a in in_pools if not free or a <= free[0])])
    async with pool.acquire() as conn:
        net = await add_network(conn, "p", pools)
        await take(conn, net, *map(str, taken))
        sub = await conn.fetchval("SELECT id FROM subnets WHERE network_id = $1", uuid.UUID(net))
        await conn.execute("UPDATE subnets SET allocated_below = $2 WHERE id = $1", sub, mark and str(mark))
        for wanted in (0, 1, 3, len(free), len(free) + 2):
            got = await conn.fetchval("SELECT subnet_free_addresses($1, $2)", sub, wanted)
            assert [ipaddress.ip_address(a) for a in got] == free[:wanted], (mark, wanted)


async def test_a_pool_that_ends_at_the_last_address_there_is(pool):
    last = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
    async with pool.acquire() as conn:
        net = await add_network(conn, "p", [("ffff::fffd", "ffff::ffff"), ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", last)],
                                cidr="ffff::/16")
        sub = await conn.fetchval("SELECT id FROM subnets WHERE network_id = $1", uuid.UUID(net))
        got = await conn.fetchval("SELECT subnet_free_addresses($1, 9)", sub)
        assert [str(a) for a in got] == ["ffff::fffd", "ffff::fffe", "ffff::ffff",
                                         "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", last]
        await take(conn, net, last)
        got = await conn.fetchval("SELECT subnet_free_addresses($1, 9)", sub)
        assert [str(a) for a in got][3:] == ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"]
        await take(conn, net, "ffff::fffd", "ffff::fffe", "ffff::ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe")
        assert await conn.fetchval("SELECT subnet_free_addresses($1, 2)", sub) == []


async def test_a_mac_address_already_taken_is_drawn_again(pool):
    """The MACs are random: with the session's random() seeded, the first draw is known, so a
    port given that MAC beforehand makes the burst's first port draw again."""
    draw = ("SELECT ('fa:16:3e:' || lpad(to_hex(floor(random() * 256)::int), 2, '0') || ':'"
            " || lpad(to_hex(floor(random() * 256)::int), 2, '0') || ':'"
            " || lpad(to_hex(floor(random() * 256)::int), 2, '0'))::macaddr")
    async with pool.acquire() as conn:
        net = await add_network(conn, "p", [("10.0.0.2", "10.0.0.250")])
        await conn.execute("SELECT setseed(0.25)")
        taken = await conn.fetchval(draw)
        await conn.execute("INSERT INTO ports (id, network_id, project_id, mac_address) VALUES ($1, $2, 'x', $3)",
                           uuid.uuid4(), uuid.UUID(net), taken)
        await conn.execute("SELECT setseed(0.25)")
        devices = [str(uuid.uuid4()) for _ in range(3)]
        rows = await conn.fetch(MANY, devices, ["h"] * 3, ["p"] * 3, [None] * 3)
        ports = await conn.fetch("SELECT device_id, mac_address FROM ports WHERE device_id = ANY($1)", devices)
    assert sorted(str(r["ip_address"]) for r in rows) == ["10.0.0.2", "10.0.0.3", "10.0.0.4"]
    assert len({p["mac_address"] for p in ports}) == 3 and taken not in {p["mac_address"] for p in ports}
    assert {r["mac_address"] for r in rows} == {p["mac_address"] for p in ports}
