"""JSON schemas of the volume API's request bodies (Cinder v3's, for the fields we take)."""

from __future__ import annotations

from nova_async.common.web import validator

NAME = {"type": ["string", "null"], "maxLength": 255}
DESCRIPTION = {"type": ["string", "null"], "maxLength": 255}
METADATA = {"type": "object", "maxProperties": 128,
            "patternProperties": {"^.{1,255}$": {"type": "string", "maxLength": 255}},
            "additionalProperties": False}
# Cinder takes a size as a number or a string of digits.
SIZE = {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
                  {"type": "string", "pattern": "^[0-9]{1,10}$"}]}
SIZE_OR_NULL = {"anyOf": [SIZE, {"type": "null"}]}
ID = {"type": ["string", "null"], "maxLength": 255}
# openstacksdk sends every field it knows, unset ones as null.
METADATA_OR_NULL = {"anyOf": [METADATA, {"type": "null"}]}
BOOL_OR_NULL = {"type": ["boolean", "null"]}

create_volume = validator({
    "type": "object", "required": ["volume"], "additionalProperties": True,
    "properties": {"volume": {
        "type": "object", "additionalProperties": False,
        "properties": {"size": SIZE_OR_NULL, "name": NAME, "description": DESCRIPTION,
                       "display_name": NAME, "display_description": DESCRIPTION,
                       "metadata": METADATA_OR_NULL, "snapshot_id": ID, "source_volid": ID, "imageRef": ID,
                       "volume_type": ID, "availability_zone": ID, "multiattach": BOOL_OR_NULL,
                       "consistencygroup_id": {"type": "null"}, "backup_id": {"type": "null"},
                       "group_id": {"type": "null"}, "scheduler_hints": {"type": ["object", "null"]}}}},
})

update_volume = validator({
    "type": "object", "required": ["volume"], "additionalProperties": False,
    "properties": {"volume": {
        "type": "object", "additionalProperties": False, "minProperties": 1,
        "properties": {"name": NAME, "description": DESCRIPTION, "display_name": NAME,
                       "display_description": DESCRIPTION, "metadata": METADATA}}},
})

metadata_body = validator({
    "type": "object", "required": ["metadata"], "additionalProperties": False,
    "properties": {"metadata": METADATA},
})

metadata_item = validator({
    "type": "object", "required": ["meta"], "additionalProperties": False,
    "properties": {"meta": {**METADATA, "minProperties": 1, "maxProperties": 1}},
})

BOOL_LIKE = {"anyOf": [{"type": "boolean"},
                       {"type": "string", "enum": ["true", "false", "True", "False", "1", "0", "yes", "no"]}]}

ACTIONS = {
    "os-extend": {"type": "object", "required": ["new_size"], "additionalProperties": False,
                  "properties": {"new_size": SIZE}},
    "os-set_bootable": {"type": "object", "required": ["bootable"], "additionalProperties": False,
                        "properties": {"bootable": BOOL_LIKE}},
    "os-reset_status": {"type": "object", "additionalProperties": False,
                        "properties": {"status": {"type": "string", "enum": [
                            "creating", "available", "reserved", "attaching", "in-use", "detaching",
                            "extending", "deleting", "error", "error_deleting", "error_extending",
                            "maintenance"]},
                            "attach_status": {"type": "string", "enum": ["attached", "detached"]},
                            "migration_status": {"type": ["string", "null"]}}},
    "os-update_readonly_flag": {"type": "object", "required": ["readonly"], "additionalProperties": False,
                                "properties": {"readonly": BOOL_LIKE}},
}
action = {name: validator({"type": "object", "required": [name], "additionalProperties": False,
                           "properties": {name: schema}}) for name, schema in ACTIONS.items()}

create_snapshot = validator({
    "type": "object", "required": ["snapshot"], "additionalProperties": False,
    "properties": {"snapshot": {
        "type": "object", "required": ["volume_id"], "additionalProperties": False,
        "properties": {"volume_id": {"type": "string", "maxLength": 255}, "name": NAME,
                       "description": DESCRIPTION, "display_name": NAME, "display_description": DESCRIPTION,
                       "metadata": METADATA_OR_NULL, "force": {"anyOf": [BOOL_LIKE, {"type": "null"}]}}}},
})

update_snapshot = validator({
    "type": "object", "required": ["snapshot"], "additionalProperties": False,
    "properties": {"snapshot": {
        "type": "object", "additionalProperties": False, "minProperties": 1,
        "properties": {"name": NAME, "description": DESCRIPTION, "display_name": NAME,
                       "display_description": DESCRIPTION, "metadata": METADATA}}},
})

QUOTA = {"anyOf": [{"type": "integer", "minimum": -1, "maximum": 2**31 - 1},
                   {"type": "string", "pattern": "^-?[0-9]{1,10}$"}]}
update_quota = validator({
    "type": "object", "required": ["quota_set"], "additionalProperties": False,
    "properties": {"quota_set": {
        "type": "object", "additionalProperties": False,
        "properties": {"volumes": QUOTA, "snapshots": QUOTA, "gigabytes": QUOTA, "per_volume_gigabytes": QUOTA,
                       "backups": QUOTA, "backup_gigabytes": QUOTA, "groups": QUOTA,
                       "tenant_id": {"type": "string"}}}},
})


def truthy(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1", "yes"))


def renamed(fields: dict) -> dict:
    """Cinder's old display_name/display_description spellings, as name/description."""
    out = dict(fields)
    for old, new in (("display_name", "name"), ("display_description", "description")):
        if old in out:
            out.setdefault(new, out.pop(old))
    return out
