"""The host's network commands, as the data plane runs them: `ip` and `nft`, in the host's
namespace or in one of ours, always an argv list (never a shell), always bounded in time.
Names reach these only after `check_name` (a port's or network's id cannot become an option
or a second command); nft rule sets are passed on stdin, built from validated values."""

from __future__ import annotations

import re

from nova_async.common import errors, process

TIMEOUT = 15.0
_IFNAME = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_NETNS = re.compile(r"[A-Za-z0-9_.-]{1,64}")


class HostNetworkError(errors.NovaAsyncError):
    """A command that changes the host's networking failed; the reconciler tries again."""

    code = "host_network_failed"


def check_name(name: str, *, netns: bool = False) -> str:
    pattern = _NETNS if netns else _IFNAME
    if not isinstance(name, str) or not pattern.fullmatch(name) or name.startswith("-"):
        raise errors.InvalidInput(f"{name!r} is not a usable {'namespace' if netns else 'interface'} name")
    return name


def _in(netns: str | None, argv: tuple[str, ...]) -> tuple[str, ...]:
    return argv if netns is None else ("ip", "netns", "exec", check_name(netns, netns=True), *argv)


async def run(*argv: str, netns: str | None = None, check: bool = True,
              timeout: float = TIMEOUT) -> process.Completed:
    """Run argv (in `netns` when given); a failure raises HostNetworkError when `check`."""
    try:
        done = await process.run(*_in(netns, argv), timeout=timeout)
    except FileNotFoundError as e:
        raise HostNetworkError(f"{argv[0]} is not installed on this host ({e})") from None
    if check and done.returncode != 0:
        where = f" in {netns}" if netns else ""
        raise HostNetworkError(f"{' '.join(argv)}{where} failed: {done.output.strip()[-400:]}")
    return done


async def ip(*args: str, netns: str | None = None, check: bool = True) -> process.Completed:
    return await run("ip", *args, netns=netns, check=check)


async def nft(script: str, *, netns: str | None = None) -> None:
    """Apply an nft script atomically (`nft -f -`: all of it or none of it)."""
    argv = _in(netns, ("nft", "-f", "-"))
    try:
        done = await process.run_input(*argv, data=script.encode(), timeout=TIMEOUT)
    except FileNotFoundError:
        raise HostNetworkError("nft (nftables) is not installed on this host") from None
    if done.returncode != 0:
        raise HostNetworkError(f"nft{' in ' + netns if netns else ''} refused a rule set: "
                               f"{done.output.strip()[-600:]}")


async def namespaces() -> set[str]:
    done = await run("ip", "netns", "list", check=False)
    return {line.split()[0] for line in done.output.splitlines() if line.strip()}
