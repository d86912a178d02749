"""The hook plugin API: what a site's own code imports to run around a server's lifecycle
without patching ours (Nova's hooks, made async).

A plugin is any object (a module is simplest) that an installed package offers under the
entry-point group `nova_async.hooks`, and that `[hooks] enabled` names: nothing loads just
because it is installed. It says which version of this API it was written for
(`hook_api_version = HOOK_API_VERSION`) and defines some of the hook points, each an
`async def` taking the instance's versioned payload (a `nova_object.*` dict, the shape the
versioned notifications carry) and the point's keyword details:

    pre_create(payload)                 API, before anything is written (may veto)
    post_create(payload)                API, once the instance is written and handed on
    pre_delete(payload)                 API, before a delete is accepted (may veto)
    post_delete(payload)                compute, once the server and all it held are gone
    pre_resize(payload, flavor)         API, before a resize is accepted (may veto)
    post_resize(payload, flavor)        compute, once the server runs on the new flavor
    pre_action(payload, action)         API, before a power action is accepted (may veto)
    post_action(payload, action)        compute, once the power action is done
    notification(envelope)              any role, for each versioned notification this process
                                        hears (Nova's envelope: event_type, payload, …)
    pre_build / post_build(payload)     compute, before the build / once the server is ACTIVE
    network_info(payload, network_info) compute, once its ports are allocated (may veto)

A `pre_*` hook (and `network_info`) refuses the step by raising `HookVeto(reason)`; the
post hooks only observe. The runner is nova_async/hooks/runner.py; the README's "Writing a
hook" shows the example plugin in examples/site_hooks."""

from __future__ import annotations

from nova_async.common.errors import InvalidInput

# Raised when what a hook is given or how it is called changes incompatibly; a plugin
# written for another version is refused at start-up rather than misread.
HOOK_API_VERSION = 1

# Every hook point, in the order a server meets them.
HOOK_POINTS = ("pre_create", "post_create", "pre_build", "network_info", "post_build",
               "pre_resize", "post_resize", "pre_action", "post_action", "pre_delete", "post_delete",
               "notification")


class HookVeto(InvalidInput):
    """A hook refuses the step, saying why. In the API the request is answered 400 (Nova's
    badRequest, the reason as its message) with nothing written; on a compute host the
    build ends in ERROR with the reason as its fault and is not tried on another host (the
    site's rule would refuse it there too)."""

    code = "hook_veto"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


__all__ = ["HOOK_API_VERSION", "HOOK_POINTS", "HookVeto"]
