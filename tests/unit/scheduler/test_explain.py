"""The NoValidHost message: each stage says what it removed, in words a user can act on."""

from nova_async.scheduler.manager import explain

WANT = {"VCPU": 2, "MEMORY_MB": 8192, "DISK_GB": 20}


def test_placement_names_the_short_class():
    text = explain(WANT, 3, 0, {"VCPU": 3, "MEMORY_MB": 0, "DISK_GB": 3}, 0, [], [], placed=0, wanted=1)
    assert text == "No valid host: placement: 0 of 3 hosts have 8192 MB MEMORY_MB free"


def test_several_short_classes_fewest_first():
    text = explain(WANT, 4, 0, {"VCPU": 1, "MEMORY_MB": 0, "DISK_GB": 4}, 0, [], [], placed=0, wanted=1)
    assert text == ("No valid host: placement: 0 of 4 hosts have 8192 MB MEMORY_MB free, "
                    "1 of 4 hosts have 2 VCPU free")


def test_enough_of_each_but_not_together():
    text = explain(WANT, 2, 0, {"VCPU": 2, "MEMORY_MB": 2, "DISK_GB": 2}, 0, [], [], placed=0, wanted=1)
    assert text == ("No valid host: placement: 0 of 2 hosts have 2 VCPU, 8192 MB MEMORY_MB, "
                    "20 GB DISK_GB free together")


def test_every_stage_speaks():
    text = explain(WANT, 5, 3, {}, 1, ["ComputeFilter removed 2 (service down)"],
                   ["c: Unable to allocate inventory: VCPU 2 requested ..."], placed=1, wanted=2)
    assert text == ("No valid host: placement: 3 of 5 hosts have 2 VCPU, 8192 MB MEMORY_MB, 20 GB DISK_GB free; "
                    "1 resource provider(s) are not compute nodes; ComputeFilter removed 2 (service down); "
                    "placement refused 1 claim(s) (c: Unable to allocate inventory: VCPU 2 requested ...); "
                    "1 of 2 instances could be placed, so none were")


def test_no_hosts():
    assert explain(WANT, 0, 0, {}, 0, [], [], placed=0, wanted=1) == "No valid host: there are no compute hosts."
