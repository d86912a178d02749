"""The reconciler with parts that record what they are asked: passes at start, on a change in
the database (NOTIFY), coalesced while a pass runs, retried after a failing part,
settled() answering after a pass that started after it was asked, and serving() after the
pass that read what it waits for."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

from nova_async.dataplane.desired import Desired
from nova_async.dataplane.reconcile import Reconciler

BOUND = 30  # seconds: a safety bound on waits, never an assertion on time


class Recorder:
    def __init__(self, name: str = "recorder", fail_times: int = 0) -> None:
        self.name = name
        self.seen: list[Desired] = []
        self.fail_times = fail_times
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Event()
        self.changed = asyncio.Event()
        self.closed = False

    async def apply(self, want: Desired) -> None:
        self.seen.append(want)
        self.changed.set()
        self.entered.set()
        await self.gate.wait()
        if self.fail_times > 0:
            self.fail_times -= 1
            raise RuntimeError("the host said no")

    async def close(self) -> None:
        self.closed = True

    async def until(self, test) -> None:
        async with asyncio.timeout(BOUND):
            while not test():
                self.changed.clear()
                await self.changed.wait()


@contextlib.asynccontextmanager
async def reconciling(pool, *parts, interval: float = 3600.0):
    rec = Reconciler(pool, list(parts), interval=interval)
    stopping = asyncio.Event()
    task = asyncio.create_task(rec.run(stopping), name="test:reconciler")
    try:
        async with asyncio.timeout(BOUND):
            await rec.listening.wait()
            await rec.settled()
        yield rec
    finally:
        stopping.set()
        await task


async def add_network(pool) -> str:
    network_id = str(uuid.uuid4())
    await pool.execute("INSERT INTO networks (id, project_id) VALUES ($1, 'p')", network_id)
    return network_id


async def test_a_change_in_the_database_makes_a_pass_that_sees_it(pool):
    part = Recorder()
    async with reconciling(pool, part) as rec:
        network_id = await add_network(pool)
        await part.until(lambda: network_id in part.seen[-1].networks)
    assert part.closed and rec.last.clean


async def test_requests_during_a_pass_make_one_more_pass(pool):
    part = Recorder()
    async with reconciling(pool, part) as rec:
        part.gate.clear()
        part.entered.clear()
        rec.poke()
        await part.entered.wait()
        running = rec.started
        waiting = asyncio.create_task(rec.settled(ask=False))   # the pass after this one
        for _ in range(5):
            rec.poke()
        part.gate.set()
        outcome = await waiting
        assert outcome.generation == running + 1
        # Five requests, one pass: none is left to start.
        assert rec.started == running + 1 and not rec._wanted.is_set()


async def test_serving_waits_for_the_pass_whose_read_saw_it_and_asks_for_no_other(pool):
    """What a real guest's build waits for (dataplane role, PortsReady): the pass its own change
    set off, when that pass read it; the last pass, when it did; else a new one."""
    part = Recorder()
    async with reconciling(pool, part) as rec:
        part.gate.clear()
        part.entered.clear()
        network_id = await add_network(pool)   # its NOTIFY starts a pass, held inside the part
        async with asyncio.timeout(BOUND):
            await part.entered.wait()
        assert network_id in part.seen[-1].networks
        under_way = rec.started
        waiting = asyncio.create_task(rec.serving(lambda want: network_id in want.networks))
        await asyncio.sleep(0.05)
        assert not waiting.done()   # that pass has not finished
        part.gate.set()
        async with asyncio.timeout(BOUND):
            assert (await waiting).generation == under_way
        assert rec.started == under_way and not rec._wanted.is_set()   # no pass asked for
        # The last pass read it: answered at once. Not read by any: the next pass.
        assert (await rec.serving(lambda want: network_id in want.networks)).generation == under_way
        async with asyncio.timeout(BOUND):
            assert (await rec.serving(lambda want: False)).generation == under_way + 1


async def test_a_failing_part_does_not_stop_the_others_and_is_retried(pool):
    bad, good = Recorder("bad", fail_times=1), Recorder("good")
    async with reconciling(pool, bad, good) as rec:
        # The pass at start: bad failed, good still ran; a retry came on its own and was clean.
        await bad.until(lambda: len(bad.seen) >= 2)
        assert len(good.seen) >= 1
        outcome = await rec.settled()
        assert outcome.clean


async def test_settled_reports_what_failed(pool):
    bad = Recorder("bad", fail_times=100)
    async with reconciling(pool, bad, interval=3600.0) as rec:
        outcome = await rec.settled()
        assert not outcome.clean and "the host said no" in outcome.failures["bad"]
        before = rec.started
        after = await rec.settled()
        assert after.generation > before


async def test_a_desired_state_read_names_everything(pool):
    from nova_async.dataplane import desired

    net, sub, port = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    sg, rule, router, fip_port, fip = (str(uuid.uuid4()) for _ in range(5))
    await pool.execute("INSERT INTO networks (id, project_id, mtu, external) VALUES ($1, 'p', 1450, true)", net)
    await pool.execute("INSERT INTO subnets (id, network_id, project_id, cidr, ip_version, gateway_ip, "
                       "dns_nameservers, host_routes) VALUES ($1, $2, 'p', '10.5.0.0/24', 4, '10.5.0.1', "
                       "'[\"10.5.0.53\"]', '[{\"destination\": \"10.9.0.0/16\", \"nexthop\": \"10.5.0.9\"}]')",
                       sub, net)
    await pool.execute("INSERT INTO ports (id, network_id, project_id, mac_address, device_owner, device_id, "
                       "allowed_address_pairs, binding_host) VALUES ($1, $2, 'p', 'FA:16:3E:00:00:01', "
                       "'compute:nova', 'i1', '[{\"ip_address\": \"10.5.0.100\"}]', 'h1')", port, net)
    await pool.execute("INSERT INTO ip_allocations (subnet_id, ip_address, port_id) VALUES ($1, '10.5.0.5', $2)",
                       sub, port)
    await pool.execute("INSERT INTO security_groups (id, project_id, stateful) VALUES ($1, 'p', false)", sg)
    await pool.execute("INSERT INTO security_group_rules (id, security_group_id, project_id, direction, ethertype, "
                       "protocol, port_range_min, port_range_max, remote_ip_prefix) VALUES "
                       "($1, $2, 'p', 'ingress', 'IPv4', 'tcp', 22, 22, '0.0.0.0/0')", rule, sg)
    await pool.execute("INSERT INTO port_security_groups (port_id, security_group_id) VALUES ($1, $2)", port, sg)
    await pool.execute("INSERT INTO routers (id, project_id, gateway_network_id, gateway_port_id) "
                       "VALUES ($1, 'p', $2, $3)", router, net, port)
    await pool.execute("INSERT INTO ports (id, network_id, project_id, mac_address, device_owner, device_id) "
                       "VALUES ($1, $2, 'p', 'fa:16:3e:00:00:02', 'network:floatingip', $3)", fip_port, net, fip)
    await pool.execute("INSERT INTO floatingips (id, project_id, floating_network_id, floating_port_id, "
                       "floating_ip_address, port_id, fixed_ip_address, router_id) VALUES "
                       "($1, 'p', $2, $3, '10.5.0.77', $4, '10.5.0.5', $5)", fip, net, fip_port, port, router)

    want = await desired.read(pool)
    n = want.networks[net]
    assert (n.mtu, n.external, n.network_type, n.bridge) == (1450, True, "local", "brq" + net[:11])
    s = n.subnets[0]
    assert (str(s.cidr), str(s.gateway_ip), s.enable_dhcp, s.dns_nameservers, s.host_routes) == \
        ("10.5.0.0/24", "10.5.0.1", True, ("10.5.0.53",), (("10.9.0.0/16", "10.5.0.9"),))
    p = want.ports[port]
    assert (p.mac_address, p.device_owner, p.binding_host, p.security_group_ids, p.port_security_enabled,
            p.allowed_address_pairs) == ("fa:16:3e:00:00:01", "compute:nova", "h1", (sg,), True,
                                         (("10.5.0.100", None),))
    assert [(ip.subnet_id, str(ip.address)) for ip in p.fixed_ips] == [(sub, "10.5.0.5")]
    g = want.security_groups[sg]
    assert not g.stateful and [(r.id, r.direction, r.protocol, r.port_range_min, str(r.remote_ip_prefix))
                               for r in g.rules] == [(rule, "ingress", "tcp", 22, "0.0.0.0/0")]
    r = want.routers[router]
    assert r.gateway_port == p and r.interfaces == () and r.enable_snat
    f = want.floating_ips[fip]
    assert (str(f.address), f.network_id, f.router_id, str(f.fixed_ip), f.port_id) == \
        ("10.5.0.77", net, router, "10.5.0.5", port)


async def test_changes_are_heard_again_after_the_listening_connection_is_lost(pool):
    part = Recorder()
    async with reconciling(pool, part, interval=3600.0) as rec:
        ended = await pool.fetchval("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                    "WHERE datname = current_database() AND query LIKE 'LISTEN%'")
        assert ended == 1
        # Made while nobody may be listening: the pass made once listening again sees it.
        network_id = await add_network(pool)
        await part.until(lambda: network_id in part.seen[-1].networks)
        async with asyncio.timeout(BOUND):
            await rec.listening.wait()
        later = await add_network(pool)
        await part.until(lambda: later in part.seen[-1].networks)
