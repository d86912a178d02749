"""How networks, subnets, ports and security groups look to Neutron v2.0 clients.

Attributes of Neutron extensions this subset does not implement are shown with the
values a plain Neutron deployment would show, so clients that print them have something."""

from __future__ import annotations

from typing import Any

import asyncpg

from nova_async.common.timeutil import iso
from nova_async.network.ipam import host


def only(data: dict[str, Any], fields: list[str] | None) -> dict[str, Any]:
    """Neutron's `?fields=a&fields=b`: only the attributes asked for."""
    if not fields:
        return data
    return {k: v for k, v in data.items() if k in fields}


def _times(row: asyncpg.Record) -> dict[str, Any]:
    return {"created_at": iso(row["created_at"]), "updated_at": iso(row["updated_at"]),
            "revision_number": 1, "tags": []}


def versions(base_url: str) -> dict[str, Any]:
    return {"versions": [{"id": "v2.0", "status": "CURRENT",
                          "links": [{"href": f"{base_url}/network/v2.0/", "rel": "self"}]}]}


def resources(base_url: str) -> dict[str, Any]:
    return {"resources": [
        {"name": name, "collection": f"{name}s",
         "links": [{"href": f"{base_url}/network/v2.0/{name}s", "rel": "self"}]}
        for name in ("network", "subnet", "port")] + [
        {"name": name, "collection": name.replace("_", "-") + "s",
         "links": [{"href": f"{base_url}/network/v2.0/{name.replace('_', '-')}s", "rel": "self"}]}
        for name in ("security_group", "security_group_rule")]}


def network(row: asyncpg.Record) -> dict[str, Any]:
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
        "allowed_address_pairs": [],
        "extra_dhcp_opts": [],
        "port_security_enabled": row["port_security_enabled"],
        **_times(row),
    }



def security_group_rule(row: asyncpg.Record) -> dict[str, Any]:
    prefix = None if row["remote_ip_prefix"] is None else str(row["remote_ip_prefix"])
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
        "normalized_cidr": prefix,
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
