"""How the metadata definitions catalog looks to clients: Glance's bodies, where a field
that has no value is left out rather than null."""

from __future__ import annotations

from typing import Any

import asyncpg

from nova_async.common.timeutil import iso
from nova_async.image.metadefs import OBJECT, PROPERTY, TAG, Namespace

BASE = "/v2/metadefs/namespaces"


def _times(row: asyncpg.Record) -> dict[str, Any]:
    return {"created_at": iso(row["created_at"]), "updated_at": iso(row["updated_at"])}


def association(row: asyncpg.Record) -> dict[str, Any]:
    out = {"name": row["resource_type"], "prefix": row["prefix"], "properties_target": row["properties_target"],
           **_times(row)}
    return {k: v for k, v in out.items() if v is not None}


def associations(rows: list[asyncpg.Record]) -> dict[str, Any]:
    return {"resource_type_associations": [association(r) for r in rows]}


def resource_types(rows: list[asyncpg.Record]) -> dict[str, Any]:
    return {"resource_types": [{"name": r["name"], **_times(r)} for r in rows]}


def property_(row: asyncpg.Record) -> dict[str, Any]:
    return {"name": row["name"], **row["body"]}


def properties(rows: list[asyncpg.Record]) -> dict[str, Any]:
    return {"properties": {r["name"]: dict(r["body"]) for r in rows}}


def object_(namespace: str, row: asyncpg.Record) -> dict[str, Any]:
    return {"name": row["name"], **row["body"], **_times(row), "schema": "/v2/schemas/metadefs/object",
            "self": f"{BASE}/{namespace}/objects/{row['name']}"}


def objects(namespace: str, rows: list[asyncpg.Record]) -> dict[str, Any]:
    return {"objects": [object_(namespace, r) for r in rows], "schema": "/v2/schemas/metadefs/objects"}


def tag(row: asyncpg.Record) -> dict[str, Any]:
    return {"name": row["name"], **_times(row)}


def tags(rows: list[asyncpg.Record]) -> dict[str, Any]:
    return {"tags": [tag(r) for r in rows]}


def namespace(ns: Namespace) -> dict[str, Any]:
    row = ns.row
    name = row["namespace"]
    out: dict[str, Any] = {
        "namespace": name, "display_name": row["display_name"], "description": row["description"],
        "visibility": row["visibility"], "protected": row["protected"], "owner": row["owner"],
        **_times(row), "schema": "/v2/schemas/metadefs/namespace", "self": f"{BASE}/{name}",
    }
    out = {k: v for k, v in out.items() if v is not None}
    if ns.associations:
        out["resource_type_associations"] = [association(a) for a in ns.associations]
    if ns.items is not None:
        if ns.items[PROPERTY]:
            out.update(properties(ns.items[PROPERTY]))
        if ns.items[OBJECT]:
            out["objects"] = [object_(name, r) for r in ns.items[OBJECT]]
        if ns.items[TAG]:
            out.update(tags(ns.items[TAG]))
    return out


def namespaces(rows: list[Namespace]) -> dict[str, Any]:
    return {"namespaces": [namespace(n) for n in rows], "first": BASE,
            "schema": "/v2/schemas/metadefs/namespaces"}
