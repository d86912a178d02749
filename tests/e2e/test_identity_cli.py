"""Projects, users and roles, managed with the real `openstack` CLI and with `nova-async
project|user|role`, against a live `nova-async serve` on its private PostgreSQL cluster (the
`make run` default), which the `nova-async` commands share with it while it runs."""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import serve
from tests.e2e.driver import BIN, os_env, run

pytestmark = [
    pytest.mark.long,
    pytest.mark.e2e,
    pytest.mark.skipif(not (BIN / "openstack").exists() and not shutil.which("openstack"),
                       reason="python-openstackclient is installed by `make test`"),
]


class Shell:
    """The `openstack` CLI as one user or another, and `nova-async` commands beside the
    served process, on its state directory (they read its database from there)."""

    def __init__(self, served, cwd: Path) -> None:
        self.served, self.cwd = served, cwd
        # The clients' environment without a user: each command says whose it is.
        self.env = {k: v for k, v in os_env(served).items()
                    if k not in ("OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME")}
        self.admin = ("admin", served.password, "admin")

    async def run(self, argv: list[str], env: dict[str, str], stdin: bytes | None = None) -> tuple[int, str]:
        return await run(*argv, env=env, cwd=self.cwd, stdin=stdin, timeout=120)

    async def osc(self, *args: str, who: tuple[str, str, str] | None = None) -> tuple[int, str]:
        user, password, project = who or self.admin
        env = {**self.env, "OS_USERNAME": user, "OS_PASSWORD": password, "OS_PROJECT_NAME": project}
        return await self.run(["openstack", *args], env)

    async def ok(self, *args: str, who: tuple[str, str, str] | None = None) -> str:
        rc, out = await self.osc(*args, who=who)
        assert rc == 0, (args, out)
        return out

    async def nova(self, *args: str, stdin: bytes | None = None) -> tuple[int, str]:
        return await self.run([sys.executable, "-m", "nova_async", *args, "--state-dir", str(self.served.state_dir)],
                              self.env, stdin)


async def test_identity_with_openstack_and_nova_async_commands(work_dir):
    async with serve(work_dir / "identity", "--libvirt-uri", "test:///default") as served:
        sh = Shell(served, work_dir)

        # --- with the openstack CLI, as admin -------------------------------------------
        out = await sh.ok("project", "create", "demo", "--description", "Demo project")
        assert re.search(r"\| name +\| demo ", out) and re.search(r"\| enabled +\| True ", out)
        assert re.search(r"\| demo +\|", await sh.ok("project", "list"))
        assert re.search(r"\| description +\| Demo project ", await sh.ok("project", "show", "demo"))
        out = await sh.ok("user", "create", "--password", "alice-pw", "--project", "demo", "alice")
        assert re.search(r"\| name +\| alice ", out)
        await sh.ok("role", "add", "--user", "alice", "--project", "demo", "member")
        out = await sh.ok("role", "assignment", "list", "--names")
        assert re.search(r"\| member +\| alice@Default +\| +\| demo@Default ", out), out
        assert re.search(r"\| admin +\| admin@Default +\| +\| admin@Default ", out), out
        out = await sh.ok("role", "list", "-f", "value", "-c", "Name")
        assert sorted(out.split()) == ["admin", "manager", "member", "reader", "service"]
        assert re.search(r"\| alice +\|", await sh.ok("user", "list"))
        assert re.search(r"\| enabled +\| True ", await sh.ok("user", "show", "alice"))
        await sh.ok("user", "set", "--password", "alice-pw2", "alice")

        # alice, a member of demo, sees her (empty) project; her old password is gone
        alice = ("alice", "alice-pw2", "demo")
        assert (await sh.ok("server", "list", "-f", "value", who=alice)).strip() == ""
        rc, out = await sh.osc("server", "list", who=("alice", "alice-pw", "demo"))
        assert rc != 0 and "401" in out, out
        rc, out = await sh.osc("project", "create", "hers", who=alice)
        assert rc != 0 and "403" in out, out

        # --- with nova-async, in the database, while the service runs ---------------------
        rc, out = await sh.nova("project", "create", "lab", "--description", "Lab")
        assert rc == 0 and out.startswith("created project lab ("), out
        rc, out = await sh.nova("project", "create", "lab")
        assert rc == 1 and "Duplicate entry found with name lab" in out and "Traceback" not in out, out
        rc, out = await sh.nova("user", "create", "max", "--password", "max-pw", "--project", "lab")
        assert rc == 0 and "with role member on project lab" in out, out
        rc, out = await sh.nova("user", "create", "rita", "--project", "lab", "--role", "reader", stdin=b"rita-pw\n")
        assert rc == 0 and "with role reader on project lab" in out, out
        rc, out = await sh.nova("user", "create", "eve", "--password", "x", "--project", "nowhere")
        assert rc == 1 and "No project with a name or id of 'nowhere'" in out and "Traceback" not in out, out
        rc, out = await sh.nova("role", "add", "boss", "--user", "max", "--project", "lab")
        assert rc == 1 and "No role with a name or id of 'boss'" in out, out
        rc, out = await sh.nova("user", "delete", "nobody")
        assert rc == 1 and "No user with a name or id of 'nobody'" in out, out
        rc, out = await sh.nova("role", "list", "--project", "lab")
        assert rc == 0 and re.search(r"max +lab +member", out) and re.search(r"rita +lab +reader", out), out
        rc, out = await sh.nova("user", "list")
        assert rc == 0 and re.search(r"rita +True +lab", out), out
        rc, out = await sh.nova("project", "list")
        assert rc == 0 and re.search(r"lab +True +Lab", out) and re.search(r"demo +True +Demo project", out), out

        # the users nova-async made log in with the openstack CLI
        max_ = ("max", "max-pw", "lab")
        assert (await sh.ok("server", "list", "-f", "value", who=max_)).strip() == ""
        await sh.ok("flavor", "create", "--ram", "64", "--disk", "1", "--vcpus", "1", "m1.mini")
        (work_dir / "tiny.img").write_bytes(b"\0" * 4096)
        await sh.ok("image", "create", "--file", str(work_dir / "tiny.img"), "--disk-format", "raw",
                    "--container-format", "bare", "--public", "tiny")
        rita = ("rita", "rita-pw", "lab")
        assert (await sh.ok("server", "list", "-f", "value", who=rita)).strip() == ""
        rc, out = await sh.osc("server", "create", "--flavor", "m1.mini", "--image", "tiny", "vm1", who=rita)
        assert rc != 0 and "403" in out, out
        rc, out = await sh.osc("network", "create", "net1", who=rita)
        assert rc != 0 and "403" in out, out

        # a role given, a password changed, a user deleted: the next command sees it
        rc, out = await sh.nova("role", "add", "member", "--user", "rita", "--project", "lab")
        assert rc == 0 and out.startswith("gave user rita role member on project lab"), out
        await sh.ok("network", "create", "net1", who=rita)
        rc, out = await sh.nova("user", "set-password", "rita", "--password", "rita-pw2")
        assert rc == 0, out
        rc, out = await sh.osc("server", "list", who=rita)
        assert rc != 0 and "401" in out, out
        # a reader may still change their own password
        await sh.ok("user", "password", "set", "--password", "rita-pw3", "--original-password", "rita-pw2",
                    who=("rita", "rita-pw2", "lab"))
        await sh.ok("server", "list", who=("rita", "rita-pw3", "lab"))
        rc, out = await sh.nova("role", "remove", "member", "--user", "max", "--project", "lab")
        assert rc == 0 and out.startswith("took role member on project lab away from user max"), out
        rc, out = await sh.osc("server", "list", who=max_)
        assert rc != 0 and "401" in out, out
        rc, out = await sh.nova("user", "delete", "max")
        assert rc == 0 and out.startswith("deleted user max"), out

        # --- and clean up with the openstack CLI ------------------------------------------
        await sh.ok("user", "delete", "alice")
        await sh.ok("project", "delete", "demo")
        out = await sh.ok("project", "list", "-f", "value", "-c", "Name")
        assert sorted(out.split()) == ["admin", "lab"]
        rc, out = await sh.osc("server", "list", who=alice)
        assert rc != 0 and "401" in out, out
        # the service kept its database through all of it
        assert served.proc.returncode is None


def _tokens_with_keystoneclient(url: str, password: str) -> dict[str, object]:
    """What a service's keystonemiddleware and a script with python-keystoneclient do with
    tokens, through keystoneauth's discovery from the catalog (blocking: run in a thread)."""
    from keystoneauth1 import exceptions as ks_exc
    from keystoneauth1 import session as ks_session
    from keystoneauth1.identity import v3
    from keystoneclient.v3 import client as ks_client

    def login() -> ks_session.Session:
        return ks_session.Session(auth=v3.Password(
            auth_url=f"{url}/v3", username="admin", password=password, project_name="admin",
            user_domain_name="Default", project_domain_name="Default"))

    sess = login()
    keystone = ks_client.Client(session=sess)
    token = sess.get_token()
    seen: dict[str, object] = {}
    access = keystone.tokens.validate(token)
    seen["user"], seen["project"] = access.username, access.project_name
    seen["catalog"] = access.has_service_catalog()
    seen["nocatalog"] = keystone.tokens.validate(token, include_catalog=False).has_service_catalog()
    seen["allow_expired"] = keystone.tokens.validate(token, allow_expired=True).username
    identity = {"service_type": "identity", "interface": "public"}
    seen["head"] = sess.head("/auth/tokens", endpoint_filter=identity, headers={"X-Subject-Token": token}).status_code

    other = login().get_token()
    keystone.tokens.revoke_token(other)
    try:
        keystone.tokens.validate(other)
        seen["revoked"] = "still valid"
    except ks_exc.NotFound:
        seen["revoked"] = 404
    seen["garbage"] = sess.get("/auth/tokens", endpoint_filter=identity, raise_exc=False,
                               headers={"X-Subject-Token": "gAnot-a-token.x"}).status_code
    return seen


async def test_tokens_validated_and_revoked_by_the_clients(work_dir):
    async with serve(work_dir / "tokens", "--roles", "identity") as served:
        sh = Shell(served, work_dir)

        seen = await asyncio.to_thread(_tokens_with_keystoneclient, served.url, served.password)
        assert seen == {"user": "admin", "project": "admin", "catalog": True, "nocatalog": False,
                        "allow_expired": "admin", "head": 200, "revoked": 404, "garbage": 404}

        # `openstack token revoke`: the token is refused from then on
        token = (await sh.ok("token", "issue", "-f", "value", "-c", "id")).strip()
        await sh.ok("token", "revoke", token)
        env = {**sh.env, "OS_AUTH_TYPE": "token", "OS_TOKEN": token, "OS_PROJECT_NAME": "admin"}
        del env["OS_USER_DOMAIN_NAME"]  # the token plugin takes no user
        rc, out = await sh.run(["openstack", "project", "list"], env)
        assert rc != 0 and "401" in out, out

        # keystoneauth finds identity v3 from the bare URL too: the root lists the versions
        env = {**sh.env, "OS_AUTH_URL": served.url, "OS_USERNAME": "admin",
               "OS_PASSWORD": served.password, "OS_PROJECT_NAME": "admin"}
        rc, out = await sh.run(["openstack", "token", "issue", "-f", "value", "-c", "project_id"], env)
        assert rc == 0 and out.strip(), out
