"""Settings: defaults, TOML file, flags, and clear errors for bad values."""

import tomllib

import pytest

from nova_async import cli, config


def test_defaults_are_usable():
    s = config.load()
    assert s.service.listen == "127.0.0.1:8774"
    assert s.base_url == "http://127.0.0.1:8774"
    assert s.service.roles == config.ALL_ROLES


def test_toml_then_flags(tmp_path):
    path = tmp_path / "n.toml"
    path.write_text('[service]\nlisten = "0.0.0.0:9000"\nroles = ["api", "conductor"]\n'
                    '[compute]\nsimulate_hosts = 3\n')
    s = config.load(str(path), {("compute", "simulate_hosts"): "5"})
    assert s.service.listen == "0.0.0.0:9000" and s.base_url == "http://127.0.0.1:9000"
    assert s.service.roles == ("api", "conductor")
    assert s.compute.simulate_hosts == 5


@pytest.mark.parametrize("overrides, message", [
    ({("service", "roles"): "api,bogus"}, "unknown role"),
    ({("service", "listen"): "nowhere"}, "HOST:PORT"),
    ({("identity", "auth"): "magic"}, "keystone or noauth"),
    ({("compute", "simulate_hosts"): "many"}, "expected int"),
    ({("service", "rpc_response_timeout"): "10"}, "rpc_response_timeout must be >= 40"),
])
def test_bad_settings_name_the_problem(overrides, message):
    with pytest.raises(config.ConfigError, match=message):
        config.load(None, overrides)


def test_unknown_keys_in_the_file_are_refused(tmp_path):
    path = tmp_path / "n.toml"
    path.write_text("[service]\nlisten_port = 1\n")
    with pytest.raises(config.ConfigError, match="listen_port"):
        config.load(str(path))


def test_serve_help_lists_every_setting_as_a_config_file_takes_it(capsys):
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    listing = capsys.readouterr().out.split("settings (a --config TOML file", 1)[1]
    # The `name = default` lines, by section, are a config file that says what the defaults say.
    toml = "\n".join(line.strip() for line in listing.splitlines()
                     if line.startswith("  [") or (line.startswith("    ") and not line.startswith("     ")
                                                    and "(computed)" not in line))
    written = tomllib.loads(toml)
    defaults = config.load()
    for section in config.SECTIONS:
        names = {f.name for f in config.fields(getattr(defaults, section)) if f.name != "state_dir"}
        assert set(written[section]) == names, section
        for name, value in written[section].items():
            expected = getattr(getattr(defaults, section), name)
            assert (tuple(value) if isinstance(value, list) else value) == expected, f"{section}.{name}"
