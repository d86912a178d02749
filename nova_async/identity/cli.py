"""`nova-async project|user|role …`: manage identity straight in the database.

For the first admin steps on a box, scripts, and when the service is not running: the same
database options as `serve` (`--database DSN`, or the private cluster under `--state-dir`,
used as it is when the service has it running, started for the command otherwise). Taking
access away (deleting a user, a new password, removing a role) also ends the tokens a running
service has already issued."""
# How that reaches the service: a revocation event and a NOTIFY (see revocations.py).

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Callable


from nova_async import config
from nova_async.common import errors
from nova_async.db.offline import open_database
from nova_async.identity.admin import IdentityAdmin
from nova_async.identity.store import Q

COMMANDS = ("project", "user", "role")


def add_parsers(sub: argparse._SubParsersAction, setting_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    def command(group: argparse._SubParsersAction, name: str, help: str) -> argparse.ArgumentParser:
        p = group.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".")
        setting_flags(p)
        return p

    project = sub.add_parser("project", help="create, list and delete projects (in the database)",
                             description=__doc__.split("\n\n")[1])
    group = project.add_subparsers(dest="identity_command", required=True)
    p = command(group, "create", "create a project")
    p.add_argument("name")
    p.add_argument("--description", default="")
    command(group, "list", "list projects")
    p = command(group, "delete", "delete a project and its role assignments (what it owns stays)")
    p.add_argument("project", help="name or id")

    user = sub.add_parser("user", help="create, list and delete users, set passwords (in the database)",
                          description=__doc__.split("\n\n")[1])
    group = user.add_subparsers(dest="identity_command", required=True)
    p = command(group, "create", "create a user, optionally with a role on a project")
    p.add_argument("name")
    p.add_argument("--password", help="asked for when not given (read from stdin when it is not a terminal)")
    p.add_argument("--project", help="the user's project (name or id): made their default project, "
                                     "and given them --role on it")
    p.add_argument("--role", default="member", help="role on --project (admin, member, reader) [member]")
    command(group, "list", "list users")
    p = command(group, "delete", "delete a user (their tokens stop working)")
    p.add_argument("user", help="name or id")
    p = command(group, "set-password", "give a user a new password (their tokens stop working)")
    p.add_argument("user", help="name or id")
    p.add_argument("--password", help="asked for when not given (read from stdin when it is not a terminal)")

    role = sub.add_parser("role", help="give and take roles on projects, list who has which (in the database)",
                          description=__doc__.split("\n\n")[1])
    group = role.add_subparsers(dest="identity_command", required=True)
    for verb, text in (("add", "give a user a role on a project"),
                       ("remove", "take a role on a project away from a user (their tokens for it stop working)")):
        p = command(group, verb, text)
        p.add_argument("role", help="admin, member or reader")
        p.add_argument("--user", required=True, help="name or id")
        p.add_argument("--project", required=True, help="name or id")
    p = command(group, "list", "list role assignments")
    p.add_argument("--user", help="only this user's (name or id)")
    p.add_argument("--project", help="only on this project (name or id)")


def _password(given: str | None) -> str:
    if given is not None:
        return given
    if not sys.stdin.isatty():
        line = sys.stdin.readline().rstrip("\n")
        if not line:
            raise errors.InvalidInput("no password given (--password, or one line on stdin)")
        return line
    first = getpass.getpass("Password: ")
    if first != getpass.getpass("Repeat password: "):
        raise errors.InvalidInput("the passwords do not match")
    if not first:
        raise errors.InvalidInput("the password is empty")
    return first


def _table(headers: tuple[str, ...], rows: list[tuple]) -> str:
    cells = [headers] + [tuple("" if v is None else str(v) for v in row) for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells)


async def run(args: argparse.Namespace, settings: config.Settings) -> str:
    """Carry out one command; what to print on success (errors raise NovaAsyncError)."""
    async with open_database(settings) as (pool, _dsn):
        admin = IdentityAdmin(pool, settings.identity.revocation_horizon)
        return await _COMMANDS[(args.command, args.identity_command)](admin, args)


async def _project_create(admin: IdentityAdmin, args: argparse.Namespace) -> str:
    row = await admin.create_project(args.name, args.description)
    return f"created project {row['name']} ({row['id']})"


async def _project_list(admin: IdentityAdmin, args: argparse.Namespace) -> str:
    rows = await admin.pool.fetch(Q.list_projects, None, None, None)
    return _table(("ID", "NAME", "ENABLED", "DESCRIPTION"),
                  [(r["id"], r["name"], r["enabled"], r["description"]) for r in rows])


async def _project_delete(admin: IdentityAdmin, args: argparse.Namespace) -> str:
    row = await admin.find_project(args.project)
    await admin.delete_project(row["id"])
    return f"deleted project {row['name']} ({row['id']})"


async def _user_create(admin: IdentityAdmin, args: argparse.Namespace) -> str:
    project = await admin.find_project(args.project) if args.project else None
    role = await admin.find_role(args.role) if project else None
    row = await admin.create_user(args.name, _password(args.password),
                                  default_project_id=project["id"] if project else None)
    text = f"created user {row['name']} ({row['id']})"
    if project and role:
        await admin.grant(row["id"], project["id"], role["name"])
        text += f" with role {role['name']} on project {project['name']}"
    return text


async def _user_list(admin: IdentityAdmin, args: argparse.Namespace) -> str:
    rows = await admin.pool.fetch(Q.list_users, None, None)
    projects = {r["id"]: r["name"] for r in await admin.pool.fetch(Q.list_projects, None, None, None)}
    return _table(("ID", "NAME", "ENABLED", "PROJECT"),
                  [(r["id"], r["name"], r["enabled"], projects.get(r["default_project_id"])) for r in rows])


async def _user_delete(admin: IdentityAdmin, args: argparse.Namespace) -> str:
    row = await admin.find_user(args.user)
    await admin.delete_user(row["id"])
    return f"deleted user {row['name']} ({row['id']})"


async def _user_set_password(admin: IdentityAdmin, args: argparse.Namespace) -> str:
    row = await admin.find_user(args.user)
    await admin.update_user(row["id"], password=_password(args.password))
    return f"changed the password of user {row['name']}"


async def _role_change(admin: IdentityAdmin, args: argparse.Namespace) -> str:
    user, project = await admin.find_user(args.user), await admin.find_project(args.project)
    role = await admin.find_role(args.role)
    what = f"role {role['name']} on project {project['name']}"
    had = await admin.has_role(user["id"], project["id"], role["name"])
    if args.identity_command == "add":
        if had:
            return f"user {user['name']} already has {what}"
        await admin.grant(user["id"], project["id"], role["name"])
        return f"gave user {user['name']} {what}"
    if not had:
        raise errors.NotFound(f"user {user['name']} has no {what}")
    await admin.revoke(user["id"], project["id"], role["name"])
    return f"took {what} away from user {user['name']}"


async def _role_list(admin: IdentityAdmin, args: argparse.Namespace) -> str:
    user = await admin.find_user(args.user) if args.user else None
    project = await admin.find_project(args.project) if args.project else None
    rows = await admin.assignments(user_id=user["id"] if user else None,
                                   project_id=project["id"] if project else None)
    return _table(("USER", "PROJECT", "ROLE"), [(r["user_name"], r["project_name"], r["role_name"]) for r in rows])


_COMMANDS = {
    ("project", "create"): _project_create, ("project", "list"): _project_list,
    ("project", "delete"): _project_delete,
    ("user", "create"): _user_create, ("user", "list"): _user_list, ("user", "delete"): _user_delete,
    ("user", "set-password"): _user_set_password,
    ("role", "add"): _role_change, ("role", "remove"): _role_change, ("role", "list"): _role_list,
}
