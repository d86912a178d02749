"""Tempest 47's API suites (identity v3, image v2, network, compute) against a fresh nova-async.

Why this exists: "unmodified OpenStack clients work" is only as true as the API's details, and
Tempest is the suite OpenStack itself uses to pin those details down. This script measures how
far we are from it, honestly: it declares in tempest.conf only the features nova-async really
has (what its catalog and `GET /network/v2.0/extensions` list, and the server actions it
implements), so a failure is a behaviour that differs, never a feature we pretended to have.

What it does, in order:
1. installs tempest==47.0.0 into /var/cache/nova-async/conformance/tempest-venv (pip is the
   only network use, and only when that venv is missing or holds another version);
2. starts this checkout's `nova-async serve` on a fresh state dir, a free loopback port and
   2 simulated hosts, with an admin password of its own (and, for the compute tests that need
   a running guest, GUEST_TESTS, a second one on this machine's real libvirt: TCG guests);
3. provisions flavors, a second image and a shared network, and writes a `tempest init`
   workspace whose tempest.conf uses dynamic credentials (our identity API creates projects,
   users and role assignments as admin);
4. runs each chosen suite with concurrency 2 and prints its counts, where its subunit stream
   and failure list are, the failing test ids grouped by test class, and as the LAST line the
   passed/failed/skipped totals.
The service is stopped and its state dir removed at the end; the workspace is kept (it holds
the results) and its path printed.

Usage: conformance/tempest_suites.py [--suites identity,image,network,compute] [--regex RE]
                                     [--guests both|simulated|real]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

TEMPEST_VERSION = "47.0.0"
VENV = Path("/var/cache/nova-async/conformance/tempest-venv")
CHECKOUT = Path(__file__).resolve().parent.parent
NOVA_ASYNC = CHECKOUT / ".venv" / "bin" / "nova-async"
SUITES = {"identity": "identity.v3", "image": "image.v2", "network": "network", "compute": "compute"}
READY_TIMEOUT = 300
FORWARDING = Path("/proc/sys/net/ipv4/ip_forward")


# --- 1. Tempest in its own virtualenv ---------------------------------------------------------

def ensure_tempest() -> Path:
    """The tempest executable, installing the pinned version when it is not there yet."""
    tempest = VENV / "bin" / "tempest"
    probe = subprocess.run([str(VENV / "bin" / "python"), "-c",
                            "import importlib.metadata as m; print(m.version('tempest'))"],
                           capture_output=True, text=True) if tempest.exists() else None
    if probe is None or probe.stdout.strip() != TEMPEST_VERSION:
        print(f"installing tempest=={TEMPEST_VERSION} into {VENV}", flush=True)
        if not (VENV / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", f"tempest=={TEMPEST_VERSION}"], check=True)
    return tempest


# --- 2. a fresh service -----------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    """`nova-async serve` on its own state dir; `stop()` ends it and removes that dir."""

    def __init__(self, root: Path, simulated_hosts: int) -> None:
        self.state_dir = root / "state"
        self.log_path = root / "serve.log"
        self.password = secrets.token_urlsafe(16)
        self.url = f"http://127.0.0.1:{free_port()}"
        self.hosts = simulated_hosts or 1   # none simulated: the one real host, qemu:///system
        self.simulated_hosts = simulated_hosts
        self.proc: subprocess.Popen | None = None
        self.table = ""
        self.host_before: set[str] = set()
        self.forwarding = ""

    def start(self) -> None:
        # A data plane that keeps to this machine, as the test suite's (tests/e2e/conftest.py):
        # its own nftables table, an external network on TEST-NET-3 whose gateway is not this
        # host's (no address, no NAT, no forwarding here). What it makes is removed at stop().
        self.table = f"conformance_{secrets.token_hex(4)}"
        config = self.state_dir.parent / "serve.toml"
        config.write_text(f'[network]\ndataplane_table = "{self.table}"\nexternal_cidr = "203.0.113.0/24"\n'
                          'external_host_gateway = false\n')
        self.host_before = host_network_objects()
        self.forwarding = FORWARDING.read_text() if FORWARDING.exists() else ""
        argv = [str(NOVA_ASYNC), "serve", "--listen", self.url.removeprefix("http://"),
                "--state-dir", str(self.state_dir), "--admin-password", self.password,
                "--simulate-hosts", str(self.simulated_hosts), "--config", str(config)]
        log = self.log_path.open("w")
        # Its own process group: stop() can then end whatever it started (a private
        # PostgreSQL, helpers) and nothing else.
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + READY_TIMEOUT
        while "nova-async ready" not in self.log_path.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit("nova-async did not become ready; its log:\n"
                                 + self.log_path.read_text(errors="replace")[-4000:])
            time.sleep(0.5)  # a child process's log file: no event to wait on from here

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(90)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc is not None:
            try:  # anything left in its group (none, normally)
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        remove_host_network_objects(self.host_before, self.table, self.state_dir)
        if self.forwarding and FORWARDING.read_text() != self.forwarding:
            FORWARDING.write_text(self.forwarding)   # as it was before the service started
        shutil.rmtree(self.state_dir, ignore_errors=True)


def host_network_objects() -> set[str]:
    """The network namespaces and links on this host now."""
    names = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout.splitlines()
    return names | {line.split(": ")[1].split("@")[0] for line in links if ": " in line}


def remove_host_network_objects(before: set[str], table: str, state_dir: Path) -> None:
    """What the service's data plane made on this host and keeps across a stop (for its next
    start): its dnsmasq processes, the namespaces and bridges that appeared while it ran, and
    its nftables tables. A conformance run is done with them."""
    subprocess.run(["pkill", "-KILL", "-f", f"dnsmasq.*{state_dir}"], capture_output=True)
    for name in sorted(host_network_objects() - before):
        if name.startswith(("qdhcp-", "qrouter-")):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        elif name.startswith(("brq", "tap", "qr-", "qg-", "ns-")):
            subprocess.run(["ip", "link", "del", "dev", name], capture_output=True)
    for family in ("inet", "ip", "ip6", "bridge"):
        for name in (table, f"{table}_nat"):   # the firewall's, and the external network's NAT
            subprocess.run(["nft", "delete", "table", family, name], capture_output=True)


# --- 3. provisioning and tempest.conf ---------------------------------------------------------

class Api:
    """Just enough of an OpenStack client for provisioning: an admin token and the catalog."""

    def __init__(self, base: str, password: str) -> None:
        self.identity = f"{base}/v3"
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "password": password, "domain": {"id": "default"}}}},
            "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}}
        req = urllib.request.Request(f"{self.identity}/auth/tokens", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as resp:
            self.token = resp.headers["X-Subject-Token"]
            token = json.load(resp)["token"]
        self.catalog = {svc["type"]: next(e["url"] for e in svc["endpoints"] if e["interface"] == "public")
                        for svc in token.get("catalog", [])}
        self.roles = token["roles"]

    def call(self, method: str, url: str, body: dict | None = None, headers: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data, {"X-Auth-Token": self.token, "Content-Type": "application/json",
                                                 **(headers or {})}, method=method)
        with urllib.request.urlopen(req) as resp:
            raw = resp.read()
            return json.loads(raw) if raw else None

    def endpoint(self, kind: str) -> str | None:
        return self.catalog.get(kind)


def flavors(api: Api, images: list[dict]) -> list[str]:
    """Two flavor ids big enough for both `images` (their min_ram and min_disk), the smallest
    first; created when the service has fewer than two that fit."""
    compute = api.endpoint("compute")
    ram = max([256] + [i.get("min_ram") or 0 for i in images])
    disk = max([1] + [i.get("min_disk") or 0 for i in images])
    have = [f for f in api.call("GET", f"{compute}/flavors/detail")["flavors"]
            if f["ram"] >= ram and f["disk"] >= disk]
    for name, factor in (("tempest.small", 1), ("tempest.medium", 2))[:max(0, 2 - len(have))]:
        have.append(api.call("POST", f"{compute}/flavors", {"flavor": {
            "name": name, "ram": ram * factor, "vcpus": 1, "disk": disk}})["flavor"])
    have.sort(key=lambda f: (f["ram"], f["disk"], f["vcpus"]))
    return [have[0]["id"], have[1]["id"]]


def images(api: Api) -> list[dict]:
    """The two smallest active images (the demo guest image first, registered at first start),
    making a second from the first's bytes when the service has only one, so tests that want
    two different images get two."""
    glance = api.endpoint("image").rstrip("/")
    base = glance if glance.endswith("/v2") else f"{glance}/v2"
    have = sorted((i for i in api.call("GET", f"{base}/images")["images"] if i["status"] == "active"),
                  key=lambda i: i.get("size") or 0)
    if not have:
        raise SystemExit("no active image: the demo guest image was not registered (make guest-image)")
    first = have[0]
    if len(have) > 1:
        return have[:2]
    second = api.call("POST", f"{base}/images", {"name": "tempest-alt", "disk_format": first["disk_format"],
                                                  "container_format": first["container_format"],
                                                  "visibility": "public"})
    req = urllib.request.Request(f"{base}/images/{first['id']}/file", headers={"X-Auth-Token": api.token})
    with urllib.request.urlopen(req) as resp:
        data = resp.read()
    put = urllib.request.Request(f"{base}/images/{second['id']}/file", data, method="PUT",
                                 headers={"X-Auth-Token": api.token, "Content-Type": "application/octet-stream"})
    urllib.request.urlopen(put).close()
    return [first, second]


def network_extensions(api: Api) -> list[str]:
    """The aliases `GET /v2.0/extensions` lists; none when the API has no such list."""
    neutron = api.endpoint("network")
    if neutron is None:
        return []
    try:
        return sorted(e["alias"] for e in api.call("GET", f"{neutron.rstrip('/')}/v2.0/extensions")["extensions"])
    except urllib.error.HTTPError:
        return []


def shared_network(api: Api) -> str:
    """A shared network with a subnet, the one compute tests boot servers on (Tempest's dynamic
    credentials then need not create a network, subnet and router per test project), routed
    to the external network when there is one, as devstack routes its `private` network (a
    floating IP reaches a server only through such a router)."""
    neutron = api.endpoint("network").rstrip("/") + "/v2.0"
    net = api.call("POST", f"{neutron}/networks", {"network": {"name": "tempest-shared", "shared": True}})["network"]
    subnet = api.call("POST", f"{neutron}/subnets", {"subnet": {"network_id": net["id"], "cidr": "10.254.0.0/24",
                                                                 "ip_version": 4, "name": "tempest-shared"}})["subnet"]
    external = api.call("GET", f"{neutron}/networks?router:external=true")["networks"]
    if external:
        router = api.call("POST", f"{neutron}/routers", {"router": {
            "name": "tempest-shared", "external_gateway_info": {"network_id": external[0]["id"]}}})["router"]
        api.call("PUT", f"{neutron}/routers/{router['id']}/add_router_interface", {"subnet_id": subnet["id"]})
    return net["name"]


def public_network(api: Api) -> tuple[str, str]:
    """The id and name of the external network the service makes on its first start (routers'
    gateways, floating IPs), or empty strings when it has none."""
    neutron = api.endpoint("network").rstrip("/") + "/v2.0"
    nets = api.call("GET", f"{neutron}/networks?router:external=true")["networks"]
    return (nets[0]["id"], nets[0]["name"]) if nets else ("", "")


def compute_versions(api: Api) -> tuple[str, str]:
    """The compute API's min and max microversions, from its version document."""
    version = api.call("GET", api.endpoint("compute").rstrip("/"))["version"]
    return version.get("min_version") or "2.1", version.get("version") or "2.1"


# Server actions nova-async implements (nova_async/api/handlers/server_actions.py) and the
# compute-feature-enabled flags they decide; everything else Tempest can probe is declared off.
COMPUTE_FEATURES = {
    "resize": True, "pause": True, "suspend": True, "snapshot": True, "console_output": True,
    "vnc_console": True, "rebuild": True, "personality": False, "change_password": False,
    "live_migration": False, "cold_migration": True, "shelve": True, "shelve_migrate": False,
    "rescue": True, "stable_rescue": True, "spice_console": False, "serial_console": False,
    "interface_attach": False, "config_drive": False, "metadata_service": False,
    "attach_encrypted_volume": False, "block_migration_for_live_migration": False,
    "block_migrate_cinder_iscsi": False, "volume_multiattach": False, "swap_volume": False,
    "volume_backed_live_migration": False, "disk_config": True, "hostname_fqdn_sanitization": False,
    # The filters that run here: the configured ones (scheduler.enabled_filters), and those
    # nova-async applies whenever a request asks (hints, server groups).
    "scheduler_enabled_filters": ",".join((
        "ComputeFilter", "AvailabilityZoneFilter", "AggregateMultiTenancyIsolation",
        "AggregateInstanceExtraSpecsFilter", "ImagePropertiesFilter", "ComputeCapabilitiesFilter",
        "SameHostFilter", "DifferentHostFilter", "ServerGroupAffinityFilter", "ServerGroupAntiAffinityFilter")),
}


def write_conf(workspace: Path, service: Service, api: Api) -> Path:
    """tempest.conf for `workspace`, declaring only what `api` really offers."""
    both = images(api)
    image, image_alt = (i["id"] for i in both)
    flavor, flavor_alt = flavors(api, both)
    extensions = network_extensions(api)
    has = {kind: api.endpoint(kind) is not None for kind in ("compute", "image", "network", "volumev3")}
    fixed_network = shared_network(api) if has["network"] else ""
    public_id, public_name = public_network(api) if has["network"] else ("", "")
    min_mv, max_mv = compute_versions(api)
    bool_ = lambda v: str(v).lower() if isinstance(v, bool) else v  # noqa: E731
    sections = {
        "DEFAULT": {"log_file": str(workspace / "tempest.log")},
        "auth": {"use_dynamic_credentials": True, "create_isolated_networks": False,
                 "admin_username": "admin", "admin_password": service.password,
                 "admin_project_name": "admin", "admin_domain_name": "Default",
                 "default_credentials_domain_name": "Default", "tempest_roles": "member"},
        "identity": {"uri_v3": api.identity, "auth_version": "v3", "region": "RegionOne",
                     "disable_ssl_certificate_validation": True},
        "identity-feature-enabled": {"api_v2": False, "api_v3": True, "trust": False, "domain_specific_drivers": False,
                                     "security_compliance": False, "project_tags": False,
                                     "application_credentials": True, "access_rules": False,
                                     "api_extensions": ""},  # no OS-EC2, OS-TRUST, OS-OAUTH1 ...
        "service_available": {"nova": has["compute"], "glance": has["image"], "neutron": has["network"],
                              "cinder": has["volumev3"], "swift": False, "heat": False, "horizon": False},
        "compute": {"image_ref": image, "image_ref_alt": image_alt, "flavor_ref": flavor,
                    "flavor_ref_alt": flavor_alt, "fixed_network_name": fixed_network,
                    "min_compute_nodes": service.hosts, "min_microversion": min_mv, "max_microversion": max_mv,
                    "build_timeout": 120},
        "compute-feature-enabled": COMPUTE_FEATURES,
        # http_image empty. The tasks API imports from a URL, but Tempest's ImageTaskCreate
        # has nothing it could pass honestly here: test_image_tasks_create is skipped by
        # Tempest itself (bug 2030527), and test_task_create_fake_image_location makes the
        # service look up a random host name (http://tempest-dummy-img-file-N.qcow2), a DNS
        # query that leaves this machine. No web-download import, no http store either.
        "image": {"build_timeout": 120, "image_caching_enabled": False, "http_image": ""},
        # image_format_enforcement: an upload's bytes are stored whatever disk_format says.
        # os_glance_reserved: the os_glance_ prefix is refused (403) on create and update.
        "image-feature-enabled": {"api_v2": True, "api_v1": False, "import_image": False,
                                  "os_glance_reserved": True, "manage_locations": False,
                                  "image_format_enforcement": False},
        "network": {"project_network_cidr": "10.100.0.0/16", "build_timeout": 120, "shared_physical_network": False,
                    "public_network_id": public_id, "floating_network_name": public_name},
        # IPv6 subnets, ports, router interfaces and rules exist (guests take their v6 address
        # from the config drive); ipv6_ra_mode/ipv6_address_mode are not kept, so no subnet
        # attributes, and no DHCPv6 tests.
        "network-feature-enabled": {"api_extensions": ",".join(extensions), "ipv6": True,
                                    "ipv6_subnet_attributes": False, "port_security": "port-security" in extensions,
                                    "floating_ips": "router" in extensions and bool(public_id)},
        "validation": {"run_validation": False},
        "volume": {"catalog_type": "volumev3", "build_timeout": 120},
        "volume-feature-enabled": {"backup": False, "snapshot": True},
    }
    conf = workspace / "etc" / "tempest.conf"
    conf.write_text("".join(f"[{name}]\n" + "".join(f"{k} = {bool_(v)}\n" for k, v in values.items()) + "\n"
                            for name, values in sections.items()))
    return conf


# --- 4. running the suites and reading their results ------------------------------------------

# Compute tests that read what a running guest produces (its console log, its VNC server):
# libvirt's test driver behind simulated hosts runs no guest, so these run in a second pass
# against one real host (qemu:///system, TCG), and the first pass leaves them out.
GUEST_TESTS = r"test_get_console_output|NoVNCConsoleTestJSON"


def run_suite(tempest: Path, workspace: Path, suite: str, regex: str | None, guests: str) -> dict:
    """One suite's run on one kind of host (`guests`: simulated or real, see GUEST_TESTS); its
    subunit stream and failing ids are saved under the workspace."""
    pattern = regex or rf"^tempest\.api\.{re.escape(SUITES[suite])}"
    select = ["--regex", pattern]
    if suite == "compute" and guests == "simulated":
        select += ["--exclude-regex", GUEST_TESTS]
    elif suite == "compute":
        select = ["--regex", rf"(?=.*(?:{pattern}))(?=.*(?:{GUEST_TESTS}))"]
    out = workspace / "results" / suite
    out.mkdir(parents=True, exist_ok=True)
    with (out / "run.log").open("w") as log:
        subprocess.run([str(tempest), "run", "--concurrency", "2", *select],
                       cwd=workspace, stdout=log, stderr=subprocess.STDOUT)
    stestr = tempest.parent / "stestr"
    with (out / "subunit").open("wb") as sub:
        subprocess.run([str(stestr), "last", "--subunit"], cwd=workspace, stdout=sub)
    listed = subprocess.run([str(stestr), "failing", "--list"], cwd=workspace, capture_output=True,
                            text=True).stdout.splitlines()
    failing = sorted({test_id(line) for line in listed if "tempest." in line})
    (out / "failing.txt").write_text("\n".join(failing) + "\n")
    return {**counts(out / "run.log"), "failing": failing, "dir": out}


def test_id(line: str) -> str:
    """A failing test's id without its tags; a class whose setup failed as `<class>.setUpClass`."""
    line = line.split("[")[0].strip()
    if m := re.fullmatch(r"(\w+) \((tempest\.[\w.]+)\)", line):
        return f"{m.group(2)}.{m.group(1)}"
    return line


def counts(run_log: Path) -> dict:
    """passed/failed/skipped from the totals stestr prints at the end of a run."""
    text = run_log.read_text(errors="replace")
    number = lambda label: int(m.group(1)) if (m := re.search(rf"^ - {label}: (\d+)", text, re.M)) else 0  # noqa: E731
    return {"passed": number("Passed"), "failed": number("Failed"), "skipped": number("Skipped")}


def report(suite: str, result: dict) -> None:
    print(f"{suite}: {result['passed']} passed, {result['failed']} failed, {result['skipped']} skipped"
          f"  (subunit, failing.txt, run.log in {result['dir']})", flush=True)
    by_class = collections.defaultdict(list)
    for test in result["failing"]:
        cls, _, name = test.rpartition(".")
        by_class[cls].append(name)
    for cls, names in sorted(by_class.items()):
        print(f"  {cls}: {', '.join(names)}")


def run_pass(tempest: Path, workspace: Path, chosen: list[str], regex: str | None, guests: str) -> collections.Counter:
    """The chosen suites against one fresh service: two simulated hosts, or one real one."""
    workspace.mkdir(mode=0o755)  # the private PostgreSQL (user postgres) lives in its state dir
    service = Service(workspace, simulated_hosts=2 if guests == "simulated" else 0)
    totals: collections.Counter = collections.Counter()
    try:
        service.start()
        # Its own workspace registry: nothing is added to ~/.tempest, and names never clash.
        subprocess.run([str(tempest), "init", "--workspace-path", str(workspace / "workspace.yaml"),
                        str(workspace / "ws")], check=True, stdout=subprocess.DEVNULL)
        ws = workspace / "ws"
        write_conf(ws, service, Api(service.url, service.password))
        print(f"workspace ({guests} hosts): {ws}", flush=True)
        for suite in chosen:
            result = run_suite(tempest, ws, suite, regex, guests)
            report(suite if guests == "simulated" else f"{suite} (real guests)", result)
            totals.update({k: result[k] for k in ("passed", "failed", "skipped")})
    finally:
        service.stop()
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", default=",".join(SUITES), help="comma list of " + ", ".join(SUITES))
    parser.add_argument("--regex", help="run only the tests this matches (overrides each suite's own)")
    parser.add_argument("--guests", choices=("both", "simulated", "real"), default="both",
                        help="compute's passes to run: simulated hosts, a real one for GUEST_TESTS, or both")
    args = parser.parse_args()
    chosen = [s.strip() for s in args.suites.split(",") if s.strip()]
    if unknown := set(chosen) - set(SUITES):
        parser.error(f"unknown suites: {', '.join(sorted(unknown))}")
    tempest = ensure_tempest()
    workspace = Path(tempfile.mkdtemp(prefix="tempest-"))
    workspace.chmod(0o755)
    totals: collections.Counter = collections.Counter()
    if args.guests != "real":
        totals += run_pass(tempest, workspace / "simulated", chosen, args.regex, "simulated")
    if args.guests != "simulated" and "compute" in chosen:
        totals += run_pass(tempest, workspace / "real", ["compute"], args.regex, "real")
    print(f"passed/failed/skipped: {totals['passed']}/{totals['failed']}/{totals['skipped']}")


if __name__ == "__main__":
    main()
