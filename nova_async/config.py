"""Settings: every knob nova-async has, with its default and a one-line doc.

One frozen `Settings` object is built once (defaults ← TOML file ← command-line flags)
and passed down to the roles. There is no global configuration object.
The TOML file uses the same names as the dataclass fields, grouped by section:

    [service]
    listen = "0.0.0.0:8774"
    [compute]
    simulate_hosts = 4
"""

from __future__ import annotations

import dataclasses
import os
import textwrap
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

ALL_ROLES = ("identity", "image", "network", "volume", "placement", "api", "conductor", "scheduler",
             "compute", "dataplane")


def default_state_dir() -> str:
    if os.geteuid() == 0:
        return "/var/lib/nova-async"
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(base, "nova-async")


def _doc(text: str, default: Any = dataclasses.MISSING, *, flag: str | None = None, **kw: Any) -> Any:
    meta = {"doc": text, "flag": flag}
    if default is dataclasses.MISSING:
        return field(metadata=meta, **kw)
    return field(default=default, metadata=meta, **kw)


@dataclass(frozen=True)
class ServiceSettings:
    listen: str = _doc("HOST:PORT the one HTTP port listens on", "127.0.0.1:8774", flag="--listen")
    public_url: str = _doc("base URL put in the catalog and links (default: from --listen)", "")
    state_dir: str = _doc("where the private database, images and instance disks live",
                          default_factory=default_state_dir, flag="--state-dir")
    database: str = _doc("PostgreSQL DSN; empty runs a private cluster in the state dir", "",
                         flag="--database")
    roles: tuple[str, ...] = _doc("roles this process runs (comma-separated)", ALL_ROLES, flag="--roles")
    transport: str = _doc("the bus between roles: memory (inside this process) or amqp://USER:PASS@HOST:PORT/"
                          "VHOST (RabbitMQ, for roles split over processes and hosts); the nodes of a "
                          "RabbitMQ cluster as oslo.messaging lists them, rabbit://U:P@HOST1:5672,U:P@HOST2:5672/ "
                          "(or whole URLs separated by commas): the first that answers is used, and the "
                          "next when it is lost", "memory", flag="--transport")
    rabbit_quorum_queue: bool = _doc("declare the role queues (nova-async.conductor, nova-async.compute.HOST, "
                                     "...) and the versioned_notifications queues as RabbitMQ quorum queues, "
                                     "replicated over the cluster's nodes (oslo.messaging's option of the same "
                                     "name); the queues' type cannot change: see the README to switch a site",
                                     False, flag="--rabbit-quorum-queue")
    rpc_response_timeout: float = _doc("seconds a call between roles waits for its answer (oslo.messaging's "
                                       "option of the same name; at least 40); a scheduling decision, which "
                                       "waits behind the decisions queued before it, waits twice as long",
                                       60.0)
    shutdown_timeout: float = _doc("seconds to drain in-flight work on SIGTERM before cancelling", 30.0)
    database_outage_limit: float = _doc("seconds the database may stay unreachable before the systemd "
                                        "watchdog (WatchdogSec=) is no longer fed, so that systemd restarts "
                                        "the service; keep it above the time the private PostgreSQL takes "
                                        "to restart and recover", 60.0)
    private_database_deaths: int = _doc("deaths of the private PostgreSQL within private_database_window "
                                        "that end the service (exit status 1, for systemd's Restart=) "
                                        "instead of another restart", 3)
    private_database_window: float = _doc("seconds over which deaths of the private PostgreSQL are counted",
                                          60.0)
    log_format: str = _doc("log output: auto (console on a TTY, else JSON), json or console", "auto")


@dataclass(frozen=True)
class IdentitySettings:
    auth: str = _doc("keystone (password tokens) or noauth (trusted lab box, see README)", "keystone",
                     flag="--auth")
    admin_password: str = _doc("bootstrap admin's password; generated and stored on first start if empty",
                               "", flag="--admin-password")
    region: str = _doc("region name in the service catalog", "RegionOne")
    token_ttl: int = _doc("token lifetime in seconds", 86400)
    allow_expired_window: int = _doc("seconds after its expiry that a token can still be validated "
                                     "with ?allow_expired=1 (Keystone's [token] allow_expired_window)",
                                     48 * 3600)

    @property
    def revocation_horizon(self) -> float:
        """How long after its issue a token can still be accepted anywhere, so how long a
        revocation event must be kept: its lifetime plus the allow_expired window."""
        return self.token_ttl + self.allow_expired_window


@dataclass(frozen=True)
class ComputeSettings:
    libvirt_uri: str = _doc("libvirt connection for the compute host: qemu:///system runs real "
                            "guests; test:///default is libvirt's test driver (no guest OS)",
                            "qemu:///system", flag="--libvirt-uri")
    host: str = _doc("this compute host's name (default: the machine's hostname)", "", flag="--host")
    virt_type: str = _doc("guest acceleration on QEMU hosts: auto (KVM when a probe shows it really "
                          "works, else TCG), kvm or qemu (TCG)", "auto")
    cell: str = _doc("the cell this process's compute hosts are mapped to on their first start", "cell1",
                     flag="--cell")
    simulate_hosts: int = _doc("run N compute hosts sim-1..sim-N on libvirt's test driver", 0,
                               flag="--simulate-hosts")
    sim_vcpus: int = _doc("CPUs of each simulated host", 16)
    sim_memory_mb: int = _doc("memory of each simulated host, MiB", 32768)
    sim_disk_gb: int = _doc("disk of each simulated host, GiB", 500)
    sim_in_libvirtd: bool = _doc("simulated hosts keep their domains in libvirtd (test+unix://), where a real "
                                 "host's guests are, instead of in this process (bench/footprint.py measures "
                                 "the service's own memory so); libvirtd must be running", False)
    cpu_allocation_ratio: float = _doc("VCPU overcommit reported to placement", 4.0)
    ram_allocation_ratio: float = _doc("MEMORY_MB overcommit reported to placement", 1.0)
    disk_allocation_ratio: float = _doc("DISK_GB overcommit reported to placement", 1.0)
    reserved_host_memory_mb: int = _doc("memory kept for the host itself", 512)
    report_interval: float = _doc("seconds between heartbeats that keep this process's compute services up "
                                  "(keep it well under scheduler.service_down_time)", 10.0)
    resource_refresh_interval: float = _doc("seconds between re-reading the host's CPUs, memory and "
                                            "disk into placement", 60.0)
    shutdown_timeout: float = _doc("seconds a stopping guest gets to power off on ACPI before it is "
                                   "powered off hard", 60.0)
    soft_reboot_timeout: float = _doc("seconds a soft reboot waits for the guest to shut down before "
                                      "rebooting it hard", 120.0)
    sync_power_state_interval: float = _doc("seconds between comparing every guest's power state with "
                                            "the database (lifecycle events report changes at once; "
                                            "this catches what they miss)", 600.0)
    allow_resize_to_same_host: bool = _doc("a resize may stay on the server's own host (Nova's option, "
                                           "False there; True here because a single lab box has no "
                                           "other host to go to)", True)
    force_config_drive: bool = _doc("give every real guest a config drive, whether or not its request or "
                                    "image asks for one (Nova's option of the same name)", False)
    resize_confirm_window: float = _doc("seconds a resized server waits in VERIFY_RESIZE before it is "
                                        "confirmed automatically; 0 never (Nova's default: the user "
                                        "confirms or reverts, and a late confirm would otherwise fail)",
                                        0.0)
    shelved_offload_time: float = _doc("seconds a SHELVED server keeps its guest and resources on its host "
                                       "before it is offloaded; 0 at once (Nova's default), -1 never",
                                       0.0)


@dataclass(frozen=True)
class ImageSettings:
    demo_guest: bool = _doc("on a fresh database, register the demo guest (`make guest-image` builds "
                            "it) as the public images nova-async-demo, -kernel and -ramdisk", True)
    cloud_image: bool = _doc("on a fresh database, register the Debian 12 cloud image (`make cloud-image` "
                             "builds it) as the public images debian-cloud, -kernel and -ramdisk", True)
    size_cap: int = _doc("the most bytes an image task imports from a URL (Glance's image_size_cap, "
                         "1 TiB)", 1099511627776)


@dataclass(frozen=True)
class NetworkSettings:
    dataplane: str = _doc("make networks real on this host (bridges, DHCP, metadata, routers, floating "
                          "IPs, security groups): auto (when this process runs real guests), on, off",
                          "auto")
    dataplane_table: str = _doc("name of this service's nftables tables in the host's namespace "
                                "(never the host's own; two services on one host need two names)",
                                "nova_async")
    external_network: str = _doc("name of the external network made on the first start (routers' "
                                 "gateways, floating IPs); empty: none", "public")
    external_cidr: str = _doc("the external network's subnet", "172.24.4.0/24")
    external_gateway: str = _doc("its gateway address (default: the subnet's first address)", "")
    external_host_gateway: bool = _doc("the host holds the gateway address on the external bridge and "
                                       "NATs the range out of its own default route (a lab box); false "
                                       "when the gateway is another machine on external_interface", True)
    external_interface: str = _doc("a NIC to plug into the external network's bridge (an edge site's "
                                   "LAN: a flat provider network); empty: a host-only bridge", "")
    physical_networks: tuple[str, ...] = _doc("flat provider networks as PHYSNET:NIC pairs "
                                              "(e.g. physnet1:eth1)", ())
    dns_servers: tuple[str, ...] = _doc("DNS servers DHCP hands out when a subnet names none", ())


@dataclass(frozen=True)
class VolumeSettings:
    backend: str = _doc("where volumes live: file (sparse raw files under the state dir, or dir) or "
                        "lvm-thin (thin volumes in volume_group's thin pool)", "file")
    dir: str = _doc("file backend: the directory of volume and snapshot files (default: <state_dir>/volumes)",
                    "")
    volume_group: str = _doc("lvm-thin backend: the LVM volume group to use (made by you beforehand)", "")
    thin_pool: str = _doc("lvm-thin backend: the thin pool in volume_group (made at start when missing, "
                          "on thin_pool_size of the group)", "nova-async-pool")
    thin_pool_size: str = _doc("lvm-thin backend: the size of a thin pool made at start, as lvcreate takes "
                               "it (90%FREE, 20G)", "90%FREE")
    quota_volumes: int = _doc("default volumes per project (-1: unlimited)", 10)
    quota_gigabytes: int = _doc("default GiB of volumes and snapshots per project", 1000)
    quota_snapshots: int = _doc("default volume snapshots per project", 10)
    quota_per_volume_gigabytes: int = _doc("default largest volume in GiB (-1: no limit)", -1)


@dataclass(frozen=True)
class QuotaSettings:
    instances: int = _doc("default servers per project (-1: unlimited)", 10)
    cores: int = _doc("default VCPUs per project, summed over its servers' flavors", 20)
    ram: int = _doc("default MiB of RAM per project, summed over its servers' flavors", 51200)
    metadata_items: int = _doc("default metadata keys per server", 128)
    key_pairs: int = _doc("default key pairs per user", 100)
    server_groups: int = _doc("default server groups per project", 10)
    server_group_members: int = _doc("default servers per server group", 10)


@dataclass(frozen=True)
class SchedulerSettings:
    max_attempts: int = _doc("hosts tried per instance (the chosen one plus alternates)", 3)
    max_placement_results: int = _doc("hosts a decision considers: a random sample of this many of "
                                      "those with room (0: all); bounds the cost of a decision on "
                                      "big clouds", 50)
    host_subset_size: int = _doc("pick randomly among the N best-weighed hosts", 1)
    ram_weight_multiplier: float = _doc("positive spreads by free RAM, negative packs", 1.0)
    cpu_weight_multiplier: float = _doc("positive spreads by free VCPU, negative packs", 1.0)
    disk_weight_multiplier: float = _doc("positive spreads by free disk, negative packs", 1.0)
    io_ops_weight_multiplier: float = _doc("negative prefers hosts building fewer instances now", -1.0)
    build_failure_weight_multiplier: float = _doc("weight taken per consecutive failed build on a host "
                                                  "(large: avoid such hosts while others have room)",
                                                  1000000.0)
    enabled_filters: tuple[str, ...] = _doc("host filters, run in this order",
                                            ("ComputeFilter", "AvailabilityZoneFilter",
                                             "AggregateMultiTenancyIsolation",
                                             "AggregateInstanceExtraSpecsFilter", "ImagePropertiesFilter",
                                             "ComputeCapabilitiesFilter"))
    service_down_time: int = _doc("seconds without a heartbeat after which a compute service is down", 60)


@dataclass(frozen=True)
class ApiSettings:
    event_backlog: int = _doc("events each cell keeps for GET /compute/v2.1/events (a client that reconnects "
                              "with an older Last-Event-ID is told to reload: a `reset` event)", 10000)
    event_buffer: int = _doc("events a slow stream client may have waiting in memory; beyond it the stream "
                             "reads what it missed back from the database", 5000)
    event_keepalive: float = _doc("seconds without a write after which an event stream sends a keepalive "
                                  "comment", 15.0)


@dataclass(frozen=True)
class HookSettings:
    enabled: tuple[str, ...] = _doc("hook plugins to run, by their entry-point names in the group "
                                    "nova_async.hooks (comma-separated); an installed plugin not named "
                                    "here never loads", (), flag="--hooks")
    post_timeout: float = _doc("seconds each post_* hook may run before it is abandoned (and logged)", 5.0)
    pre_timeout: float = _doc("seconds each pre_* (and network_info) hook may take to answer; one that "
                              "does not refuses the step", 30.0)


@dataclass(frozen=True)
class NotificationSettings:
    enabled: bool = _doc("send Nova's versioned notifications (instance.create.end, …): to this process's "
                         "subscribers and file, and over RabbitMQ to the nova exchange's "
                         "versioned_notifications.info/.error queues, as Nova does", True)
    file: str = _doc("append every notification this process hears to this file, one JSON envelope "
                     "a line (empty: none)", "", flag="--notifications-file")


@dataclass(frozen=True)
class Settings:
    service: ServiceSettings = field(default_factory=ServiceSettings)
    identity: IdentitySettings = field(default_factory=IdentitySettings)
    compute: ComputeSettings = field(default_factory=ComputeSettings)
    image: ImageSettings = field(default_factory=ImageSettings)
    network: NetworkSettings = field(default_factory=NetworkSettings)
    volume: VolumeSettings = field(default_factory=VolumeSettings)
    quota: QuotaSettings = field(default_factory=QuotaSettings)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    api: ApiSettings = field(default_factory=ApiSettings)
    hooks: HookSettings = field(default_factory=HookSettings)
    notifications: NotificationSettings = field(default_factory=NotificationSettings)

    @property
    def state_path(self) -> Path:
        return Path(self.service.state_dir)

    @property
    def base_url(self) -> str:
        if self.service.public_url:
            return self.service.public_url.rstrip("/")
        host, _, port = self.service.listen.rpartition(":")
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"http://{host}:{port}"


SECTIONS = {f.name: f.type for f in fields(Settings)}


class ConfigError(ValueError):
    """A setting that cannot be used, with a message naming it."""


def _coerce(section: str, name: str, current: Any, value: Any) -> Any:
    if isinstance(current, tuple):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{section}.{name}: expected a list")
        return tuple(str(v) for v in value)
    for kind in (bool, int, float, str):
        if isinstance(current, kind):
            try:
                if kind is bool and isinstance(value, str):
                    return value.lower() in ("1", "true", "yes", "on")
                return kind(value)
            except (TypeError, ValueError):
                raise ConfigError(f"{section}.{name}: expected {kind.__name__}, got {value!r}") from None
    return value


def settings_help() -> str:
    """Every setting as a TOML file takes it, by section: its default and its doc line (the
    epilog of `serve --help`, so that what the config file may hold is shown where it is used)."""
    lines = ["settings (a --config TOML file takes each, by section; flags override the file):"]
    for sec in fields(Settings):
        lines.append(f"  [{sec.name}]")
        for f in fields(sec.default_factory):  # type: ignore[misc]
            if f.default is not dataclasses.MISSING:
                default = f.default
                shown = (repr(list(default)) if isinstance(default, tuple) else
                         str(default).lower() if isinstance(default, bool) else
                         f'"{default}"' if isinstance(default, str) else str(default))
            else:
                shown = "(computed)"
            flag = f.metadata.get("flag")
            doc = f.metadata.get("doc", "") + (f" (flag: {flag})" if flag else "")
            lines.append(f"    {f.name} = {shown}")
            lines += textwrap.wrap(doc, 96, initial_indent=" " * 8, subsequent_indent=" " * 8)
    return "\n".join(lines)


def flag_table() -> list[tuple[str, str, str, dataclasses.Field]]:
    """(section, name, flag, field) for every setting that has a command-line flag."""
    rows = []
    for sec in fields(Settings):
        section_cls = sec.default_factory  # type: ignore[misc]
        for f in fields(section_cls):
            if f.metadata.get("flag"):
                rows.append((sec.name, f.name, f.metadata["flag"], f))
    return rows


def load(config_path: str | None = None, overrides: dict[tuple[str, str], Any] | None = None) -> Settings:
    """Defaults, then the TOML file, then command-line overrides (section, name) → value."""
    data: dict[str, dict[str, Any]] = {}
    if config_path:
        try:
            with open(config_path, "rb") as fh:
                data = tomllib.load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_path}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {config_path}: {exc}") from None
    for (section, name), value in (overrides or {}).items():
        data.setdefault(section, {})[name] = value

    built = {}
    for sec in fields(Settings):
        section_cls = sec.default_factory  # type: ignore[misc]
        defaults = section_cls()
        given = data.pop(sec.name, {})
        if not isinstance(given, dict):
            raise ConfigError(f"[{sec.name}] must be a table")
        known = {f.name for f in fields(section_cls)}
        unknown = set(given) - known
        if unknown:
            raise ConfigError(f"unknown setting(s) in [{sec.name}]: {', '.join(sorted(unknown))}")
        values = {k: _coerce(sec.name, k, getattr(defaults, k), v) for k, v in given.items()}
        built[sec.name] = dataclasses.replace(defaults, **values)
    if data:
        raise ConfigError(f"unknown config section(s): {', '.join(sorted(data))}")
    settings = Settings(**built)
    validate(settings)
    return settings


def validate(settings: Settings) -> None:
    bad_roles = set(settings.service.roles) - set(ALL_ROLES)
    if bad_roles:
        raise ConfigError(f"unknown role(s) {', '.join(sorted(bad_roles))}; known: {', '.join(ALL_ROLES)}")
    host, sep, port = settings.service.listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--listen must be HOST:PORT, got {settings.service.listen!r}")
    if settings.identity.auth not in ("keystone", "noauth"):
        raise ConfigError("--auth must be keystone or noauth")
    if settings.identity.allow_expired_window < 0:
        raise ConfigError("identity.allow_expired_window must be >= 0")
    if settings.service.rpc_response_timeout < 40:
        # a claim sent again after a lost answer (placement.client.settled_claim) must still
        # fit in the scheduling decision's wait, twice this
        raise ConfigError("service.rpc_response_timeout must be >= 40")
    if settings.compute.virt_type not in ("auto", "kvm", "qemu"):
        raise ConfigError("compute.virt_type must be auto, kvm or qemu")
    transport = settings.service.transport
    if transport != "memory":
        from nova_async.bus.brokers import broker_urls

        try:
            broker_urls(transport)
        except ValueError as exc:   # its message shows no password
            raise ConfigError(f"--transport must be memory or RabbitMQ URLs: {exc}") from None
    if settings.compute.report_interval <= 0:
        raise ConfigError("compute.report_interval must be > 0")
    if settings.service.database_outage_limit <= 0:
        raise ConfigError("service.database_outage_limit must be > 0")
    if settings.service.private_database_deaths < 1 or settings.service.private_database_window <= 0:
        raise ConfigError("service.private_database_deaths must be >= 1 and service.private_database_window > 0")
    if settings.compute.simulate_hosts < 0:
        raise ConfigError("--simulate-hosts must be >= 0")
    if settings.hooks.post_timeout <= 0 or settings.hooks.pre_timeout <= 0:
        raise ConfigError("hooks.post_timeout and hooks.pre_timeout must be > 0")
    if settings.network.dataplane not in ("auto", "on", "off"):
        raise ConfigError("network.dataplane must be auto, on or off")
