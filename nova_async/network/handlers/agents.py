"""The /v2.0/agents resource (Neutron's `agent` extension), which has no agents to list.

Neutron's agents are separate processes (L3, DHCP, OVS, metadata) that report their state
to the server. Here that work is done by the network and data-plane roles inside the one
process, so nothing reports as an agent, and the answer is the one a Neutron server gives
before any agent has reported: an empty list, and 404 AgentNotFound for any id. A project
member sees an empty list in Neutron as well (its policy lets only admins see agents, and a
listing leaves out what the caller may not see). `openstack network agent list` works."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump


async def list_agents(request: web.Request) -> web.Response:
    return dump({"agents": []})


def _not_found(request: web.Request) -> errors.NotFound:
    agent_id = request.match_info["agent_id"]
    return errors.NotFound(f"Agent {agent_id} could not be found.", code="agent_not_found")


async def show_agent(request: web.Request) -> web.Response:
    raise _not_found(request)


async def update_agent(request: web.Request) -> web.Response:
    raise _not_found(request)


async def delete_agent(request: web.Request) -> web.Response:
    raise _not_found(request)
