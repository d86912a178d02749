"""How networks, subnets and ports look to Neutron v2.0 clients.

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
        for name in ("network", "subnet", "port")]}


# Neutron API extensions this service answers for, by alias: clients look some up before they
# send an attribute (`openstack port create` lists them to decide how to set tags).
EXTENSIONS = {
    "allowed-address-pairs": "Allowed Address Pairs",
    "binding": "Port Binding",
    "external-net": "Neutron external network",
    "net-mtu": "Network MTU",
    "net-mtu-writable": "Network MTU (writable)",
    "port-security": "Port Security",
    "project-id": "project_id field enabled",
    "quotas": "Quota management support",
    "security-group": "security-group",
    "standard-attr-description": "standard-attr-description",
    "standard-attr-revisions": "Resource revision numbers",
    "standard-attr-timestamp": "Resource timestamps",
}


def extension(alias: str) -> dict[str, Any]:
    return {"alias": alias, "name": EXTENSIONS[alias], "description": EXTENSIONS[alias],
            "updated": "2013-01-01T00:00:00-00:00", "links": []}


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


def port(row: asyncpg.Record, fixed_ips: list[dict[str, str]], security_groups: list[str]) -> dict[str, Any]:
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
        "security_groups": security_groups,
        "allowed_address_pairs": row["allowed_address_pairs"],
        "extra_dhcp_opts": [],
        "port_security_enabled": row["port_security_enabled"],
        **_times(row),
    }

