"""Glance v2.1 JSON patches applied to an image document, without a database."""

from __future__ import annotations

import pytest

from nova_async.common import errors
from nova_async.image.patch import apply

DOC = {"name": "cirros", "visibility": "shared", "min_disk": 0, "min_ram": 0, "protected": False,
       "os_hidden": False, "owner": "p", "tags": [], "disk_format": "qcow2", "container_format": "bare",
       "os_distro": "cirros"}


def test_add_replace_remove():
    out = apply(DOC, [{"op": "replace", "path": "/name", "value": "new"},
                      {"op": "add", "path": "/hw_qemu_guest_agent", "value": "yes"},
                      {"op": "add", "path": "/os_distro", "value": "debian"},
                      {"op": "remove", "path": "/os_distro"},
                      {"op": "add", "path": "/a~1b", "value": "slash"}])
    assert out["name"] == "new" and out["hw_qemu_guest_agent"] == "yes" and out["a/b"] == "slash"
    assert "os_distro" not in out
    assert DOC["name"] == "cirros"  # the input is left alone


@pytest.mark.parametrize("op, error", [
    ({"op": "replace", "path": "/checksum", "value": "x"}, errors.Forbidden),
    ({"op": "replace", "path": "/id", "value": "x"}, errors.Forbidden),
    ({"op": "add", "path": "/os_glance_foo", "value": "x"}, errors.Forbidden),
    ({"op": "remove", "path": "/name"}, errors.Forbidden),
    ({"op": "remove", "path": "/missing"}, errors.Conflict),
    ({"op": "replace", "path": "/missing", "value": "x"}, errors.Conflict),
    ({"op": "replace", "path": "/name"}, errors.InvalidInput),
])
def test_refused(op, error):
    with pytest.raises(error):
        apply(DOC, [op])
