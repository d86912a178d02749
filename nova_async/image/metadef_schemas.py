"""What the metadata definitions catalog (/v2/metadefs) takes, as JSON schemas: the same
documents are published under /v2/schemas/metadefs/* (clients read them to learn the
catalog's fields) and check every request body, so the two can never disagree.

Glance's shapes, restated: a namespace holds property definitions (a name mapped to a
JSON-schema fragment: title, type, enum, ...), objects (named groups of such properties) and
tags; resource type associations say which resources (OS::Glance::Image, ...) it applies to,
with the prefix its property names take there."""

from __future__ import annotations

from typing import Any

from nova_async.common.web import validator

VISIBILITIES = ["public", "private"]
PROPERTY_TYPES = ["array", "boolean", "integer", "number", "object", "string", None]
_TIMES = {"created_at": {"type": "string", "readOnly": True, "description": "When it was created"},
          "updated_at": {"type": "string", "readOnly": True, "description": "When it last changed"}}
_LINKS = {"schema": {"type": "string", "readOnly": True}, "self": {"type": "string", "readOnly": True}}


def _property_fields() -> dict[str, Any]:
    """A property definition: a JSON-schema fragment that says what values a key may take."""
    count = {"type": "integer", "minimum": 0}
    return {
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "operators": {"type": "array", "items": {"type": "string"}},
        "type": {"enum": PROPERTY_TYPES},
        "required": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "minimum": {"type": "number"},
        "maximum": {"type": "number"},
        "maxLength": count,
        "minLength": count,
        "pattern": {"type": "string"},
        "enum": {"type": "array"},
        "readonly": {"type": "boolean"},
        "default": {},
        "items": {"type": "object"},
        "maxItems": count,
        "minItems": count,
        "uniqueItems": {"type": "boolean"},
        "additionalItems": {"type": "boolean"},
    }


def _property_definition() -> dict[str, Any]:
    """A property inside a namespace or object body, where its name is the key."""
    fields = {k: v for k, v in _property_fields().items() if k != "name"}
    return {"type": "object", "properties": fields, "required": ["title", "type"], "additionalProperties": False}


def property_() -> dict[str, Any]:
    return {"name": "property", "type": "object", "properties": _property_fields(),
            "required": ["name", "title", "type"], "additionalProperties": False}


def properties() -> dict[str, Any]:
    return {"name": "properties", "type": "object",
            "properties": {"properties": {"type": "object", "additionalProperties": _property_definition()},
                           "schema": {"type": "string"}}}


def object_() -> dict[str, Any]:
    return {"name": "object", "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255},
                           "description": {"type": "string"},
                           "required": {"type": "array", "items": {"type": "string"}},
                           "properties": {"type": "object", "additionalProperties": _property_definition()},
                           **_TIMES, **_LINKS},
            "required": ["name"], "additionalProperties": False}


def objects() -> dict[str, Any]:
    return {"name": "objects", "type": "object",
            "properties": {"objects": {"type": "array", "items": object_()}, "schema": {"type": "string"},
                           "first": {"type": "string"}, "next": {"type": "string"}}}


def tag() -> dict[str, Any]:
    return {"name": "tag", "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255}, **_TIMES},
            "required": ["name"], "additionalProperties": False}


def tags() -> dict[str, Any]:
    return {"name": "tags", "type": "object",
            "properties": {"tags": {"type": "array", "items": tag()}},
            "required": ["tags"]}


def resource_type() -> dict[str, Any]:
    return {"name": "resource_type_association", "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 80},
                           "prefix": {"type": "string", "maxLength": 80},
                           "properties_target": {"type": "string", "maxLength": 80}, **_TIMES},
            "required": ["name"], "additionalProperties": False}


def resource_types() -> dict[str, Any]:
    return {"name": "resource_type_associations", "type": "object",
            "properties": {"resource_type_associations": {"type": "array", "items": resource_type()}}}


def namespace() -> dict[str, Any]:
    return {"name": "namespace", "type": "object",
            "properties": {"namespace": {"type": "string", "minLength": 1, "maxLength": 80},
                           "display_name": {"type": "string", "maxLength": 80},
                           "description": {"type": "string", "maxLength": 500},
                           "visibility": {"enum": VISIBILITIES},
                           "protected": {"type": "boolean"},
                           "owner": {"type": "string", "maxLength": 255},
                           "resource_type_associations": {"type": "array", "items": resource_type()},
                           "properties": {"type": "object", "additionalProperties": _property_definition()},
                           "objects": {"type": "array", "items": object_()},
                           "tags": {"type": "array", "items": tag()},
                           **_TIMES, **_LINKS},
            "required": ["namespace"], "additionalProperties": False}


def namespaces() -> dict[str, Any]:
    return {"name": "namespaces", "type": "object",
            "properties": {"namespaces": {"type": "array", "items": namespace()},
                           "schema": {"type": "string"}, "first": {"type": "string"},
                           "next": {"type": "string"}}}


DOCUMENTS = {"namespace": namespace, "namespaces": namespaces, "resource_type": resource_type,
             "resource_types": resource_types, "object": object_, "objects": objects,
             "property": property_, "properties": properties, "tag": tag, "tags": tags}

NAMESPACE = validator(namespace())
OBJECT = validator(object_())
PROPERTY = validator(property_())
TAG = validator(tag())
TAGS = validator(tags())
RESOURCE_TYPE = validator(resource_type())
