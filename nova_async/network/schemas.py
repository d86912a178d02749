"""What network, subnet, port, router, floating IP and security group bodies may hold, on
create (POST) and update (PUT).

Neutron refuses attributes it does not know (400), so these schemas do too. A few
attributes the clients send with some flags are accepted and have no effect here (no
availability zones, DNS domains or QoS in this subset). An update names only what may
change; READ_ONLY lists what exists but may not (Neutron's "Cannot update read-only
attribute", also a 400)."""

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
        "provider:network_type": {"type": "string", "maxLength": 255},
        "provider:physical_network": {"type": ["string", "null"], "maxLength": 64},
        "provider:segmentation_id": {"type": ["integer", "string", "null"]},  # the CLI sends text
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

_ADDRESS_PAIRS = {
    "type": "array",
    "items": {"type": "object", "required": ["ip_address"], "additionalProperties": False,
              "properties": {"ip_address": {"type": "string"}, "mac_address": {"type": "string", "pattern": _MAC}}},
}

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
        "allowed_address_pairs": _ADDRESS_PAIRS,
        **_OWNER,
    },
}))

_GATEWAY = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {
        "network_id": {"type": "string"},
        "enable_snat": {"type": "boolean"},
        "external_fixed_ips": {
            "type": "array",
            "items": {"type": "object", "minProperties": 1, "additionalProperties": False,
                      "properties": {"subnet_id": {"type": "string"}, "ip_address": {"type": "string"}}},
        },
        "qos_policy_id": {"type": "null"},
    },
}
_ROUTER = {
    "name": _NAME,
    "description": _NAME,
    "admin_state_up": {"type": "boolean"},
    "external_gateway_info": _GATEWAY,
    "distributed": {"type": "boolean"},
    "ha": {"type": "boolean"},
    "routes": {"type": "array", "items": {"type": "object"}},
    "availability_zone_hints": {"type": "array", "items": {"type": "string"}},
}

ROUTER_CREATE = validator(_wrapped("router", {
    "type": "object", "additionalProperties": False, "properties": {**_ROUTER, **_OWNER}}))

ROUTER_UPDATE = validator(_wrapped("router", {
    "type": "object", "additionalProperties": False, "properties": _ROUTER}))

# add_router_interface and remove_router_interface take the bare object, not wrapped.
ROUTER_INTERFACE = validator({
    "type": "object", "additionalProperties": False,
    "properties": {"subnet_id": {"type": "string"}, "port_id": {"type": "string"}},
})

_FLOATINGIP = {
    "port_id": {"type": ["string", "null"]},
    "fixed_ip_address": {"type": ["string", "null"]},
    "description": _NAME,
}

FLOATINGIP_CREATE = validator(_wrapped("floatingip", {
    "type": "object",
    "required": ["floating_network_id"],
    "additionalProperties": False,
    "properties": {
        "floating_network_id": {"type": "string"},
        "floating_ip_address": {"type": "string"},
        "subnet_id": {"type": "string"},
        "qos_policy_id": {"type": "null"},
        **_FLOATINGIP,
        **_OWNER,
    },
}))

FLOATINGIP_UPDATE = validator(_wrapped("floatingip", {
    "type": "object", "additionalProperties": False,
    "properties": {**_FLOATINGIP, "qos_policy_id": {"type": "null"}}}))


NETWORK_UPDATE = validator(_wrapped("network", {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": _NAME,
        "description": _NAME,
        "admin_state_up": {"type": "boolean"},
        "shared": {"type": "boolean"},
        "router:external": {"type": "boolean"},
        # Jumbo frames at most: the bridge and taps are made with it.
        "mtu": {"type": "integer", "minimum": 68, "maximum": 9000},
        "port_security_enabled": {"type": "boolean"},
        "dns_domain": {"type": "string"},
        "is_default": {"type": "boolean"},
        "qos_policy_id": {"type": ["string", "null"]},
    },
}))

SUBNET_UPDATE = validator(_wrapped("subnet", {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        name: SUBNET.schema["properties"]["subnet"]["properties"][name]
        for name in ("name", "description", "gateway_ip", "allocation_pools", "enable_dhcp",
                     "dns_nameservers", "host_routes", "service_types")
    },
}))

PORT_UPDATE = validator(_wrapped("port", {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **{name: PORT.schema["properties"]["port"]["properties"][name]
           for name in ("name", "description", "admin_state_up", "mac_address", "device_id", "device_owner",
                        "binding:host_id", "binding:vnic_type", "binding:profile", "fixed_ips",
                        "port_security_enabled")},
        "security_groups": {"type": "array", "items": {"type": "string"}},
        "allowed_address_pairs": _ADDRESS_PAIRS,
    },
}))

READ_ONLY = {
    "network": {"id", "project_id", "tenant_id", "status", "subnets", "created_at", "updated_at",
                "revision_number", "provider:network_type", "provider:physical_network",
                "provider:segmentation_id", "availability_zone_hints"},
    "subnet": {"id", "network_id", "project_id", "tenant_id", "cidr", "ip_version", "subnetpool_id",
               "ipv6_ra_mode", "ipv6_address_mode", "segment_id", "created_at", "updated_at",
               "revision_number"},
    "port": {"id", "network_id", "project_id", "tenant_id", "status", "created_at", "updated_at",
             "revision_number"},
}


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
