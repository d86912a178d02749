"""Security groups enforced on the host: the data-plane part that keeps this service's two
nftables tables (`inet` and `bridge`, named by `[network] dataplane_table`) equal to what
firewall_rules.py renders from the desired state. Nothing else of the host's rule set is
touched: the host's own tables, and other services' tables, stay as they are.

A pass renders both tables to text and compares it with what this process applied last; only
a difference costs an nft call, and then both tables are deleted and made again in ONE `nft -f`
transaction (never a moment with half a rule set). Connections already established survive
it: conntrack keeps them, not the table. When no guest port on this host needs filtering,
the tables go.

The firewall is left in place when the process stops (`close`): the guests keep running,
and an unfiltered guest is worse than a stale rule set the next start corrects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import structlog

from nova_async.config import NetworkSettings
from nova_async.dataplane import firewall_rules
from nova_async.dataplane.desired import Desired
from nova_async.dataplane.linux import HostNetworkError, check_name, nft, run
from nova_async.dataplane.made import Made
from nova_async.db.pool import Pool

log = structlog.get_logger("dataplane")

KIND = "nft_table"
FAMILIES = ("bridge", "inet")
# br_netfilter hands bridged IPv4/IPv6 frames to the inet hooks only when these are 1 (per
# network namespace); without them, the inet table would never see guest-to-guest traffic.
_BRIDGE_NF = ("net.bridge.bridge-nf-call-iptables=1", "net.bridge.bridge-nf-call-ip6tables=1")


class Firewall:
    name = "firewall"

    def __init__(self, *, pool: Pool, made: Made, settings: NetworkSettings, host: str,
                 state_dir: Path, netns: str | None = None) -> None:
        """`netns`: where the bridges live, and so where the tables go — the host's own
        namespace unless told otherwise (tests use a namespace of their own)."""
        self.made = made
        self.host = host
        self.table = firewall_rules.check_table(settings.dataplane_table)
        self.netns = None if netns is None else check_name(netns, netns=True)
        # What this process last applied ({} = no tables); None until the first pass, which
        # therefore always applies: the tables a previous run left may be anything.
        self._applied: dict[str, str] | None = None

    async def apply(self, want: Desired) -> None:
        bodies = firewall_rules.render(want, host=self.host, table=self.table)
        if bodies == self._applied:
            return
        ours = await self._listed()
        wanted = {self._made_name(f): f for f in bodies}
        stale = {name: detail for name, detail in ours.items() if name not in wanted}
        if bodies:
            await self._bridge_netfilter()
            for name, family in wanted.items():
                await self.made.record(KIND, name, self._detail(family))
        if bodies or stale:
            await nft(self._script(bodies, stale), netns=self.netns)
            log.info("firewall_applied", tables=sorted(wanted), removed=sorted(stale))
        for name in stale:
            await self.made.forget(KIND, name)
        self._applied = bodies

    async def close(self) -> None:
        """Nothing to release; the rules stay (see the module's docstring)."""

    def _made_name(self, family: str) -> str:
        return f"{family} {self.table}" + (f" in {self.netns}" if self.netns else "")

    def _detail(self, family: str) -> dict[str, Any]:
        return {"part": self.name, "family": family, "table": self.table, "netns": self.netns}

    async def _listed(self) -> dict[str, dict[str, Any]]:
        """The tables the record says this part made in this namespace (under any table
        name: a changed `dataplane_table` setting leaves the old ones to remove)."""
        rows = await self.made.listed(KIND)
        return {name: d for name, d in rows.items()
                if d.get("part") == self.name and d.get("netns") == self.netns}

    def _script(self, bodies: dict[str, str], stale: dict[str, dict[str, Any]]) -> str:
        gone = sorted((d["family"], firewall_rules.check_table(d["table"])) for d in stale.values()
                      if d.get("family") in FAMILIES)
        return "".join(f"table {family} {table} {{}}\ndelete table {family} {table}\n"
                       for family, table in gone) + firewall_rules.script(self.table, bodies)

    async def _bridge_netfilter(self) -> None:
        """Bridged traffic through the inet hooks, or a clear error saying why not."""
        done = await run("sysctl", "-q", "-w", *_BRIDGE_NF, netns=self.netns, check=False)
        if done.returncode == 0:
            return
        # /proc/sys/net/bridge exists only once br_netfilter is loaded (one module for every
        # namespace, so it is loaded from the host's).
        try:
            loaded = await run("modprobe", "br_netfilter", check=False)
            why = loaded.output.strip()
        except HostNetworkError as e:
            why = str(e)
        done = await run("sysctl", "-q", "-w", *_BRIDGE_NF, netns=self.netns, check=False)
        if done.returncode != 0:
            raise HostNetworkError(
                "security groups need the kernel's br_netfilter module (bridged traffic through "
                f"nftables' inet hooks), and it is not loaded: {why or done.output.strip()}; "
                "load it (modprobe br_netfilter) or run without guest port security")
