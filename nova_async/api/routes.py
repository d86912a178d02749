"""The compute API's one route table."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import faults, microversion
from nova_async.api.handlers import (
    aggregates,
    assisted_volume_snapshots,
    availability_zones,
    console_proxy,
    diagnostics,
    events,
    extensions,
    flavors,
    floating_ips,
    images,
    instance_actions,
    keypairs,
    os_hosts,
    os_migrations,
    os_networks,
    os_services,
    os_volumes,
    quota_class_sets,
    quota_sets,
    remote_consoles,
    security_groups,
    server_actions,
    server_external_events,
    server_groups,
    server_ips,
    server_meta,
    server_password,
    server_shares,
    simple_tenant_usage,
    usage_audit_log,
    servers,
    versions,
    volume_attachments,
)
from nova_async.api.remote_consoles import SERIAL_PATH, VNC_PATH
from nova_async.api.state import STATE, ApiState
from nova_async.common import web as w

V = "/v2.1"

ROUTES = [
    ("GET", "", versions.list_versions),
    ("GET", "/", versions.list_versions),
    ("GET", V, versions.show_version),
    ("GET", V + "/", versions.show_version),

    ("GET", V + "/events", events.list_events),   # ours: the server event stream, every microversion

    ("GET", V + "/extensions", extensions.list_extensions),
    ("GET", V + "/extensions/{alias}", extensions.show_extension),

    ("GET", V + "/flavors", flavors.list_flavors),
    ("POST", V + "/flavors", flavors.create_flavor),
    ("GET", V + "/flavors/detail", flavors.list_flavors_detail),
    ("GET", V + "/flavors/{flavor_id}", flavors.show_flavor),
    ("PUT", V + "/flavors/{flavor_id}", flavors.update_flavor),
    ("POST", V + "/flavors/{flavor_id}/action", flavors.flavor_action),
    ("GET", V + "/flavors/{flavor_id}/os-flavor-access", flavors.list_flavor_access),
    ("DELETE", V + "/flavors/{flavor_id}", flavors.delete_flavor),
    ("GET", V + "/flavors/{flavor_id}/os-extra_specs", flavors.list_extra_specs),
    ("POST", V + "/flavors/{flavor_id}/os-extra_specs", flavors.create_extra_specs),
    ("GET", V + "/flavors/{flavor_id}/os-extra_specs/{key}", flavors.show_extra_spec),
    ("PUT", V + "/flavors/{flavor_id}/os-extra_specs/{key}", flavors.update_extra_spec),
    ("DELETE", V + "/flavors/{flavor_id}/os-extra_specs/{key}", flavors.delete_extra_spec),

    ("GET", V + "/os-services", os_services.list_services),
    ("GET", V + "/os-migrations", os_migrations.list_migrations),
    ("POST", V + "/os-server-external-events", server_external_events.create_events),
    ("POST", V + "/os-assisted-volume-snapshots", assisted_volume_snapshots.create_snapshot),
    ("DELETE", V + "/os-assisted-volume-snapshots/{snapshot_id}", assisted_volume_snapshots.delete_snapshot),
    ("PUT", V + "/os-services/{service_id}", os_services.update_service),
    ("DELETE", V + "/os-services/{service_id}", os_services.delete_service),
    ("GET", V + "/os-availability-zone", availability_zones.list_zones),
    ("GET", V + "/os-quota-sets/{project_id}", quota_sets.show_quota_set),
    ("GET", V + "/os-quota-sets/{project_id}/defaults", quota_sets.show_defaults),
    ("GET", V + "/os-quota-sets/{project_id}/detail", quota_sets.show_detail),
    ("PUT", V + "/os-quota-sets/{project_id}", quota_sets.update_quota_set),
    ("GET", V + "/os-networks", os_networks.list_networks),
    ("GET", V + "/os-networks/{network_id}", os_networks.show_network),
    ("GET", V + "/os-tenant-networks", os_networks.list_tenant_networks),
    ("GET", V + "/os-tenant-networks/{network_id}", os_networks.show_tenant_network),
    ("GET", V + "/os-quota-class-sets/{class_name}", quota_class_sets.show_class),
    ("PUT", V + "/os-quota-class-sets/{class_name}", quota_class_sets.update_class),
    ("DELETE", V + "/os-quota-sets/{project_id}", quota_sets.delete_quota_set),
    ("GET", V + "/images", images.list_images),
    ("GET", V + "/images/detail", images.list_images_detail),
    ("GET", V + "/images/{image_id}", images.show_image),
    ("DELETE", V + "/images/{image_id}", images.delete_image),
    ("GET", V + "/images/{image_id}/metadata", images.show_metadata),
    ("POST", V + "/images/{image_id}/metadata", images.add_metadata),
    ("PUT", V + "/images/{image_id}/metadata", images.replace_metadata),
    ("GET", V + "/images/{image_id}/metadata/{key}", images.show_metadata_item),
    ("PUT", V + "/images/{image_id}/metadata/{key}", images.set_metadata_item),
    ("DELETE", V + "/images/{image_id}/metadata/{key}", images.delete_metadata_item),

    ("GET", V + "/limits", quota_sets.show_limits),
    ("GET", V + "/os-instance_usage_audit_log", usage_audit_log.list_audit_log),
    ("GET", V + "/os-instance_usage_audit_log/{before_timestamp}", usage_audit_log.show_audit_log),
    ("GET", V + "/os-keypairs", keypairs.list_keypairs),
    ("POST", V + "/os-keypairs", keypairs.create_keypair),
    ("GET", V + "/os-keypairs/{name}", keypairs.show_keypair),
    ("DELETE", V + "/os-keypairs/{name}", keypairs.delete_keypair),
    ("GET", V + "/os-aggregates", aggregates.list_aggregates),
    ("POST", V + "/os-aggregates", aggregates.create_aggregate),
    ("GET", V + "/os-aggregates/{aggregate_id}", aggregates.show_aggregate),
    ("PUT", V + "/os-aggregates/{aggregate_id}", aggregates.update_aggregate),
    ("DELETE", V + "/os-aggregates/{aggregate_id}", aggregates.delete_aggregate),
    ("POST", V + "/os-aggregates/{aggregate_id}/action", aggregates.aggregate_action),
    ("GET", V + "/os-server-groups", server_groups.list_server_groups),
    ("POST", V + "/os-server-groups", server_groups.create_server_group),
    ("GET", V + "/os-server-groups/{group_id}", server_groups.show_server_group),
    ("DELETE", V + "/os-server-groups/{group_id}", server_groups.delete_server_group),
    ("GET", V + "/os-availability-zone/detail", availability_zones.list_zones_detail),
    ("GET", V + "/os-hosts", os_hosts.list_hosts),
    ("GET", V + "/os-hosts/{host_name}", os_hosts.show_host),
    ("PUT", V + "/os-hosts/{host_name}", os_hosts.update_host),
    ("GET", V + "/os-hosts/{host_name}/reboot", os_hosts.host_power_action),
    ("GET", V + "/os-hosts/{host_name}/shutdown", os_hosts.host_power_action),
    ("GET", V + "/os-hosts/{host_name}/startup", os_hosts.host_power_action),
    ("GET", V + "/os-hypervisors", os_services.list_hypervisors),
    ("GET", V + "/os-hypervisors/detail", os_services.list_hypervisors_detail),
    ("GET", V + "/os-hypervisors/statistics", os_services.hypervisor_statistics),
    ("GET", V + "/os-hypervisors/{hypervisor_id}", os_services.show_hypervisor),
    ("GET", V + "/os-hypervisors/{hypervisor_id}/uptime", os_services.hypervisor_uptime),
    ("GET", V + "/os-hypervisors/{pattern}/search", os_services.search_hypervisors),
    ("GET", V + "/os-hypervisors/{pattern}/servers", os_services.hypervisor_servers),

    ("GET", V + "/os-simple-tenant-usage", simple_tenant_usage.list_usages),
    ("GET", V + "/os-simple-tenant-usage/{tenant_id}", simple_tenant_usage.show_usage),

    ("GET", V + "/servers", servers.list_servers),
    ("POST", V + "/servers", servers.create_server),
    ("GET", V + "/servers/detail", servers.list_servers_detail),
    ("GET", V + "/servers/{server_id}", servers.show_server),
    ("PUT", V + "/servers/{server_id}", servers.update_server),
    ("DELETE", V + "/servers/{server_id}", servers.delete_server),
    ("GET", V + "/servers/{server_id}/ips", server_ips.list_ips),
    ("GET", V + "/servers/{server_id}/ips/{network_label}", server_ips.show_ips),
    ("GET", V + "/servers/{server_id}/os-server-password", server_password.show_password),
    ("GET", V + "/servers/{server_id}/shares", server_shares.list_shares),
    ("POST", V + "/servers/{server_id}/shares", server_shares.attach_share),
    ("GET", V + "/servers/{server_id}/shares/{share_id}", server_shares.show_share),
    ("DELETE", V + "/servers/{server_id}/shares/{share_id}", server_shares.detach_share),
    ("DELETE", V + "/servers/{server_id}/os-server-password", server_password.clear_password),
    ("GET", V + "/servers/{server_id}/metadata", server_meta.show_metadata),
    ("POST", V + "/servers/{server_id}/metadata", server_meta.merge_metadata),
    ("PUT", V + "/servers/{server_id}/metadata", server_meta.replace_metadata),
    ("GET", V + "/servers/{server_id}/metadata/{key}", server_meta.show_metadata_item),
    ("PUT", V + "/servers/{server_id}/metadata/{key}", server_meta.set_metadata_item),
    ("DELETE", V + "/servers/{server_id}/metadata/{key}", server_meta.delete_metadata_item),
    ("GET", V + "/servers/{server_id}/tags", server_meta.show_tags),
    ("PUT", V + "/servers/{server_id}/tags", server_meta.replace_tags),
    ("DELETE", V + "/servers/{server_id}/tags", server_meta.delete_tags),
    ("GET", V + "/servers/{server_id}/tags/{tag}", server_meta.check_tag),
    ("PUT", V + "/servers/{server_id}/tags/{tag}", server_meta.add_tag),
    ("DELETE", V + "/servers/{server_id}/tags/{tag}", server_meta.delete_tag),
    ("POST", V + "/servers/{server_id}/action", server_actions.create_server_action),
    ("POST", V + "/servers/{server_id}/remote-consoles", remote_consoles.create_remote_console),
    ("GET", V + "/servers/{server_id}/diagnostics", diagnostics.show_diagnostics),
    ("GET", V + "/servers/{server_id}/os-security-groups", security_groups.list_server_security_groups),
    ("GET", V + "/servers/{server_id}/os-volume_attachments", volume_attachments.list_volume_attachments),
    ("POST", V + "/servers/{server_id}/os-volume_attachments", volume_attachments.create_volume_attachment),
    ("GET", V + "/servers/{server_id}/os-volume_attachments/{volume_id}",
     volume_attachments.show_volume_attachment),
    ("PUT", V + "/servers/{server_id}/os-volume_attachments/{volume_id}",
     volume_attachments.update_volume_attachment),
    ("DELETE", V + "/servers/{server_id}/os-volume_attachments/{volume_id}",
     volume_attachments.delete_volume_attachment),
    ("GET", V + "/os-security-groups", security_groups.list_security_groups),
    ("POST", V + "/os-security-groups", security_groups.create_security_group),
    ("GET", V + "/os-security-groups/{group_id}", security_groups.show_security_group),
    ("PUT", V + "/os-security-groups/{group_id}", security_groups.update_security_group),
    ("DELETE", V + "/os-security-groups/{group_id}", security_groups.delete_security_group),
    ("POST", V + "/os-security-group-rules", security_groups.create_security_group_rule),
    ("DELETE", V + "/os-security-group-rules/{rule_id}", security_groups.delete_security_group_rule),
    ("GET", V + "/os-floating-ips", floating_ips.list_floating_ips),
    ("POST", V + "/os-floating-ips", floating_ips.create_floating_ip),
    ("GET", V + "/os-floating-ips/{floating_ip_id}", floating_ips.show_floating_ip),
    ("DELETE", V + "/os-floating-ips/{floating_ip_id}", floating_ips.delete_floating_ip),
    ("GET", V + "/os-floating-ip-pools", floating_ips.list_floating_ip_pools),
    ("GET", V + "/os-volumes", os_volumes.list_volumes),
    ("POST", V + "/os-volumes", os_volumes.create_volume),
    ("GET", V + "/os-volumes/detail", os_volumes.list_volumes),
    ("GET", V + "/os-volumes/{volume_id}", os_volumes.show_volume),
    ("DELETE", V + "/os-volumes/{volume_id}", os_volumes.delete_volume),
    ("GET", V + "/os-snapshots", os_volumes.list_snapshots),
    ("POST", V + "/os-snapshots", os_volumes.create_snapshot),
    ("GET", V + "/os-snapshots/detail", os_volumes.list_snapshots),
    ("GET", V + "/os-snapshots/{snapshot_id}", os_volumes.show_snapshot),
    ("DELETE", V + "/os-snapshots/{snapshot_id}", os_volumes.delete_snapshot),
    # The console proxy (WebSockets, token in the query) and the noVNC client's files.
    ("GET", SERIAL_PATH, console_proxy.serial_console),
    ("GET", VNC_PATH, console_proxy.vnc_console),
    ("GET", "/console/novnc/{path:.*}", console_proxy.novnc_file),
    ("GET", V + "/servers/{server_id}/os-instance-actions", instance_actions.list_instance_actions),
    ("GET", V + "/servers/{server_id}/os-instance-actions/{request_id}", instance_actions.show_instance_action),
]


_PAGING = ("limit", "marker")
_SERVER_LIST = (
    "user_id", "project_id", "tenant_id", "launch_index", "image_ref", "image", "kernel_id", "ramdisk_id",
    "hostname", "key_name", "power_state", "vm_state", "task_state", "host", "node", "flavor", "reservation_id",
    "launched_at", "terminated_at", "availability_zone", "name", "display_name", "description",
    "display_description", "locked_by", "uuid", "root_device_name", "config_drive", "access_ip_v4",
    "access_ip_v6", "auto_disk_config", "progress", "sort_key", "sort_dir", "all_tenants", "soft_deleted",
    "deleted", "status", "changes-since", "ip", "ip6", "created_at", "tags", "tags-any", "not-tags",
    "not-tags-any", "changes-before", "locked", "_*", *_PAGING)   # "_*": any name starting with _

# The query parameters each GET takes, as Nova's query schemas list them (names Nova takes and
# nova-async ignores are here too, so a client that sends them gets what Nova gives), and the
# microversion from which any other is a 400: 2.102 for every API, earlier for some. A GET not
# listed takes none from 2.102.
QUERY_PARAMS: dict[object, tuple[microversion.Version, frozenset[str]]] = {
    handler: (microversion.Version(*since), frozenset(names)) for handler, since, names in (
        (servers.list_servers, (2, 75), _SERVER_LIST),
        (servers.list_servers_detail, (2, 75), _SERVER_LIST),
        (flavors.list_flavors, (2, 102), ("is_public", "minRam", "minDisk", "sort_key", "sort_dir", "name", *_PAGING)),
        (flavors.list_flavors_detail, (2, 102),
         ("is_public", "minRam", "minDisk", "sort_key", "sort_dir", "name", *_PAGING)),
        (keypairs.list_keypairs, (2, 75), ("user_id", *_PAGING)),
        (keypairs.show_keypair, (2, 75), ("user_id",)),
        (server_groups.list_server_groups, (2, 75), ("all_projects", "limit", "offset")),
        (os_services.list_services, (2, 75), ("host", "binary")),
        (quota_sets.show_limits, (2, 75), ("tenant_id",)),
        (quota_sets.show_quota_set, (2, 75), ("user_id",)),
        (quota_sets.show_detail, (2, 75), ("user_id",)),
        (simple_tenant_usage.list_usages, (2, 75), ("start", "end", "detailed", *_PAGING)),
        (simple_tenant_usage.show_usage, (2, 75), ("start", "end", *_PAGING)),
        (os_services.list_hypervisors, (2, 53), ("hypervisor_hostname_pattern", "with_servers", *_PAGING)),
        (os_services.list_hypervisors_detail, (2, 53), ("hypervisor_hostname_pattern", "with_servers", *_PAGING)),
        (os_services.show_hypervisor, (2, 53), ("with_servers",)),
        (os_migrations.list_migrations, (2, 59),
         ("hidden", "host", "instance_uuid", "source_compute", "status", "migration_type", "changes-since",
          "changes-before", "user_id", "project_id", *_PAGING)),
        (instance_actions.list_instance_actions, (2, 102), ("changes-since", "changes-before", *_PAGING)),
        (volume_attachments.list_volume_attachments, (2, 102), ("limit", "offset")),
        (console_proxy.serial_console, (2, 102), ("token",)),
        (console_proxy.vnc_console, (2, 102), ("token", "path")),
        (events.list_events, (2, 1), ("all_tenants", "server", "since", "notifications")),
    )}


def build_app(state: ApiState) -> web.Application:
    app = w.api_app(faults.render_fault)
    app.middlewares.append(microversion.middleware)
    app[microversion.QUERY_PARAMS] = QUERY_PARAMS
    app[STATE] = state
    w.add_routes(app, ROUTES + _legacy_v2(ROUTES), head=True)
    app.on_shutdown.append(_end_event_streams)
    return app


async def _end_event_streams(app: web.Application) -> None:
    """Open event streams end as HTTP intake stops: otherwise shutdown would wait for them."""
    app[STATE].events.close()


def _legacy_v2(routes):
    """Every v2.1 route again under /v2: the legacy v2.0 API (microversion.legacy_v2)."""
    return [(method, "/v2" + path.removeprefix(V), handler)
            for method, path, handler in routes if path == V or path.startswith(V + "/")]
