"""`/extensions`: the v2.1 API's legacy list of what it offers beyond the core, which older
clients (and Tempest) still read. Only what this API really has is listed, by Nova's names
and aliases for it; the descriptions are ours."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w

# (name, alias, what it is)
EXTENSIONS = [
    ("Aggregates", "os-aggregates", "Host aggregates and their metadata."),
    ("AssistedVolumeSnapshots", "os-assisted-volume-snapshots", "Volume snapshots a volume service asks for."),
    ("AvailabilityZone", "os-availability-zone", "Availability zones of servers and hosts."),
    ("ConsoleOutput", "os-console-output", "A server's serial console log."),
    ("Consoles", "os-consoles", "Interactive consoles: noVNC and serial."),
    ("CreateBackup", "os-create-backup", "Rotated backups of a server as images."),
    ("DiskConfig", "OS-DCF", "The disk configuration attribute of servers."),
    ("ExtendedAvailabilityZone", "OS-EXT-AZ", "A server's availability zone in its details."),
    ("ExtendedServerAttributes", "OS-EXT-SRV-ATTR", "Host and instance names in server details."),
    ("ExtendedStatus", "OS-EXT-STS", "vm_state, task_state and power_state in server details."),
    ("ExtendedIps", "OS-EXT-IPS", "The type of each address of a server."),
    ("ExtendedIpsMac", "OS-EXT-IPS-MAC", "The MAC address of each address of a server."),
    ("ExtendedVolumes", "os-extended-volumes", "The volumes attached to a server in its details."),
    ("FlavorExtraSpecs", "os-flavor-extra-specs", "Extra specs of flavors."),
    ("FlavorRxtx", "os-flavor-rxtx", "The rxtx_factor of flavors."),
    ("FlavorSwap", "os-flavor-swap", "The swap size of flavors."),
    ("FlavorExtraData", "OS-FLV-EXT-DATA", "Ephemeral disk sizes of flavors."),
    ("FlavorDisabled", "OS-FLV-DISABLED", "Whether a flavor is disabled."),
    ("FlavorManage", "os-flavor-manage", "Creating and deleting flavors."),
    ("FlavorAccess", "os-flavor-access", "Private flavors and the projects that may use them."),
    ("FloatingIpPools", "os-floating-ip-pools", "The pools floating IPs come from (until 2.35)."),
    ("FloatingIps", "os-floating-ips", "Floating IPs, and adding them to servers (until 2.35 and 2.43)."),
    ("Hosts", "os-hosts", "The hosts and the services on them."),
    ("Hypervisors", "os-hypervisors", "Compute nodes and what they hold."),
    ("InstanceActions", "os-instance-actions", "The actions taken on a server, and their events."),
    ("Keypairs", "os-keypairs", "SSH keypairs."),
    ("LockServer", "os-lock-server", "Locking and unlocking servers."),
    ("MigrateServer", "os-migrate-server", "Cold migration of servers."),
    ("Migrations", "os-migrations", "Resize and cold migrations."),
    ("MultipleCreate", "os-multiple-create", "Creating several servers in one request."),
    ("Networks", "os-networks", "The networks servers can use (until 2.35)."),
    ("OSInstanceUsageAuditLog", "os-instance_usage_audit_log", "Audits of server usage."),
    ("PauseServer", "os-pause-server", "Pausing and unpausing servers."),
    ("QuotaClasses", "os-quota-class-sets", "The default quotas."),
    ("Quotas", "os-quota-sets", "Per-project quotas."),
    ("RemoteConsoles", "os-remote-consoles", "noVNC and serial consoles."),
    ("SecurityGroups", "os-security-groups", "Security groups of servers."),
    ("SchedulerHints", "OS-SCH-HNT", "Scheduler hints when creating servers."),
    ("ServerDiagnostics", "os-server-diagnostics", "A server's diagnostics."),
    ("ServerExternalEvents", "os-server-external-events", "Events other services send about servers."),
    ("ServerGroups", "os-server-groups", "Affinity and anti-affinity groups of servers."),
    ("ServerMetadata", "server-metadata", "Metadata of servers."),
    ("ServerPassword", "os-server-password", "The password a guest posted."),
    ("ServerStartStop", "os-server-start-stop", "Starting and stopping servers."),
    ("Services", "os-services", "Compute services, enabling and disabling them."),
    ("SimpleTenantUsage", "os-simple-tenant-usage", "Usage of servers by project."),
    ("SuspendServer", "os-suspend-server", "Suspending and resuming servers."),
    ("OSTenantNetworks", "os-tenant-networks", "A project's networks (until 2.35)."),
    ("UserData", "os-user-data", "User data given to a server at its creation."),
    ("Volumes", "os-volumes", "Volumes and their snapshots, from the volume service (until 2.35)."),
]
_UPDATED = "2014-12-03T00:00:00Z"


def _shown(name: str, alias: str, description: str) -> dict[str, object]:
    return {"name": name, "alias": alias, "description": description, "links": [],
            "namespace": "http://docs.openstack.org/compute/ext/fake_xml", "updated": _UPDATED}


async def list_extensions(request: web.Request) -> web.Response:
    return w.dump({"extensions": [_shown(*e) for e in EXTENSIONS]})


async def show_extension(request: web.Request) -> web.Response:
    alias = request.match_info["alias"]
    for extension in EXTENSIONS:
        if extension[1] == alias:
            return w.dump({"extension": _shown(*extension)})
    raise errors.NotFound("Extension could not be found.")
