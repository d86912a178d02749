"""JSON schemas of the server requests (what the OpenStack clients send, and no more)."""

from __future__ import annotations

from nova_async.common import web as w

_UUID = {"type": "string", "format": "uuid"}
_NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^\S(.*\S)?$"}
_COUNT = {"type": ["integer", "string"], "pattern": r"^[0-9]+$", "minimum": 1}
# No count limit here: more items than the project's metadata_items quota is a 403 from the
# quota check (Nova's schema has none either; a 400 here would pre-empt it).
_METADATA = {
    "type": "object",
    "propertyNames": {"minLength": 1, "maxLength": 255},
    "additionalProperties": {"type": "string", "maxLength": 255},
}
# Nova's parameter_types.boolean: the spellings oslo's bool_from_string reads strictly.
BOOLEAN = {"enum": [True, False, "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes",
                     "False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no"]}
TRUE_SPELLINGS = ("true", "1", "on", "yes")
_NETWORK = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "uuid": _UUID,
        "port": {"oneOf": [_UUID, {"type": "null"}]},
        "fixed_ip": {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
        "tag": {"type": "string", "maxLength": 60},
    },
}
_BDM = {
    "type": "object",
    "properties": {
        "uuid": {"type": "string"},
        "boot_index": {"type": ["integer", "string", "null"]},
        "source_type": {"enum": ["image", "volume", "snapshot", "blank"]},
        "destination_type": {"enum": ["local", "volume"]},
        "delete_on_termination": {"type": ["boolean", "string"]},
        "volume_size": {"type": ["integer", "string", "null"]},
        "device_name": {"type": ["string", "null"]},
        "guest_format": {"type": ["string", "null"]},
        "disk_bus": {"type": ["string", "null"]},
        "device_type": {"type": ["string", "null"]},
        "tag": {"type": "string"},
        "volume_type": {"type": ["string", "null"]},
    },
}

CREATE_SERVER = w.validator({
    "type": "object",
    "required": ["server"],
    "properties": {
        "server": {
            "type": "object",
            "required": ["name", "flavorRef"],
            "additionalProperties": False,
            "properties": {
                "name": _NAME,
                "imageRef": {"type": "string", "maxLength": 255},
                "flavorRef": {"type": ["string", "integer"], "minLength": 1, "maxLength": 255},
                "networks": {"oneOf": [{"type": "array", "items": _NETWORK},
                                       {"enum": ["auto", "none"]}]},
                "min_count": _COUNT,
                "max_count": _COUNT,
                "return_reservation_id": {"type": ["boolean", "string"]},
                "metadata": _METADATA,
                "user_data": {"type": ["string", "null"], "maxLength": 65535, "format": "base64"},
                "key_name": {"type": ["string", "null"], "maxLength": 255},
                "availability_zone": {"type": "string", "minLength": 1, "maxLength": 255},
                "block_device_mapping_v2": {"type": "array", "items": _BDM},
                "security_groups": {"type": "array", "items": {
                    "type": "object", "required": ["name"], "additionalProperties": False,
                    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255}}}},
                "config_drive": BOOLEAN,
                "adminPass": {"type": "string", "maxLength": 255},
                "accessIPv4": {"type": "string", "format": "ipv4"},
                "accessIPv6": {"type": "string", "format": "ipv6"},
                "OS-DCF:diskConfig": {"enum": ["AUTO", "MANUAL"]},
                "description": {"type": ["string", "null"], "maxLength": 255},
                "tags": {"type": "array", "maxItems": 50, "items": {"type": "string", "maxLength": 60}},
                "hostname": {"type": "string", "maxLength": 255},
                "host": {"type": "string"},
                "hypervisor_hostname": {"type": "string"},
                "trusted_image_certificates": {"type": ["array", "null"]},
            },
        },
        "os:scheduler_hints": {"type": "object"},
        "OS-SCH-HNT:scheduler_hints": {"type": "object"},
    },
    "additionalProperties": False,
})
