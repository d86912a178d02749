"""The files under systemd/ agree with the code: each unit's ExecStart= is a command line
`nova-async` accepts, with the example config the units read."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from nova_async import cli, config

SYSTEMD = Path(__file__).resolve().parents[3] / "systemd"
EXAMPLE = SYSTEMD / "nova-async.toml"


def exec_start(unit: Path, instance: str = "edge-2") -> list[str]:
    text = unit.read_text()
    [line] = re.findall(r"^ExecStart=(.*)$", text, re.M)
    env = dict(re.findall(r"^Environment=(NOVA_ASYNC_\w+)=(\S+)$", text, re.M))
    line = line.replace("%i", instance)
    line = re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], line)
    return shlex.split(line)


@pytest.mark.parametrize("unit", sorted(SYSTEMD.glob("*.service")), ids=lambda p: p.name)
def test_every_unit_starts_serve_with_settings_that_load(unit):
    argv = exec_start(unit)
    assert argv[0] == "/opt/nova-async/.venv/bin/nova-async" and argv[1] == "serve"
    argv = [str(EXAMPLE) if a == "/etc/nova-async/nova-async.toml" else a for a in argv[1:]]
    settings = cli._settings(cli._parser().parse_args(argv))
    if "control" in unit.name:
        assert "compute" not in settings.service.roles and "api" in settings.service.roles
    elif "compute@" in unit.name:
        assert settings.service.roles == ("compute", "dataplane") and settings.compute.host == "edge-2"
        assert settings.service.state_dir == "/var/lib/nova-async/compute-edge-2"
        assert settings.service.listen != config.load(str(EXAMPLE)).service.listen
    else:
        assert set(settings.service.roles) == set(config.ALL_ROLES)
        assert settings.service.state_dir == "/var/lib/nova-async"


def test_example_config_is_the_defaults_a_service_wants():
    settings = config.load(str(EXAMPLE))
    assert settings.service.state_dir == "/var/lib/nova-async"
    assert settings.compute.libvirt_uri == "qemu:///system"
    assert settings.identity.auth == "keystone"
