"""The metadata service's HTTP side: one small aiohttp application per network, which knows
its network (the requester is found from it and the TCP peer: metadata_source.py), and the
paths Nova's metadata API answers (documents from common/instance_metadata.py):

    /                                        EC2 versions, then `latest`
    /<ec2 version>/                          meta-data/ and user-data (when there is some)
    /<ec2 version>/meta-data/...             instance-id, local-ipv4, public-keys/0/openssh-key …
    /openstack                               OpenStack versions, then `latest`
    /openstack/<version>/                    the files of that version
    /openstack/<version>/<file>              meta_data.json, network_data.json, user_data, …

Listings are text, one entry a line, directories with a trailing `/`; a trailing slash on
the request does not matter. Anything else, and anyone who is not an instance on this
network, gets 404; any method but GET (and HEAD), 405. Errors are plain text, like the
rest of this API."""

from __future__ import annotations

import json
import posixpath
from typing import Any

from aiohttp import web

from nova_async.common import errors, instance_metadata as im
from nova_async.common.web import API_NAME, error_middleware, request_middleware
from nova_async.dataplane.metadata_source import Requesters

NETWORK_ID = web.AppKey("metadata_network_id", str)
REQUESTERS = web.AppKey("metadata_requesters", Requesters)
JSON = "application/json"
TEXT = "text/plain"


def render_fault(exc: errors.NovaAsyncError, request_id: str) -> web.Response:
    return web.Response(status=exc.status, text=f"{exc.status} {exc.message}\n", content_type=TEXT)


def metadata_app(requesters: Requesters, network_id: str) -> web.Application:
    app = web.Application(middlewares=[request_middleware, error_middleware(render_fault)],
                          client_max_size=64 * 1024)
    app[API_NAME] = "metadata"
    app[NETWORK_ID] = network_id
    app[REQUESTERS] = requesters
    app.router.add_get("/{path:.*}", show)
    app.router.add_route("*", "/{path:.*}", refuse)
    return app


async def refuse(request: web.Request) -> web.Response:
    raise errors.MethodNotAllowed(f"The metadata service answers GET only, not {request.method}.")


async def show(request: web.Request) -> web.Response:
    # The TCP peer itself: never a header, never aiohttp's forwarded-aware view of it.
    peer = request.transport.get_extra_info("peername") if request.transport else None
    if not peer:
        raise errors.NotFound("The requester's address is unknown.")
    facts = await request.app[REQUESTERS].facts(request.app[NETWORK_ID], peer[0])
    body, content_type = lookup(facts, request.match_info["path"], peer[0])
    return web.Response(body=body, content_type=content_type)


def lookup(facts: im.InstanceFacts, path: str, address: str = "") -> tuple[bytes, str]:
    """What `path` holds for the instance `facts` describes: (body, content type)."""
    tokens = [t for t in posixpath.normpath("/" + path).split("/") if t]
    missing = errors.NotFound(f"There is nothing at /{'/'.join(tokens)}.")
    if tokens[:1] == ["openstack"]:
        return _openstack(facts, tokens[1:], missing)
    if not tokens:
        return _listing([*im.EC2_VERSIONS, im.LATEST]), TEXT
    version = tokens[0]
    if version not in im.EC2_VERSIONS and version != im.LATEST:
        raise missing
    tree: dict[str, Any] = {"meta-data": im.ec2_meta_data(facts, version, address)}
    if facts.user_data is not None:
        tree["user-data"] = facts.user_data
    node: Any = tree
    for token in tokens[1:]:
        if not isinstance(node, dict) or token not in node or token == im.PUBLIC_KEY_NAME:
            raise missing
        node = node[token]
    if isinstance(node, dict):
        return _ec2_listing(node), TEXT
    if isinstance(node, list):
        return _listing(node), TEXT
    return (node if isinstance(node, bytes) else str(node).encode()), TEXT


def _openstack(facts: im.InstanceFacts, tokens: list[str], missing: errors.NotFound) -> tuple[bytes, str]:
    if not tokens:
        return _listing([*im.OPENSTACK_VERSIONS, im.LATEST]), TEXT
    version = tokens[0]
    if (version not in im.OPENSTACK_VERSIONS and version != im.LATEST) or len(tokens) > 2:
        raise missing
    files = im.openstack_files(facts, version)
    if len(tokens) == 1:
        return _listing(files), TEXT
    name = tokens[1]
    if name not in files:
        raise missing
    if name == "user_data":
        return facts.user_data or b"", TEXT
    if name == "meta_data.json":
        document: Any = im.openstack_meta_data(facts, version)
    elif name == "network_data.json":
        document = im.network_data(facts.nics)
    else:   # vendor_data.json, vendor_data2.json: no vendor data here
        document = {}
    return json.dumps(document).encode(), JSON


def _listing(entries: list[str]) -> bytes:
    return "\n".join(entries).encode()


def _ec2_listing(directory: dict[str, Any]) -> bytes:
    lines = []
    for key in sorted(directory):
        value = directory[key]
        if key == im.PUBLIC_KEY_NAME:
            continue
        if isinstance(value, dict):
            lines.append(value.get(im.PUBLIC_KEY_NAME) or f"{key}/")
        else:
            lines.append(key)
    return _listing(lines)
