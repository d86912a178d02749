"""The JSON-schema documents Glance publishes under /v2/schemas/: python-glanceclient and
Tempest fetch them to learn the image's attributes (the client builds its model, and its
`image-update` help, from them); task(s) describe views.task. Ours describe exactly what views.image renders, with the
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
            "id": _read_only("string", "The image's UUID", pattern=_UUID),
            "name": {"type": ["null", "string"], "maxLength": 255,
                     "description": "A name, not necessarily unique"},
            "status": _read_only("string", "Where the image is in its life", enum=STATUSES),
            "visibility": {"type": "string", "enum": schemas.VISIBILITIES,
                           "description": "Who may use the image"},
            "protected": {"type": "boolean", "description": "Refuse deletion while true"},
            "os_hidden": {"type": "boolean",
                          "description": "Left out of lists unless asked for"},
            "checksum": _read_only(["null", "string"], "MD5 of the data", maxLength=32),
            "os_hash_algo": _read_only(["null", "string"], "The algorithm of os_hash_value",
                                       maxLength=64),
            "os_hash_value": _read_only(["null", "string"], "Hex digest of the data",
                                        maxLength=128),
            "owner": {"type": ["null", "string"], "maxLength": 255,
                      "description": "The owning project"},
            "size": _read_only(["null", "integer"], "Bytes of data stored"),
            "virtual_size": _read_only(["null", "integer"], "Bytes of the disk the guest sees"),
            "container_format": {"type": ["null", "string"], "enum": [None, *schemas.CONTAINER_FORMATS],
                                 "description": "The container format"},
            "disk_format": {"type": ["null", "string"], "enum": [None, *schemas.DISK_FORMATS],
                            "description": "The disk format"},
            "created_at": _read_only("string", "When the image was created"),
            "updated_at": _read_only("string", "When the image last changed"),
            "tags": {"type": "array", "description": "Free-form labels",
                     "items": {"type": "string", "maxLength": 255}},
            "min_ram": {"type": "integer", "description": "MiB of RAM a guest needs"},
            "min_disk": {"type": "integer", "description": "GiB of disk a guest needs"},
            "self": _read_only("string", "This image's URL"),
            "file": _read_only("string", "The URL of its data"),
            "stores": _read_only("string", "The store holding the data"),
            "schema": _read_only("string", "The URL of this schema"),
            "locations": _read_only("array", "Where the data lives (never shown here)",
                                    items={"type": "object"}),
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
            "created_at": {"type": "string", "description": "When the member was added"},
            "image_id": {"type": "string", "pattern": _UUID,
                         "description": "The shared image's UUID"},
            "member_id": {"type": "string", "description": "The member project"},
            "schema": _read_only("string", "The URL of this schema"),
            "status": {"type": "string", "enum": MEMBER_STATUSES, "description": "The member's answer"},
            "updated_at": {"type": "string", "description": "When the member last changed"},
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


TASK_STATUSES = ["pending", "processing", "success", "failure"]


def task(*, brief: bool = False) -> dict[str, Any]:
    """A task as views.task renders it (in lists, `brief`: without input, result, message)."""
    properties: dict[str, Any] = {
        "id": {"type": "string", "pattern": _UUID, "description": "The task's UUID"},
        "type": {"type": "string", "enum": ["import"], "description": "What the task does"},
        "status": {"type": "string", "enum": TASK_STATUSES, "description": "Where the task is"},
        "owner": {"type": ["null", "string"], "description": "The project that created the task"},
        "expires_at": {"type": ["null", "string"], "description": "When the finished task goes away"},
        "created_at": {"type": "string", "description": "When the task was created"},
        "updated_at": {"type": "string", "description": "When the task last changed"},
        "self": {"type": "string"},
        "schema": {"type": "string"},
    }
    if not brief:
        properties.update({
            "input": {"type": "object", "description": "What the task was asked to do"},
            "result": {"type": ["null", "object"], "description": "What it made (the image's id)"},
            "message": {"type": "string", "description": "Why it failed, if it did"},
        })
    return {"name": "task", "properties": properties,
            "links": [{"rel": "self", "href": "{self}"}, {"rel": "describedby", "href": "{schema}"}]}


def tasks() -> dict[str, Any]:
    return {
        "name": "tasks",
        "properties": {
            "tasks": {"type": "array", "items": task(brief=True)},
            "schema": {"type": "string"},
            "first": {"type": "string"},
            "next": {"type": "string"},
        },
        "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
                  {"rel": "describedby", "href": "{schema}"}],
    }


DOCUMENTS = {"image": image, "images": images, "member": member, "members": members, "task": task,
             "tasks": tasks}
