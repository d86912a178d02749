"""When a guest gets a config drive: as Nova decides it (virt/configdrive.required_by)."""

import pytest

from nova_async.compute.build import needs_config_drive


@pytest.mark.parametrize("requested, properties, forced, drive", [
    ("", {}, False, False),                                     # a cloud image: the metadata service
    ("True", {}, False, True),                                  # asked for (config_drive: true)
    ("", {"img_config_drive": "mandatory"}, False, True),       # the demo guest's images
    ("", {"img_config_drive": "optional"}, False, False),
    ("", {}, True, True),                                       # [compute] force_config_drive
    (None, {"kernel_id": "k"}, False, False),
])
def test_a_drive_is_made_when_asked_for_mandatory_or_forced(requested, properties, forced, drive):
    assert needs_config_drive(requested, properties, forced) is drive
