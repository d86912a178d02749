"""The image API's one route table and its fault format.

Glance answers errors in plain text, "<status> <title>" then the message; the clients only
look at the status code, so the message is for the person reading it."""

from __future__ import annotations

from http import HTTPStatus

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import add_routes, api_app
from nova_async.image.handlers import actions, image_data, images, info, members, schemas, tags, versions
from nova_async.image.state import STATE, ImageApi

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
    ("POST", "/v2/images/{image_id}/actions/deactivate", actions.deactivate),
    ("POST", "/v2/images/{image_id}/actions/reactivate", actions.reactivate),
    ("PUT", "/v2/images/{image_id}/tags/{tag}", tags.add_tag),
    ("DELETE", "/v2/images/{image_id}/tags/{tag}", tags.remove_tag),
    ("GET", "/v2/images/{image_id}/members", members.list_members),
    ("POST", "/v2/images/{image_id}/members", members.create_member),
    ("GET", "/v2/images/{image_id}/members/{member_id}", members.show_member),
    ("PUT", "/v2/images/{image_id}/members/{member_id}", members.update_member),
    ("DELETE", "/v2/images/{image_id}/members/{member_id}", members.delete_member),
    ("GET", "/v2/schemas/{name}", schemas.show_schema),
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
