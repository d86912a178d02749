"""The network API's one route table and its fault format.

Neutron answers errors as {"NeutronError": {"type", "message", "detail"}}. The type is
Neutron's exception name: our errors carry a machine code, mapped to that name here; an
error without a Neutron-specific name gets the generic one for its status."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import add_routes, api_app, dump
from nova_async.network.handlers import (agents, extensions, floatingips, networks, ports, quotas, routers,
                                         security_groups, subnets, versions)
from nova_async.network.state import STATE, NetworkApi

V2 = "/v2.0"

ROUTES = [
    ("GET", "", versions.show_versions),
    ("GET", "/", versions.show_versions),
    ("GET", V2, versions.show_resources),
    ("GET", f"{V2}/", versions.show_resources),
    ("GET", f"{V2}/networks", networks.list_networks),
    ("POST", f"{V2}/networks", networks.create_network),
    ("GET", f"{V2}/networks/{{network_id}}", networks.show_network),
    ("PUT", f"{V2}/networks/{{network_id}}", networks.update_network),
    ("DELETE", f"{V2}/networks/{{network_id}}", networks.delete_network),
    ("GET", f"{V2}/subnets", subnets.list_subnets),
    ("POST", f"{V2}/subnets", subnets.create_subnet),
    ("GET", f"{V2}/subnets/{{subnet_id}}", subnets.show_subnet),
    ("PUT", f"{V2}/subnets/{{subnet_id}}", subnets.update_subnet),
    ("DELETE", f"{V2}/subnets/{{subnet_id}}", subnets.delete_subnet),
    ("GET", f"{V2}/ports", ports.list_ports),
    ("POST", f"{V2}/ports", ports.create_port),
    ("GET", f"{V2}/ports/{{port_id}}", ports.show_port),
    ("PUT", f"{V2}/ports/{{port_id}}", ports.update_port),
    ("DELETE", f"{V2}/ports/{{port_id}}", ports.delete_port),
    ("GET", f"{V2}/routers", routers.list_routers),
    ("POST", f"{V2}/routers", routers.create_router),
    ("GET", f"{V2}/routers/{{router_id}}", routers.show_router),
    ("PUT", f"{V2}/routers/{{router_id}}", routers.update_router),
    ("DELETE", f"{V2}/routers/{{router_id}}", routers.delete_router),
    ("PUT", f"{V2}/routers/{{router_id}}/add_router_interface", routers.add_router_interface),
    ("PUT", f"{V2}/routers/{{router_id}}/remove_router_interface", routers.remove_router_interface),
    ("GET", f"{V2}/floatingips", floatingips.list_floatingips),
    ("POST", f"{V2}/floatingips", floatingips.create_floatingip),
    ("GET", f"{V2}/floatingips/{{floatingip_id}}", floatingips.show_floatingip),
    ("PUT", f"{V2}/floatingips/{{floatingip_id}}", floatingips.update_floatingip),
    ("DELETE", f"{V2}/floatingips/{{floatingip_id}}", floatingips.delete_floatingip),
    ("GET", f"{V2}/extensions", extensions.list_extensions),
    ("GET", f"{V2}/extensions/{{alias}}", extensions.show_extension),
    ("GET", f"{V2}/security-groups", security_groups.list_security_groups),
    ("POST", f"{V2}/security-groups", security_groups.create_security_group),
    ("GET", f"{V2}/security-groups/{{security_group_id}}", security_groups.show_security_group),
    ("PUT", f"{V2}/security-groups/{{security_group_id}}", security_groups.update_security_group),
    ("DELETE", f"{V2}/security-groups/{{security_group_id}}", security_groups.delete_security_group),
    ("GET", f"{V2}/security-group-rules", security_groups.list_security_group_rules),
    ("POST", f"{V2}/security-group-rules", security_groups.create_security_group_rule),
    ("GET", f"{V2}/security-group-rules/{{rule_id}}", security_groups.show_security_group_rule),
    ("DELETE", f"{V2}/security-group-rules/{{rule_id}}", security_groups.delete_security_group_rule),
    ("GET", f"{V2}/agents", agents.list_agents),
    ("GET", f"{V2}/agents/{{agent_id}}", agents.show_agent),
    ("PUT", f"{V2}/agents/{{agent_id}}", agents.update_agent),
    ("DELETE", f"{V2}/agents/{{agent_id}}", agents.delete_agent),
    ("GET", f"{V2}/quotas/{{project_id}}", quotas.show_quota),
    ("GET", f"{V2}/quotas/{{project_id}}/details", quotas.show_quota_details),
]

NEUTRON_TYPES = {
    "network_not_found": "NetworkNotFound",
    "subnet_not_found": "SubnetNotFound",
    "port_not_found": "PortNotFound",
    "network_in_use": "NetworkInUse",
    "subnet_in_use": "SubnetInUse",
    "port_in_use": "PortInUse",
    "ip_exhausted": "IpAddressGenerationFailure",
    "ip_in_use": "IpAddressAlreadyAllocated",
    "mac_in_use": "MacAddressInUse",
    "mac_generation_failed": "MacAddressGenerationFailure",
    "network_requires_subnet": "NetworkRequiresSubnet",
    "network_ambiguous": "NetworkAmbiguous",
    "bad_request": "BadRequest",
    "over_quota": "OverQuota",
    "service_port_in_use": "ServicePortInUse",
    "flat_network_in_use": "FlatNetworkInUse",
    "router_not_found": "RouterNotFound",
    "router_in_use": "RouterInUse",
    "router_interface_not_found": "RouterInterfaceNotFound",
    "router_interface_not_found_for_subnet": "RouterInterfaceNotFoundForSubnet",
    "router_interface_in_use_by_floatingip": "RouterInterfaceInUseByFloatingIP",
    "gateway_in_use_by_floatingip": "RouterExternalGatewayInUseByFloatingIp",
    "subnet_mismatch_for_port": "SubnetMismatchForPort",
    "floatingip_not_found": "FloatingIPNotFound",
    "floatingip_port_already_associated": "FloatingIPPortAlreadyAssociated",
    "external_gateway_not_found": "ExternalGatewayForFloatingIPNotFound",
    "invalid_ip_for_network": "InvalidIpForNetwork",
    "extension_not_found": "ExtensionNotFound",
    "agent_not_found": "AgentNotFound",
    # updates and bulk creates
    "policy_not_authorized": "PolicyNotAuthorized",
    "invalid_shared_setting": "InvalidSharedSetting",
    "external_network_in_use": "ExternalNetworkInUse",
    "gateway_conflicts_with_pools": "GatewayConflictWithAllocationPools",
    "gateway_ip_in_use": "GatewayIpInUse",
    "port_bound": "PortBound",
    "security_group_not_found": "SecurityGroupNotFound",
    "port_security_has_groups": "PortSecurityPortHasSecurityGroup",
    "port_security_required_for_groups": "PortSecurityAndIPRequiredForSecurityGroups",
    "address_pair_needs_port_security": "AddressPairAndPortSecurityRequired",
    "duplicate_address_pair": "DuplicateAddressPairInRequest",
    "address_pairs_exhausted": "AllowedAddressPairExhausted",
    "security_group_rule_not_found": "SecurityGroupRuleNotFound",
    "security_group_in_use": "SecurityGroupInUse",
    "security_group_default_exists": "SecurityGroupDefaultAlreadyExists",
    "security_group_cannot_update_default": "SecurityGroupCannotUpdateDefault",
    "security_group_cannot_remove_default": "SecurityGroupCannotRemoveDefault",
    "security_group_rule_exists": "SecurityGroupRuleExists",
    "security_group_rule_invalid_protocol": "SecurityGroupRuleInvalidProtocol",
    "security_group_rule_invalid_ethertype": "SecurityGroupRuleInvalidEtherType",
    "security_group_rule_parameter_conflict": "SecurityGroupRuleParameterConflict",
    "security_group_remote_group_and_remote_ip_prefix": "SecurityGroupRemoteGroupAndRemoteIpPrefix",
    "security_group_protocol_required_with_ports": "SecurityGroupProtocolRequiredWithPorts",
    "security_group_invalid_port_value": "SecurityGroupInvalidPortValue",
    "security_group_invalid_port_range": "SecurityGroupInvalidPortRange",
    "security_group_invalid_icmp_value": "SecurityGroupInvalidIcmpValue",
    "security_group_missing_icmp_type": "SecurityGroupMissingIcmpType",
    "security_group_invalid_protocol_for_port": "SecurityGroupInvalidProtocolForPort",
    "port_security_required": "PortSecurityAndIPRequiredForSecurityGroups",
}

_BY_STATUS = {400: "HTTPBadRequest", 401: "HTTPUnauthorized", 403: "HTTPForbidden", 404: "HTTPNotFound",
              405: "HTTPMethodNotAllowed", 406: "HTTPNotAcceptable", 409: "HTTPConflict",
              413: "HTTPRequestEntityTooLarge", 415: "HTTPUnsupportedMediaType",
              503: "HTTPServiceUnavailable"}


def render_fault(exc: errors.NovaAsyncError, request_id: str) -> web.Response:
    kind = NEUTRON_TYPES.get(exc.code) or _BY_STATUS.get(exc.status, "HTTPInternalServerError")
    return dump({"NeutronError": {"type": kind, "message": exc.message, "detail": ""}}, status=exc.status)


def build_app(state: NetworkApi) -> web.Application:
    app = api_app(render_fault)
    app[STATE] = state
    add_routes(app, ROUTES)
    return app
