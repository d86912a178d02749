"""The volume API's one route table and its fault format.

Every resource is served twice, as Cinder's v3 does: under /v3/{project_id}/… (what a
catalog URL with the project in it leads to) and under /v3/… (the project from the token).
The routes without a project are registered first, so /v3/volumes is never taken for a
project named "volumes".

Cinder answers errors as {"<name>": {"message": ..., "code": N}}, the name following the
status (itemNotFound, badRequest, overLimit, …); quota errors are 413 overLimit there, where
our hierarchy has OverQuota as 403, so this is the one place that turns them into 413."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import add_routes, api_app, dump
from nova_async.volume import microversion
from nova_async.volume.handlers import actions, attachments, limits, quotas, snapshots, types, versions, volumes
from nova_async.volume.state import STATE, VolumeApi

RESOURCES = [
    ("GET", "/volumes", volumes.list_volumes),
    ("POST", "/volumes", volumes.create_volume),
    ("GET", "/volumes/detail", volumes.list_volumes_detail),
    ("GET", "/volumes/{volume_id}", volumes.show_volume),
    ("PUT", "/volumes/{volume_id}", volumes.update_volume),
    ("DELETE", "/volumes/{volume_id}", volumes.delete_volume),
    ("POST", "/volumes/{volume_id}/action", actions.volume_action),
    ("GET", "/volumes/{volume_id}/metadata", volumes.show_volume_metadata),
    ("POST", "/volumes/{volume_id}/metadata", volumes.create_volume_metadata),
    ("PUT", "/volumes/{volume_id}/metadata", volumes.update_volume_metadata),
    ("GET", "/volumes/{volume_id}/metadata/{key}", volumes.show_volume_metadata_item),
    ("PUT", "/volumes/{volume_id}/metadata/{key}", volumes.update_volume_metadata_item),
    ("DELETE", "/volumes/{volume_id}/metadata/{key}", volumes.delete_volume_metadata_item),
    ("GET", "/snapshots", snapshots.list_snapshots),
    ("POST", "/snapshots", snapshots.create_snapshot),
    ("GET", "/snapshots/detail", snapshots.list_snapshots_detail),
    ("GET", "/snapshots/{snapshot_id}", snapshots.show_snapshot),
    ("PUT", "/snapshots/{snapshot_id}", snapshots.update_snapshot),
    ("DELETE", "/snapshots/{snapshot_id}", snapshots.delete_snapshot),
    ("GET", "/types", types.list_types),
    ("GET", "/types/{type_id}", types.show_type),
    ("GET", "/limits", limits.show_limits),
    ("GET", "/os-quota-sets/{target}", quotas.show_quota_set),
    ("GET", "/os-quota-sets/{target}/defaults", quotas.show_quota_defaults),
    ("PUT", "/os-quota-sets/{target}", quotas.update_quota_set),
    ("DELETE", "/os-quota-sets/{target}", quotas.delete_quota_set),
    *attachments.ROUTES,
]


def route_table(resources: list = RESOURCES) -> list:
    return [
        ("GET", "", versions.show_versions),
        ("GET", "/", versions.show_versions),
        ("GET", "/v3", versions.show_v3),
        ("GET", "/v3/", versions.show_v3),
        *[(method, f"/v3{path}", handler) for method, path, handler in resources],
        *[(method, f"/v3/{{project_id}}{path}", handler) for method, path, handler in resources],
        ("GET", "/v3/{project_id}", versions.show_v3),
        ("GET", "/v3/{project_id}/", versions.show_v3),
    ]


FAULT_NAMES = {400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound", 405: "badMethod",
               409: "conflictingRequest", 413: "overLimit", 415: "badMediaType", 501: "notImplemented",
               503: "serviceUnavailable"}


def render_fault(exc: errors.NovaAsyncError, request_id: str) -> web.Response:
    status = 413 if isinstance(exc, errors.OverQuota) else exc.status
    name = FAULT_NAMES.get(status, "computeFault")
    return dump({name: {"message": exc.message, "code": status}}, status=status)


def build_app(state: VolumeApi, resources: list = RESOURCES) -> web.Application:
    app = api_app(render_fault)
    app.middlewares.append(microversion.microversion_middleware)
    app[STATE] = state
    add_routes(app, route_table(resources))
    return app
