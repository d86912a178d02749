"""Weighers: spread by default, pack with negative multipliers, ties keep placement's order."""

from nova_async.config import SchedulerSettings
from nova_async.scheduler import weighers
from nova_async.scheduler.host_state import HostState


def host(name, ram=4096, vcpu=8, disk=100, used=None) -> HostState:
    return HostState(uuid=name, host=name, node=name,
                     capacity={"MEMORY_MB": ram, "VCPU": vcpu, "DISK_GB": disk}, used=used or {})


def names(hosts):
    return [h.host for h in hosts]


def test_spreads_to_the_emptiest_host():
    ws = weighers.from_settings(SchedulerSettings())
    hosts = [host("busy", used={"MEMORY_MB": 3000, "VCPU": 6}), host("idle"), host("half", used={"MEMORY_MB": 2048})]
    assert names(weighers.order(ws, hosts)) == ["idle", "half", "busy"]


def test_negative_multiplier_packs():
    ws = weighers.from_settings(SchedulerSettings(ram_weight_multiplier=-1.0, cpu_weight_multiplier=0.0,
                                                  disk_weight_multiplier=0.0, io_ops_weight_multiplier=0.0,
                                                  build_failure_weight_multiplier=0.0))
    assert [w.name for w in ws] == ["RAMWeigher"]
    hosts = [host("idle"), host("busy", used={"MEMORY_MB": 3000})]
    assert names(weighers.order(ws, hosts)) == ["busy", "idle"]


def test_multipliers_balance_the_resources():
    # one host has more free RAM, the other more free VCPU: the bigger multiplier decides
    hosts = [host("ram-rich", ram=8192, vcpu=4), host("cpu-rich", ram=4096, vcpu=16)]
    ram_first = weighers.from_settings(SchedulerSettings(ram_weight_multiplier=2.0, disk_weight_multiplier=0.0))
    cpu_first = weighers.from_settings(SchedulerSettings(cpu_weight_multiplier=2.0, disk_weight_multiplier=0.0))
    assert names(weighers.order(ram_first, hosts)) == ["ram-rich", "cpu-rich"]
    assert names(weighers.order(cpu_first, hosts)) == ["cpu-rich", "ram-rich"]


def test_ties_keep_the_given_order():
    ws = weighers.from_settings(SchedulerSettings())
    hosts = [host("a"), host("b"), host("c")]
    assert names(weighers.order(ws, hosts)) == ["a", "b", "c"]
    assert names(weighers.order(ws, [])) == [] and names(weighers.order(ws, hosts[:1])) == ["a"]


def test_a_host_building_less_wins_and_failing_builds_sink_a_host():
    ws = weighers.from_settings(SchedulerSettings())
    busy, calm = host("busy"), host("calm")
    busy.building, calm.building = 5, 0
    assert names(weighers.order(ws, [busy, calm])) == ["calm", "busy"]
    failing, roomy = host("failing", ram=65536), host("small", ram=2048)
    failing.failed_builds = 1
    assert names(weighers.order(ws, [failing, roomy])) == ["small", "failing"]
