"""Every placement URL in one table, and the sub-application that serves them.

The order of middleware is fixed by `api_app`: faults rendered in placement's format, then
authentication; microversion negotiation runs last, so even the public version document
refuses a version we do not speak. Outside them all, a fault is put in the media type the
client's Accept asks for (JSON unless it prefers HTML or takes neither)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import add_routes, api_app
from nova_async.db.pool import Pool
from nova_async.placement import media, microversion
from nova_async.placement.handlers import (allocation_candidates, allocations, inventories, common,
                                           resource_providers, root, usages)
from nova_async.placement.handlers import catalog, provider_allocations

ROUTES = {
    ("GET", ""): root.show_versions,
    ("GET", "/"): root.show_versions,
    ("GET", "/resource_providers"): resource_providers.list_resource_providers,
    ("POST", "/resource_providers"): resource_providers.create_resource_provider,
    ("GET", "/resource_providers/{uuid}"): resource_providers.show_resource_provider,
    ("DELETE", "/resource_providers/{uuid}"): resource_providers.delete_resource_provider,
    ("PUT", "/resource_providers/{uuid}"): resource_providers.update_resource_provider,
    ("GET", "/resource_providers/{uuid}/allocations"): provider_allocations.list_provider_allocations,
    ("POST", "/allocations"): allocations.create_allocations,
    ("GET", "/usages"): usages.show_project_usages,
    ("GET", "/resource_providers/{uuid}/inventories"): inventories.list_inventories,
    ("POST", "/resource_providers/{uuid}/inventories"): inventories.create_inventory,
    ("PUT", "/resource_providers/{uuid}/inventories"): inventories.update_inventories,
    ("DELETE", "/resource_providers/{uuid}/inventories"): inventories.delete_inventories,
    ("GET", "/resource_providers/{uuid}/inventories/{resource_class}"): inventories.show_inventory,
    ("PUT", "/resource_providers/{uuid}/inventories/{resource_class}"): inventories.update_inventory,
    ("DELETE", "/resource_providers/{uuid}/inventories/{resource_class}"): inventories.delete_inventory,
    ("GET", "/resource_providers/{uuid}/usages"): usages.show_usages,
    ("GET", "/allocation_candidates"): allocation_candidates.list_allocation_candidates,
    ("GET", "/resource_classes"): catalog.list_resource_classes,
    ("POST", "/resource_classes"): catalog.create_resource_class,
    ("GET", "/resource_classes/{name}"): catalog.show_resource_class,
    ("PUT", "/resource_classes/{name}"): catalog.put_resource_class,
    ("DELETE", "/resource_classes/{name}"): catalog.delete_resource_class,
    ("GET", "/traits"): catalog.list_traits,
    ("GET", "/traits/{name}"): catalog.show_trait,
    ("PUT", "/traits/{name}"): catalog.put_trait,
    ("DELETE", "/traits/{name}"): catalog.delete_trait,
    ("GET", "/resource_providers/{uuid}/traits"): catalog.list_provider_traits,
    ("PUT", "/resource_providers/{uuid}/traits"): catalog.update_provider_traits,
    ("DELETE", "/resource_providers/{uuid}/traits"): catalog.delete_provider_traits,
    ("GET", "/resource_providers/{uuid}/aggregates"): catalog.list_provider_aggregates,
    ("PUT", "/resource_providers/{uuid}/aggregates"): catalog.update_provider_aggregates,
    ("GET", "/allocations/{consumer}"): allocations.show_allocations,
    ("PUT", "/allocations/{consumer}"): allocations.update_allocations,
    ("DELETE", "/allocations/{consumer}"): allocations.delete_allocations,
}


def build_app(pool: Pool) -> tuple[str, web.Application]:
    app = api_app(microversion.render_fault)
    app.middlewares.insert(0, media.fault_media)
    app.middlewares.append(microversion.negotiate)
    app.middlewares.append(media.media_types)
    app.on_response_prepare.append(microversion.echo_version)
    app[common.POOL] = pool
    add_routes(app, ((method, path, handler) for (method, path), handler in ROUTES.items()))
    return common.PREFIX, app
