"""The compute API's one route table."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import faults, microversion
from nova_async.api.handlers import (
    aggregates,
    availability_zones,
    console_proxy,
    diagnostics,
    flavors,
    instance_actions,
    keypairs,
    os_migrations,
    os_services,
    quota_sets,
    remote_consoles,
    server_actions,
    server_groups,
    server_meta,
    servers,
    versions,
)
from nova_async.api.remote_consoles import SERIAL_PATH, VNC_PATH
from nova_async.api.state import STATE, ApiState
from nova_async.common import web as w

V = "/v2.1"


def build(state: ApiState) -> web.Application:
    app = w.api_app(faults.render_fault)
    app.middlewares.append(microversion.middleware)
    app[STATE] = state
    app.router.add_routes([
        web.get("", versions.list_versions),
        web.get("/", versions.list_versions),
        web.get(V, versions.show_version),
        web.get(V + "/", versions.show_version),

        web.get(V + "/flavors", flavors.list_flavors),
        web.post(V + "/flavors", flavors.create_flavor),
        web.get(V + "/flavors/detail", flavors.list_flavors_detail),
        web.get(V + "/flavors/{flavor_id}", flavors.show_flavor),
        web.delete(V + "/flavors/{flavor_id}", flavors.delete_flavor),
        web.get(V + "/flavors/{flavor_id}/os-extra_specs", flavors.list_extra_specs),
        web.post(V + "/flavors/{flavor_id}/os-extra_specs", flavors.create_extra_specs),
        web.get(V + "/flavors/{flavor_id}/os-extra_specs/{key}", flavors.show_extra_spec),
        web.put(V + "/flavors/{flavor_id}/os-extra_specs/{key}", flavors.update_extra_spec),
        web.delete(V + "/flavors/{flavor_id}/os-extra_specs/{key}", flavors.delete_extra_spec),

        web.get(V + "/os-services", os_services.list_services),
        web.get(V + "/os-migrations", os_migrations.list_migrations),
        web.put(V + "/os-services/{service_id}", os_services.update_service),
        web.get(V + "/os-availability-zone", availability_zones.list_zones),
        web.get(V + "/os-quota-sets/{project_id}", quota_sets.show_quota_set),
        web.get(V + "/os-quota-sets/{project_id}/defaults", quota_sets.show_defaults),
        web.get(V + "/os-quota-sets/{project_id}/detail", quota_sets.show_detail),
        web.put(V + "/os-quota-sets/{project_id}", quota_sets.update_quota_set),
        web.delete(V + "/os-quota-sets/{project_id}", quota_sets.delete_quota_set),
        web.get(V + "/limits", quota_sets.show_limits),
        web.get(V + "/os-keypairs", keypairs.list_keypairs),
        web.post(V + "/os-keypairs", keypairs.create_keypair),
        web.get(V + "/os-keypairs/{name}", keypairs.show_keypair),
        web.delete(V + "/os-keypairs/{name}", keypairs.delete_keypair),
        web.get(V + "/os-aggregates", aggregates.list_aggregates),
        web.post(V + "/os-aggregates", aggregates.create_aggregate),
        web.get(V + "/os-aggregates/{aggregate_id}", aggregates.show_aggregate),
        web.put(V + "/os-aggregates/{aggregate_id}", aggregates.update_aggregate),
        web.delete(V + "/os-aggregates/{aggregate_id}", aggregates.delete_aggregate),
        web.post(V + "/os-aggregates/{aggregate_id}/action", aggregates.aggregate_action),
        web.get(V + "/os-server-groups", server_groups.list_server_groups),
        web.post(V + "/os-server-groups", server_groups.create_server_group),
        web.get(V + "/os-server-groups/{group_id}", server_groups.show_server_group),
        web.delete(V + "/os-server-groups/{group_id}", server_groups.delete_server_group),
        web.get(V + "/os-availability-zone/detail", availability_zones.list_zones_detail),
        web.get(V + "/os-hypervisors", os_services.list_hypervisors),
        web.get(V + "/os-hypervisors/detail", os_services.list_hypervisors_detail),

        web.get(V + "/servers", servers.list_servers),
        web.post(V + "/servers", servers.create_server),
        web.get(V + "/servers/detail", servers.list_servers_detail),
        web.get(V + "/servers/{server_id}", servers.show_server),
        web.put(V + "/servers/{server_id}", servers.update_server),
        web.delete(V + "/servers/{server_id}", servers.delete_server),
        web.get(V + "/servers/{server_id}/metadata", server_meta.show_metadata),
        web.post(V + "/servers/{server_id}/metadata", server_meta.merge_metadata),
        web.put(V + "/servers/{server_id}/metadata", server_meta.replace_metadata),
        web.get(V + "/servers/{server_id}/metadata/{key}", server_meta.show_metadata_item),
        web.put(V + "/servers/{server_id}/metadata/{key}", server_meta.set_metadata_item),
        web.delete(V + "/servers/{server_id}/metadata/{key}", server_meta.delete_metadata_item),
        web.get(V + "/servers/{server_id}/tags", server_meta.show_tags),
        web.put(V + "/servers/{server_id}/tags", server_meta.replace_tags),
        web.delete(V + "/servers/{server_id}/tags", server_meta.delete_tags),
        web.get(V + "/servers/{server_id}/tags/{tag}", server_meta.check_tag),
        web.put(V + "/servers/{server_id}/tags/{tag}", server_meta.add_tag),
        web.delete(V + "/servers/{server_id}/tags/{tag}", server_meta.delete_tag),
        web.post(V + "/servers/{server_id}/action", server_actions.create_server_action),
        web.post(V + "/servers/{server_id}/remote-consoles", remote_consoles.create_remote_console),
        web.get(V + "/servers/{server_id}/diagnostics", diagnostics.show_diagnostics),
        # The console proxy (WebSockets, token in the query) and the noVNC client's files.
        web.get(SERIAL_PATH, console_proxy.serial_console),
        web.get(VNC_PATH, console_proxy.vnc_console),
        web.get("/console/novnc/{path:.*}", console_proxy.novnc_file),
        web.get(V + "/servers/{server_id}/os-instance-actions", instance_actions.list_instance_actions),
        web.get(V + "/servers/{server_id}/os-instance-actions/{request_id}",
                instance_actions.show_instance_action),
    ])
    return app
