"""The JSON-schema documents Glance publishes under /v2/schemas/: python-glanceclient and
Tempest fetch them to learn the image's attributes (the client builds its model, and its
`image-update` help, from them). Ours describe exactly what views.image renders, with the
property names and JSON types Glance uses; free-form properties are strings."""

from __future__ import annotations

from typing import Any

from nova_async.image import schemas

_UUID = "^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$"
STATUSES = ["queued", "saving", "active", "killed", "deleted", "uploading", "importing",
            "pending_delete", "deactivated"]
MEMBER_STATUSES = ["pending", "accepted", "rejected"]


def _read_only(kind: Any, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "readOnly": True, "description": description, **extra}


def image() -> dict[str, Any]:
    return {
        "name": "image",
        "properties": {
            "id": _read_only("string", "An identifier for the image", pattern=_UUID),
            "name": {"type": ["null", "string"], "maxLength": 255,
                     "description": "Descriptive name for the image"},
            "status": _read_only("string", "Status of the image", enum=STATUSES),
            "visibility": {"type": "string", "enum": schemas.VISIBILITIES,
                           "description": "Scope of image accessibility"},
            "protected": {"type": "boolean", "description": "If true, image will not be deletable."},
            "os_hidden": {"type": "boolean",
                          "description": "If true, image will not appear in default image list response."},
            "checksum": _read_only(["null", "string"], "md5 hash of image contents.", maxLength=32),
            "os_hash_algo": _read_only(["null", "string"], "Algorithm used for os_hash_value",
                                       maxLength=64),
            "os_hash_value": _read_only(["null", "string"], "Hexdigest of the image contents",
                                        maxLength=128),
            "owner": {"type": ["null", "string"], "maxLength": 255,
                      "description": "Owner of the image"},
            "size": _read_only(["null", "integer"], "Size of image file in bytes"),
            "virtual_size": _read_only(["null", "integer"], "Virtual size of image in bytes"),
            "container_format": {"type": ["null", "string"], "enum": [None, *schemas.CONTAINER_FORMATS],
                                 "description": "Format of the container"},
            "disk_format": {"type": ["null", "string"], "enum": [None, *schemas.DISK_FORMATS],
                            "description": "Format of the disk"},
            "created_at": _read_only("string", "Date and time of image registration"),
            "updated_at": _read_only("string", "Date and time of the last image modification"),
            "tags": {"type": "array", "description": "List of strings related to the image",
                     "items": {"type": "string", "maxLength": 255}},
            "min_ram": {"type": "integer", "description": "Amount of ram (in MB) required to boot image."},
            "min_disk": {"type": "integer", "description": "Amount of disk space (in GB) required to boot image."},
            "self": _read_only("string", "An image self url"),
            "file": _read_only("string", "An image file url"),
            "stores": _read_only("string", "Store in which image data resides."),
            "schema": _read_only("string", "An image schema url"),
            "locations": _read_only("array", "A set of URLs to access the image file kept in "
                                    "external store", items={"type": "object"}),
        },
        "additionalProperties": {"type": "string"},
        "links": [{"rel": "self", "href": "{self}"}, {"rel": "enclosure", "href": "{file}"},
                  {"rel": "describedby", "href": "{schema}"}],
    }


def images() -> dict[str, Any]:
    return {
        "name": "images",
        "properties": {
            "images": {"type": "array", "items": {"$ref": "#/definitions/image"}},
            "schema": {"type": "string"},
            "first": {"type": "string"},
            "next": {"type": "string"},
        },
        "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
                  {"rel": "describedby", "href": "{schema}"}],
        "definitions": {"image": image()},
    }


def member() -> dict[str, Any]:
    return {
        "name": "member",
        "properties": {
            "created_at": {"type": "string", "description": "Date and time of image member creation"},
            "image_id": {"type": "string", "pattern": _UUID,
                         "description": "An identifier for the image"},
            "member_id": {"type": "string", "description": "An identifier for the image member (tenantId)"},
            "schema": _read_only("string", "A member schema url"),
            "status": {"type": "string", "enum": MEMBER_STATUSES, "description": "The status of this image member"},
            "updated_at": {"type": "string", "description": "Date and time of last modification of image member"},
        },
    }


def members() -> dict[str, Any]:
    return {
        "name": "members",
        "properties": {
            "members": {"type": "array", "items": member()},
            "schema": {"type": "string"},
        },
        "links": [{"rel": "self", "href": "{self}"}, {"rel": "schema", "href": "{schema}"}],
    }


DOCUMENTS = {"image": image, "images": images, "member": member, "members": members}
