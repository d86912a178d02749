"""Which acceleration guests get: KVM only where it really works (or is forced), else TCG."""

import pytest

from nova_async import config
from nova_async.compute.registration import choose_domain_type


@pytest.mark.parametrize("detected, virt_type, kvm_ok, expected", [
    ("test", "auto", True, "test"),
    ("test", "kvm", True, "test"),
    ("qemu", "auto", True, "kvm"),
    ("qemu", "auto", False, "qemu"),
    ("qemu", "qemu", True, "qemu"),
    ("qemu", "kvm", False, "kvm"),
])
def test_choice(detected, virt_type, kvm_ok, expected):
    assert choose_domain_type(detected, virt_type, kvm_ok) == expected


def test_unknown_virt_type_is_refused():
    with pytest.raises(config.ConfigError, match="virt_type"):
        config.load(None, {("compute", "virt_type"): "xen"})
