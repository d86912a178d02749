"""What network, subnet, port and security group bodies may hold.

Neutron refuses attributes it does not know (400), so these schemas do too. A few
attributes the clients send with some flags are accepted and have no effect here (no
availability zones, DNS domains or QoS in this subset)."""

from __future__ import annotations

from nova_async.common.web import validator

_NAME = {"type": "string", "maxLength": 255}
_OWNER = {"project_id": _NAME, "tenant_id": _NAME}
_ACCEPTED = {
    "port_security_enabled": {"type": "boolean"},
    "availability_zone_hints": {"type": "array", "items": {"type": "string"}},
    "dns_domain": {"type": "string"},
    "is_default": {"type": "boolean"},
    "qos_policy_id": {"type": ["string", "null"]},
}
_MAC = "^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$"


def _wrapped(key: str, body: dict) -> dict:
    return {"type": "object", "required": [key], "additionalProperties": False,
            "properties": {key: body}}


NETWORK = validator(_wrapped("network", {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": _NAME,
        "description": _NAME,
        "admin_state_up": {"type": "boolean"},
        "shared": {"type": "boolean"},
        "router:external": {"type": "boolean"},
        "mtu": {"type": "integer", "minimum": 68, "maximum": 65535},
        **_OWNER,
        **_ACCEPTED,
    },
}))

SUBNET = validator(_wrapped("subnet", {
    "type": "object",
    "required": ["network_id", "ip_version"],
    "additionalProperties": False,
    "properties": {
        "name": _NAME,
        "description": _NAME,
        "network_id": {"type": "string"},
        "cidr": {"type": "string"},
        "ip_version": {"enum": [4, 6]},
        "gateway_ip": {"type": ["string", "null"]},
        "allocation_pools": {
            "type": "array",
            "items": {"type": "object", "required": ["start", "end"], "additionalProperties": False,
                      "properties": {"start": {"type": "string"}, "end": {"type": "string"}}},
        },
        "enable_dhcp": {"type": "boolean"},
        "dns_nameservers": {"type": "array", "items": {"type": "string"}},
        "host_routes": {
            "type": "array",
            "items": {"type": "object", "required": ["destination", "nexthop"], "additionalProperties": False,
                      "properties": {"destination": {"type": "string"}, "nexthop": {"type": "string"}}},
        },
        "ipv6_ra_mode": {"enum": [None, "slaac", "dhcpv6-stateful", "dhcpv6-stateless"]},
        "ipv6_address_mode": {"enum": [None, "slaac", "dhcpv6-stateful", "dhcpv6-stateless"]},
        "subnetpool_id": {"type": ["string", "null"]},
        "use_default_subnet_pool": {"type": "boolean"},
        "service_types": {"type": "array", "items": {"type": "string"}},
        "segment_id": {"type": ["string", "null"]},
        **_OWNER,
    },
}))

PORT = validator(_wrapped("port", {
    "type": "object",
    "required": ["network_id"],
    "additionalProperties": False,
    "properties": {
        "name": _NAME,
        "description": _NAME,
        "network_id": {"type": "string"},
        "admin_state_up": {"type": "boolean"},
        "mac_address": {"type": "string", "pattern": _MAC},
        "device_id": _NAME,
        "device_owner": _NAME,
        "binding:host_id": _NAME,
        "binding:vnic_type": {"enum": ["normal"]},
        "binding:profile": {"type": "object"},
        "security_groups": {"type": "array", "items": {"type": "string"}},
        "fixed_ips": {
            "type": "array",
            "items": {"type": "object", "minProperties": 1, "additionalProperties": False,
                      "properties": {"subnet_id": {"type": "string"}, "ip_address": {"type": "string"}}},
        },
        "port_security_enabled": {"type": "boolean"},
        **_OWNER,
    },
}))

SECURITY_GROUP = validator(_wrapped("security_group", {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": _NAME,
        "description": _NAME,
        "stateful": {"type": "boolean"},
        **_OWNER,
    },
}))

SECURITY_GROUP_UPDATE = validator(_wrapped("security_group", {
    "type": "object",
    "additionalProperties": False,
    "properties": {"name": _NAME, "description": _NAME, "stateful": {"type": "boolean"}},
}))

_PORT_NUMBER = {"type": ["integer", "string", "null"]}

SECURITY_GROUP_RULE = validator(_wrapped("security_group_rule", {
    "type": "object",
    "required": ["security_group_id", "direction"],
    "additionalProperties": False,
    "properties": {
        "security_group_id": {"type": "string"},
        "direction": {"enum": ["ingress", "egress"]},
        "ethertype": {"type": ["string", "null"]},
        "protocol": {"type": ["string", "integer", "null"]},
        "port_range_min": _PORT_NUMBER,
        "port_range_max": _PORT_NUMBER,
        "remote_ip_prefix": {"type": ["string", "null"]},
        "remote_group_id": {"type": ["string", "null"]},
        "remote_address_group_id": {"type": ["string", "null"]},
        "description": {"type": ["string", "null"], "maxLength": 255},
        **_OWNER,
    },
}))
