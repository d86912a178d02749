import shutil

import pytest

from nova_async.common import errors, process
from nova_async.compute import plumbing
from nova_async.compute.plumbing import BridgeError, Bridges


@pytest.fixture
def ip(monkeypatch, tmp_path):
    """A fake `ip` over a fake /sys/class/net: records argv, 'creates' bridges."""
    calls = []
    fail = {}

    async def run(*argv, timeout):
        calls.append(argv)
        if argv[1:3] == ("link", "add"):
            if "add" in fail:
                return process.Completed(2, fail["add"])
            (tmp_path / argv[4] / "bridge").mkdir(parents=True)
            (tmp_path / argv[4] / "brif").mkdir()
        if argv[1:3] == ("link", "del"):
            shutil.rmtree(tmp_path / argv[4])
        if argv[1:3] == ("link", "set") and "up" in fail:
            return process.Completed(1, fail["up"])
        return process.Completed(0, "")

    monkeypatch.setattr(plumbing.process, "run", run)
    return Bridges(sys_net=tmp_path), calls, fail, tmp_path


async def test_a_missing_bridge_is_created_and_brought_up_once(ip):
    bridges, calls, _, _ = ip
    await bridges.ensure("brq0123456789a")
    await bridges.ensure("brq0123456789a")
    assert calls == [("ip", "link", "add", "name", "brq0123456789a", "type", "bridge"),
                     ("ip", "link", "set", "dev", "brq0123456789a", "up"),
                     ("ip", "link", "set", "dev", "brq0123456789a", "up")]


async def test_failures_say_which_bridge_and_why(ip):
    bridges, _, fail, sys_net = ip
    fail["add"] = "RTNETLINK answers: Operation not permitted"
    with pytest.raises(BridgeError, match="brqa.*Operation not permitted"):
        await bridges.ensure("brqa")
    (sys_net / "eth9").mkdir()
    with pytest.raises(BridgeError, match="not a bridge"):
        await bridges.ensure("eth9")
    del fail["add"]
    fail["up"] = "Cannot find device"
    with pytest.raises(BridgeError, match="Cannot bring bridge brqb up"):
        await bridges.ensure("brqb")


@pytest.mark.parametrize("name", ["", "br q", "br;rm -rf /", "-brq", "brq0123456789abc", "br/0", None])
async def test_names_that_are_not_interface_names_never_reach_ip(ip, name):
    bridges, calls, _, _ = ip
    with pytest.raises(errors.InvalidInput):
        await bridges.ensure(name)
    assert calls == []


async def test_a_bridge_goes_only_when_nothing_is_plugged_in_and_no_instance_needs_it(ip):
    bridges, calls, _, sys_net = ip
    await bridges.ensure("brq1")
    needed = True

    async def in_use():
        return needed

    (sys_net / "brq1" / "brif" / "tap1").mkdir()        # a guest's tap is still plugged in
    assert not await bridges.remove_unused("brq1", in_use)
    (sys_net / "brq1" / "brif" / "tap1").rmdir()
    assert not await bridges.remove_unused("brq1", in_use)  # another instance here uses it
    needed = False
    assert await bridges.remove_unused("brq1", in_use)
    assert calls[-1] == ("ip", "link", "del", "dev", "brq1") and not bridges.exists("brq1")
    assert not await bridges.remove_unused("brq1", in_use)  # already gone
