"""How images look to Glance v2 clients and to the other roles.

Glance shows free-form properties beside the core attributes at the top level of an image;
a property can never shadow a core attribute (the schema keeps them apart on the way in)."""

from __future__ import annotations

from typing import Any

import asyncpg

from nova_async.common.timeutil import iso
from nova_async.image import messages as m

CURRENT_VERSION = "v2.17"
# Every minor version of the v2 API the clients may ask about; all are served the same way.
SUPPORTED_VERSIONS = [f"v2.{minor}" for minor in range(16, -1, -1)]


def versions(base_url: str) -> dict[str, Any]:
    links = [{"rel": "self", "href": f"{base_url}/image/v2/"}]
    return {"versions": [{"id": CURRENT_VERSION, "status": "CURRENT", "links": links}]
            + [{"id": v, "status": "SUPPORTED", "links": links} for v in SUPPORTED_VERSIONS]}


def image(row: asyncpg.Record) -> dict[str, Any]:
    image_id = str(row["id"])
    out: dict[str, Any] = {
        "id": image_id,
        "name": row["name"],
        "status": row["status"],
        "disk_format": row["disk_format"],
        "container_format": row["container_format"],
        "visibility": row["visibility"],
        "size": row["size"],
        "virtual_size": row["virtual_size"],
        "checksum": row["checksum"],
        "os_hash_algo": row["os_hash_algo"],
        "os_hash_value": row["os_hash_value"],
        "min_disk": row["min_disk"],
        "min_ram": row["min_ram"],
        "protected": row["protected"],
        "os_hidden": row["os_hidden"],
        "owner": row["owner"],
        "tags": list(row["tags"]),
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
        "self": f"/v2/images/{image_id}",
        "file": f"/v2/images/{image_id}/file",
        "schema": "/v2/schemas/image",
        "locations": [],
        "stores": "file" if row["status"] == "active" else "",
    }
    for key, value in row["properties"].items():
        out.setdefault(key, value)
    return out


def image_list(rows: list[asyncpg.Record], next_link: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"images": [image(r) for r in rows], "first": "/v2/images",
                           "schema": "/v2/schemas/images"}
    if next_link:
        out["next"] = next_link
    return out


def member(row: asyncpg.Record) -> dict[str, Any]:
    return {"image_id": str(row["image_id"]), "member_id": row["member"], "status": row["status"],
            "created_at": iso(row["created_at"]), "updated_at": iso(row["updated_at"]),
            "schema": "/v2/schemas/member"}


def member_list(rows: list[asyncpg.Record]) -> dict[str, Any]:
    return {"members": [member(r) for r in rows], "schema": "/v2/schemas/members"}


def image_info(row: asyncpg.Record, path: str) -> m.ImageInfo:
    return m.ImageInfo(id=str(row["id"]), name=row["name"] or "", status=row["status"], size=row["size"],
                       disk_format=row["disk_format"], container_format=row["container_format"],
                       min_disk=row["min_disk"], min_ram=row["min_ram"],
                       properties=dict(row["properties"]), path=path,
                       created_at=iso(row["created_at"]) or "", updated_at=iso(row["updated_at"]) or "")


def task(row: asyncpg.Record, *, brief: bool = False) -> dict[str, Any]:
    """A task as Glance shows it; in lists (`brief`) without input, result and message."""
    task_id = str(row["id"])
    out: dict[str, Any] = {
        "id": task_id,
        "type": row["type"],
        "status": row["status"],
        "owner": row["owner"],
        "expires_at": iso(row["expires_at"]),
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
        "self": f"/v2/tasks/{task_id}",
        "schema": "/v2/schemas/task",
    }
    if not brief:
        out.update(input=row["input"], result=row["result"], message=row["message"])
    return out


def task_list(rows: list[asyncpg.Record], first: str, next_link: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"tasks": [task(r, brief=True) for r in rows], "first": first,
                           "schema": "/v2/schemas/tasks"}
    if next_link:
        out["next"] = next_link
    return out
