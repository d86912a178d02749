"""A server's status from its vm_state and task_state, and `?status=` read back into them,
as Nova's state table has it."""

from nova_async.api.server_views import status, status_filter


def test_the_status_shown():
    assert status("active", None) == "ACTIVE"
    assert status("active", "rebooting_hard") == "HARD_REBOOT"
    assert status("stopped", "resize_prep") == "RESIZE"
    assert status("resized", "resize_reverting") == "REVERT_RESIZE"
    assert status("error", "rebuilding") == "REBUILD"
    assert status("paused", "migrating") == "MIGRATING"
    assert status("shelved_offloaded", None) == "SHELVED_OFFLOADED"
    assert status("nonsense", None) == "UNKNOWN"


def test_a_status_filter_names_task_states_unless_a_plain_status_is_asked_too():
    assert status_filter(["reboot"]) == (["active"], ["reboot_pending", "reboot_started", "rebooting"])
    vm_states, tasks = status_filter(["RESIZE"])
    assert vm_states == ["active", "stopped"] and "resize_prep" in tasks
    assert status_filter(["ACTIVE", "REBOOT"]) == (["active"], None)   # Nova: ACTIVE lists rebooting ones too
    assert status_filter(["SHUTOFF"]) == (["stopped"], None)
    assert status_filter(["bogus"]) == ([], [])
