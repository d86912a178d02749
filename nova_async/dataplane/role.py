"""The data-plane role: runs the reconciler on hosts whose guests need real networks
(`[network] dataplane`). Placeholder until the reconciler lands (issue 21)."""

from __future__ import annotations

from nova_async.role import Role


class DataplaneRole(Role):
    name = "dataplane"
