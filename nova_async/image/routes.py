"""The image API's one route table and its fault format.

Glance answers errors in plain text, "<status> <title>" then the message; the clients only
look at the status code, so the message is for the person reading it."""

from __future__ import annotations

from http import HTTPStatus

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import add_routes, api_app
from nova_async.image.handlers import (actions, image_data, image_tasks, images, info, members, metadef_definitions,
                                       metadef_namespaces, metadef_resource_types, schemas, tags, tasks, versions)
from nova_async.image.state import STATE, ImageApi

_NS = "/v2/metadefs/namespaces/{namespace}"
# A namespace's objects, properties and tags share their handlers.
_DEFS = _NS + "/{kind:objects|properties|tags}"

ROUTES = [
    ("GET", "", versions.show_versions),
    ("GET", "/", versions.show_versions),
    ("GET", "/v2", versions.show_versions),
    ("GET", "/v2/", versions.show_versions),
    ("GET", "/v2/images", images.list_images),
    ("POST", "/v2/images", images.create_image),
    ("GET", "/v2/images/{image_id}", images.show_image),
    ("PATCH", "/v2/images/{image_id}", images.update_image),
    ("DELETE", "/v2/images/{image_id}", images.delete_image),
    ("PUT", "/v2/images/{image_id}/file", image_data.update_image_file),
    ("GET", "/v2/images/{image_id}/file", image_data.show_image_file),
    ("GET", "/v2/images/{image_id}/tasks", image_tasks.list_image_tasks),
    ("POST", "/v2/images/{image_id}/actions/deactivate", actions.deactivate),
    ("POST", "/v2/images/{image_id}/actions/reactivate", actions.reactivate),
    ("PUT", "/v2/images/{image_id}/tags/{tag}", tags.add_tag),
    ("DELETE", "/v2/images/{image_id}/tags/{tag}", tags.remove_tag),
    ("GET", "/v2/images/{image_id}/members", members.list_members),
    ("POST", "/v2/images/{image_id}/members", members.create_member),
    ("GET", "/v2/images/{image_id}/members/{member_id}", members.show_member),
    ("PUT", "/v2/images/{image_id}/members/{member_id}", members.update_member),
    ("DELETE", "/v2/images/{image_id}/members/{member_id}", members.delete_member),
    ("GET", "/v2/tasks", tasks.list_tasks),
    ("POST", "/v2/tasks", tasks.create_task),
    ("GET", "/v2/tasks/{task_id}", tasks.show_task),
    ("GET", "/v2/schemas/{name}", schemas.show_schema),
    ("GET", "/v2/schemas/metadefs/{name}", schemas.show_metadef_schema),
    ("GET", "/v2/metadefs/resource_types", metadef_resource_types.list_resource_types),
    ("GET", "/v2/metadefs/namespaces", metadef_namespaces.list_namespaces),
    ("POST", "/v2/metadefs/namespaces", metadef_namespaces.create_namespace),
    ("GET", _NS, metadef_namespaces.show_namespace),
    ("PUT", _NS, metadef_namespaces.update_namespace),
    ("DELETE", _NS, metadef_namespaces.delete_namespace),
    ("GET", f"{_NS}/resource_types", metadef_resource_types.list_associations),
    ("POST", f"{_NS}/resource_types", metadef_resource_types.create_association),
    ("DELETE", f"{_NS}/resource_types/{{name}}", metadef_resource_types.delete_association),
    ("GET", _DEFS, metadef_definitions.list_definitions),
    ("POST", _DEFS, metadef_definitions.create_definition),
    ("DELETE", _DEFS, metadef_definitions.delete_definitions),
    ("GET", f"{_DEFS}/{{name}}", metadef_definitions.show_definition),
    ("PUT", f"{_DEFS}/{{name}}", metadef_definitions.update_definition),
    ("DELETE", f"{_DEFS}/{{name}}", metadef_definitions.delete_definition),
    ("POST", f"{_NS}/tags/{{name}}", metadef_definitions.create_tag),
    ("GET", "/v2/info/import", info.show_import_info),
]


def render_fault(exc: errors.NovaAsyncError, request_id: str) -> web.Response:
    try:
        title = HTTPStatus(exc.status).phrase
    except ValueError:
        title = "Error"
    return web.Response(status=exc.status, text=f"{exc.status} {title}\n\n{exc.message}\n",
                        content_type="text/plain")


def build_app(state: ImageApi) -> web.Application:
    app = api_app(render_fault)
    app[STATE] = state
    add_routes(app, ROUTES)
    return app
