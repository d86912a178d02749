"""How networks, subnets and ports look to Neutron v2.0 clients.

Attributes of Neutron extensions this subset does not implement are shown with the
values a plain Neutron deployment would show, so clients that print them have something."""

from __future__ import annotations

from typing import Any

import asyncpg

from nova_async.common.timeutil import iso
from nova_async.network import security_group_rules
from nova_async.network.ipam import host


def only(data: dict[str, Any], fields: list[str] | None) -> dict[str, Any]:
    """Neutron's `?fields=a&fields=b`: only the attributes asked for."""
    if not fields:
        return data
    return {k: v for k, v in data.items() if k in fields}


def _times(row: asyncpg.Record) -> dict[str, Any]:
    # revision_number: networks, subnets and ports have one (0046); 1 for rows without it.
    return {"created_at": iso(row["created_at"]), "updated_at": iso(row["updated_at"]),
            "revision_number": row.get("revision_number", 1), "tags": []}


def versions(base_url: str) -> dict[str, Any]:
    return {"versions": [{"id": "v2.0", "status": "CURRENT",
                          "links": [{"href": f"{base_url}/network/v2.0/", "rel": "self"}]}]}


def resources(base_url: str) -> dict[str, Any]:
    return {"resources": [
        {"name": name, "collection": f"{name}s",
         "links": [{"href": f"{base_url}/network/v2.0/{name}s", "rel": "self"}]}
        for name in ("network", "subnet", "port", "router", "floatingip")] + [
        {"name": name, "collection": name.replace("_", "-") + "s",
         "links": [{"href": f"{base_url}/network/v2.0/{name.replace('_', '-')}s", "rel": "self"}]}
        for name in ("security_group", "security_group_rule")]}


def network(row: asyncpg.Record, admin: bool = False) -> dict[str, Any]:
    """`admin`: the caller may see the provider attributes (Neutron shows them to admins only)."""
    provider = {"provider:network_type": row["provider_network_type"],
                "provider:physical_network": row["provider_physical_network"],
                "provider:segmentation_id": None} if admin else {}
    return {
        "id": str(row["id"]),
        "name": row["name"],
        "description": row["description"],
        "status": "ACTIVE",
        "admin_state_up": row["admin_state_up"],
        "shared": row["shared"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "subnets": [str(s) for s in row["subnets"]],
        "mtu": row["mtu"],
        "router:external": row["external"],
        "port_security_enabled": True,
        "availability_zone_hints": [],
        "availability_zones": ["nova"],
        "ipv4_address_scope": None,
        "ipv6_address_scope": None,
        "is_default": False,
        "l2_adjacency": True,
        "qos_policy_id": None,
        "dns_domain": "",
        **provider,
        **_times(row),
    }


def subnet(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "name": row["name"],
        "description": row["description"],
        "network_id": str(row["network_id"]),
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "cidr": str(row["cidr"]),
        "ip_version": row["ip_version"],
        "gateway_ip": None if row["gateway_ip"] is None else host(row["gateway_ip"]),
        "allocation_pools": row["allocation_pools"],
        "enable_dhcp": row["enable_dhcp"],
        "dns_nameservers": row["dns_nameservers"],
        "host_routes": row["host_routes"],
        "ipv6_address_mode": None,
        "ipv6_ra_mode": None,
        "subnetpool_id": None,
        "service_types": [],
        "segment_id": None,
        "dns_publish_fixed_ip": False,
        "router:external": row["external"],   # subnet-external-network
        **_times(row),
    }


def port(row: asyncpg.Record, fixed_ips: list[dict[str, str]],
         security_groups: list[str] | None = None) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "name": row["name"],
        "description": row["description"],
        "network_id": str(row["network_id"]),
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "mac_address": str(row["mac_address"]),
        "fixed_ips": fixed_ips,
        "device_id": row["device_id"],
        "device_owner": row["device_owner"],
        "status": row["status"],
        "admin_state_up": row["admin_state_up"],
        "binding:host_id": row["binding_host"],
        "binding:vif_type": "bridge" if row["binding_host"] else "unbound",
        "binding:vnic_type": "normal",
        "binding:vif_details": {},
        "binding:profile": {},
        "security_groups": security_groups or [],
        "allowed_address_pairs": row["allowed_address_pairs"],
        "extra_dhcp_opts": [],
        "port_security_enabled": row["port_security_enabled"],
        **_times(row),
    }



def router(row: asyncpg.Record, admin: bool = False) -> dict[str, Any]:
    """`admin`: the caller may see `distributed` and `ha` (Neutron shows them to admins only)."""
    gateway = None
    if row["gateway_network_id"] is not None:
        gateway = {"network_id": str(row["gateway_network_id"]), "enable_snat": row["enable_snat"],
                   "external_fixed_ips": row["gateway_ips"]}
    return {
        "id": str(row["id"]),
        "name": row["name"],
        "description": row["description"],
        "status": row["status"],
        "admin_state_up": row["admin_state_up"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "external_gateway_info": gateway,
        "routes": [],
        "availability_zone_hints": [],
        "availability_zones": ["nova"],
        "flavor_id": None,
        **({"distributed": False, "ha": False} if admin else {}),
        **_times(row),
    }


def router_interface(info: Any) -> dict[str, Any]:
    """The answer of add_router_interface and remove_router_interface (a routers.Interface)."""
    return {"id": info.router_id, "tenant_id": info.project_id, "project_id": info.project_id,
            "port_id": info.port_id, "network_id": info.network_id, "subnet_id": info.subnet_ids[0],
            "subnet_ids": info.subnet_ids}


def floatingip(row: asyncpg.Record) -> dict[str, Any]:
    details = None
    if row["port_id"] is not None:
        details = {"name": row["port_name"], "network_id": str(row["port_network_id"]),
                   "mac_address": str(row["port_mac"]), "admin_state_up": row["port_admin_state_up"],
                   "status": row["port_status"], "device_id": row["port_device_id"],
                   "device_owner": row["port_device_owner"]}
    return {
        "id": str(row["id"]),
        "floating_ip_address": host(row["floating_ip_address"]),
        "floating_network_id": str(row["floating_network_id"]),
        "router_id": None if row["router_id"] is None else str(row["router_id"]),
        "port_id": None if row["port_id"] is None else str(row["port_id"]),
        "fixed_ip_address": None if row["fixed_ip_address"] is None else host(row["fixed_ip_address"]),
        "status": row["status"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "description": row["description"],
        "port_details": details,
        "qos_policy_id": None,
        "port_forwardings": [],
        **_times(row),
    }


EXTENSIONS = [
    ("agent", "agent", "The agent management extension."),
    ("external-net", "Neutron external network", "Adds external network attribute to network resource."),
    ("router", "Neutron L3 Router", "Router abstraction for basic L3 forwarding between L2 Neutron networks "
     "and access to external networks via a NAT gateway."),
    ("ext-gw-mode", "Neutron L3 Configurable external gateway mode",
     "Extension of the router abstraction for specifying whether SNAT should occur on the external gateway"),
    ("fip-port-details", "Floating IP Port Details Extension", "Add port_details attribute to Floating IP resource"),
    ("provider", "Provider Network", "Expose mapping of virtual networks to physical networks"),
    ("quotas", "Quota management support", "Expose functions for quotas management per project"),
    ("allowed-address-pairs", "Allowed Address Pairs", "Provides allowed address pairs"),
    ("binding", "Port Binding", "Expose port bindings of a virtual port to external application"),
    ("net-mtu", "Network MTU", "Provides MTU attribute for a network resource."),
    ("net-mtu-writable", "Network MTU (writable)", "Provides a writable MTU attribute for a network resource."),
    ("port-security", "Port Security", "Provides port security"),
    ("subnet-external-network", "Subnet External Network",
     "Informs if the subnet belongs to an external network (router:external); such subnets are visible "
     "to every project"),
    ("ip-substring-filtering", "IP address substring filtering",
     "Provides IP address substring filtering when listing ports"),
    ("project-id", "project_id field enabled", "Extension that indicates that project_id field is enabled."),
    ("security-group", "security-group", "The security groups extension."),
    ("standard-attr-description", "standard-attr-description", "Extension to add descriptions to standard attributes"),
    ("standard-attr-revisions", "Resource revision numbers", "This extension presents the resource revision number."),
    ("standard-attr-timestamp", "Resource timestamps", "Adds created_at and updated_at fields to all resources."),
]


def extension(alias: str, name: str, description: str) -> dict[str, Any]:
    return {"alias": alias, "name": name, "description": description, "links": [],
            "updated": "2013-01-01T00:00:00-00:00"}


def security_group_rule(row: asyncpg.Record) -> dict[str, Any]:
    stored = row["remote_ip_prefix"]
    prefix = None if stored is None else security_group_rules.shown_prefix(stored)
    return {
        "id": str(row["id"]),
        "security_group_id": str(row["security_group_id"]),
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "direction": row["direction"],
        "ethertype": row["ethertype"],
        "protocol": row["protocol"],
        "port_range_min": row["port_range_min"],
        "port_range_max": row["port_range_max"],
        "remote_ip_prefix": prefix,
        "normalized_cidr": None if stored is None else security_group_rules.normalized(stored),
        "remote_group_id": None if row["remote_group_id"] is None else str(row["remote_group_id"]),
        "remote_address_group_id": None,
        "description": row["description"],
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
        "revision_number": 0,
    }


def security_group(row: asyncpg.Record, rules: list[asyncpg.Record]) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "name": row["name"],
        "description": row["description"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "stateful": row["stateful"],
        "shared": False,
        "security_group_rules": [security_group_rule(r) for r in rules],
        **_times(row),
    }
