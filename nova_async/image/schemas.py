"""What an image body may hold, checked before anything touches the database.

Glance's rules, restated: core attributes have fixed types; any other key is a free-form
string property; attributes the service computes are read-only (403, as Glance answers),
and the `os_glance_` prefix is reserved for the service itself."""

from __future__ import annotations

from typing import Any

from nova_async.common import errors
from nova_async.common.web import check, validator

DISK_FORMATS = ["ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop"]
CONTAINER_FORMATS = ["ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed"]
VISIBILITIES = ["public", "private", "shared", "community"]

READ_ONLY = frozenset({"status", "size", "virtual_size", "checksum", "os_hash_algo", "os_hash_value",
                       "created_at", "updated_at", "self", "file", "schema", "direct_url",
                       "locations", "stores"})
RESERVED_PREFIX = "os_glance_"

# The attributes that are columns; everything else is a property.
CORE = ("id", "name", "disk_format", "container_format", "visibility", "min_disk", "min_ram",
        "protected", "os_hidden", "owner", "tags")

_UUID = "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"

IMAGE = validator({
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": _UUID},
        "name": {"type": ["string", "null"], "maxLength": 255},
        "disk_format": {"enum": [None, *DISK_FORMATS]},
        "container_format": {"enum": [None, *CONTAINER_FORMATS]},
        "visibility": {"enum": VISIBILITIES},
        "min_disk": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
        "min_ram": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
        "protected": {"type": "boolean"},
        "os_hidden": {"type": "boolean"},
        "owner": {"type": ["string", "null"], "maxLength": 255},
        "tags": {"type": "array", "maxItems": 128,
                 "items": {"type": "string", "minLength": 1, "maxLength": 255}},
    },
    "propertyNames": {"maxLength": 255},
    "additionalProperties": {"type": "string", "maxLength": 65535},
})

# POST /v2/images/{id}/members and PUT …/members/{member}; the status's values are checked
# by members.answer, after who may answer (Glance checks its policy first).
NEW_MEMBER = validator({
    "type": "object",
    "properties": {"member": {"type": "string", "minLength": 1, "maxLength": 255}},
    "required": ["member"],
})
MEMBER_ANSWER = validator({
    "type": "object",
    "properties": {"status": {"type": "string"}},
    "required": ["status"],
})
MEMBER_STATUS_FILTERS = ("pending", "accepted", "rejected", "all")

# RFC 6902 as Glance's "application/openstack-images-v2.1-json-patch" uses it. Glance also
# takes the older v2.0 media type, whose operations name the op as the key:
# {"replace": "/name", "value": ...}; patch_ops turns those into the v2.1 form.
PATCH_MEDIA_TYPE = "application/openstack-images-v2.1-json-patch"
PATCH_MEDIA_TYPE_V20 = "application/openstack-images-v2.0-json-patch"
PATCH_MEDIA_TYPES = (PATCH_MEDIA_TYPE, PATCH_MEDIA_TYPE_V20)
_PATCH_OPS = ("add", "replace", "remove")
PATCH = validator({
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "op": {"enum": ["add", "replace", "remove"]},
            "path": {"type": "string", "pattern": "^/[^/]+$"},
            "value": {},
        },
        "required": ["op", "path"],
        "additionalProperties": False,
    },
})


def check_patch_media_type(media_type: str) -> None:
    if media_type not in PATCH_MEDIA_TYPES:
        raise errors.UnsupportedMediaType(
            f"Image updates are JSON patches sent as {' or '.join(PATCH_MEDIA_TYPES)}, "
            f"not {media_type}.")


def patch_ops(media_type: str, body: Any) -> list[dict[str, Any]]:
    """The validated v2.1 operations of a PATCH body sent as either Glance media type."""
    if media_type == PATCH_MEDIA_TYPE_V20 and isinstance(body, list):
        body = [_v20_op(op) for op in body]
    check(PATCH, body)
    return body


def _v20_op(op: Any) -> Any:
    if not isinstance(op, dict):
        return op    # the schema check refuses it with its own message
    named = [k for k in _PATCH_OPS if k in op]
    if len(named) != 1 or set(op) - {named[0], "value"}:
        raise errors.InvalidInput("A v2.0 JSON patch operation names exactly one of "
                                  "add, replace or remove, with the path as its value.")
    out = {"op": named[0], "path": op[named[0]]}
    if "value" in op:
        out["value"] = op["value"]
    return out


def check_tag(tag: str) -> None:
    """A tag added on its own URL meets the rule the image schema gives tags."""
    if not tag or len(tag) > 255:
        raise errors.InvalidInput("A tag is 1 to 255 characters long.")


def check_writable(keys: Any) -> None:
    """Refuse attributes a user may not set, the way Glance does (403)."""
    for key in keys:
        if key in READ_ONLY:
            raise errors.Forbidden(f"Attribute '{key}' is read-only.")
        if key.startswith(RESERVED_PREFIX):
            raise errors.Forbidden(f"Attribute '{key}' is reserved.")


def split(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(core attributes, free-form properties) of a validated image body."""
    core = {k: v for k, v in body.items() if k in CORE}
    props = {k: v for k, v in body.items() if k not in CORE}
    return core, props


# The keys Glance lets GET /v2/images sort by, and its default direction.
SORT_KEYS = ("name", "status", "container_format", "disk_format", "size", "id", "created_at",
             "updated_at")
_SORT_DIRS = ("asc", "desc")


def sort_order(sort: str | None, keys: list[str], dirs: list[str]) -> list[tuple[str, str]]:
    """The (key, direction) list of an image list request, from either Glance syntax:
    `sort=name:asc,size` or repeated `sort_key`/`sort_dir` (one direction for all keys, or
    one per key). The two syntaxes may not be mixed."""
    if sort is not None and (keys or dirs):
        raise errors.InvalidInput("The 'sort' parameter cannot be combined with "
                                  "'sort_key' or 'sort_dir'.")
    if sort is not None:
        pairs = []
        for part in sort.split(","):
            key, _, direction = part.strip().partition(":")
            pairs.append((key.strip(), direction.strip() or "desc"))
    else:
        if not keys:
            keys = ["created_at"]
        if len(dirs) > 1 and len(dirs) != len(keys):
            raise errors.InvalidInput("Give one sort_dir for all sort keys, or one per key.")
        pairs = [(k, dirs[i] if len(dirs) > 1 else (dirs[0] if dirs else "desc"))
                 for i, k in enumerate(keys)]
    seen: set[str] = set()
    for key, direction in pairs:
        if key not in SORT_KEYS:
            raise errors.InvalidInput(f"Invalid sort key: {key!r}. It must be one of: "
                                      f"{', '.join(SORT_KEYS)}.")
        if direction not in _SORT_DIRS:
            raise errors.InvalidInput(f"Invalid sort direction: {direction!r}.")
        if key in seen:
            raise errors.InvalidInput(f"Sort key {key!r} is given more than once.")
        seen.add(key)
    return pairs
