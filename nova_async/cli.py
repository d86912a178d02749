"""The `nova-async` command: `serve`, `db migrate`, `host-setup`, `guest-image`, `cloud-image`, and
`project`/`user`/`role` (identity, managed in the database: nova_async/identity/cli.py).

Every `serve` flag is also a config-file setting; config.py is the one place they are
documented (`nova-async serve --help` prints them)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from nova_async import __version__, config
from nova_async.common import log as logging_setup
from nova_async.db import cells_cli
from nova_async.identity import cli as identity_cli


def _add_setting_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="PATH", help="TOML config file (same names as the flags)")
    for section, name, flag, f in config.flag_table():
        default = f.default if f.default is not config.dataclasses.MISSING else "computed"
        if isinstance(default, tuple):
            default = ",".join(default)
        parser.add_argument(flag, dest=f"{section}.{name}", default=None, metavar=name.upper(),
                            help=f"{f.metadata['doc']} [{section}.{name}; default: {default or 'empty'}]")


def _settings(args: argparse.Namespace) -> config.Settings:
    overrides = {}
    for key, value in vars(args).items():
        if "." in key and value is not None:
            section, _, name = key.partition(".")
            overrides[(section, name)] = value
    return config.load(args.config, overrides)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nova-async", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"nova-async {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the roles of this process (all of them by default)",
                           description="Run nova-async: API, conductor, scheduler, placement, compute, "
                                       "identity, image and network roles in one asyncio process.",
                           epilog=config.settings_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_setting_flags(serve)

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    migrate = db_sub.add_parser("migrate", help="apply the schema migrations in sql/ and exit",
                                description="Apply pending migrations to --database (or to the private "
                                            "cluster in --state-dir) and exit: the expand ones, then the "
                                            "contract ones once every live service runs this release.")
    phase = migrate.add_mutually_exclusive_group()
    phase.add_argument("--expand", dest="migrate_mode", action="store_const", const="EXPAND",
                       help="only the expand migrations (safe while older releases run)")
    phase.add_argument("--contract", dest="migrate_mode", action="store_const", const="CONTRACT",
                       help="only the contract migrations; refused while a live service runs an older release")
    migrate.set_defaults(migrate_mode="ALL")
    _add_setting_flags(migrate)

    host = sub.add_parser("host-setup", help="start libvirt, fix /dev/kvm and probe KVM (idempotent)",
                          description="Get this machine ready to run real guests on qemu:///system.")
    _add_setting_flags(host)
    image = sub.add_parser("guest-image", help="build (once) the demo guest kernel and initramfs",
                           description="Build the demo guest offline from Debian packages into a cache "
                                       "directory, or reuse it when it is already there.")
    image.add_argument("--out", metavar="DIR", help="cache directory (default: /var/cache/nova-async/"
                                                    "guest-image as root, else $XDG_CACHE_HOME/nova-async/guest-image)")
    image.set_defaults(config=None)
    cloud = sub.add_parser("cloud-image", help="build (once) the Debian 12 cloud image (needs root)",
                           description="Build a stock Debian 12 cloud image (cloud-init, openssh-server) "
                                       "offline from Debian packages with mmdebstrap into a cache directory, "
                                       "or reuse it when it is already there.")
    cloud.add_argument("--out", metavar="DIR", help="cache directory (default: /var/cache/nova-async/"
                                                    "cloud-image as root, else $XDG_CACHE_HOME/nova-async/cloud-image)")
    cloud.set_defaults(config=None)
    identity_cli.add_parsers(sub, _add_setting_flags)
    cells_cli.add_parsers(sub, _add_setting_flags)
    return parser


async def _migrate(settings: config.Settings, mode_name: str = "ALL") -> list[str]:
    """The API database's migrations, then every cell's (cells' databases made if missing),
    in the phase(s) `mode_name` says (db/migrate.py Mode)."""
    from nova_async.db.cells import open_cells
    from nova_async.db.embedded import embedded_postgres
    from nova_async.db.migrate import Gate, Mode, migrate
    from nova_async.db.pool import open_pool

    mode = Mode[mode_name]
    gate = Gate(down_time=settings.scheduler.service_down_time)

    async def both(dsn: str) -> list[str]:
        async with open_pool(dsn, min_size=1, max_size=2) as pool:
            async with pool.acquire() as conn:
                applied = await migrate(conn, mode=mode, gate=gate)
            async with open_cells(pool, dsn, max_size=1, mode=mode, gate=gate):
                return applied

    async with asyncio.timeout(300):
        if settings.service.database:
            return await both(settings.service.database)
        settings.state_path.mkdir(parents=True, exist_ok=True)
        async with embedded_postgres(settings.state_path) as pg:
            return await both(pg.dsn)


def _leaves(group: BaseExceptionGroup) -> list:
    found = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except config.ConfigError as exc:
        print(f"nova-async: {exc}", file=sys.stderr)
        return 2
    logging_setup.configure(settings.service.log_format)

    from nova_async.common.errors import NovaAsyncError

    try:
        if args.command == "serve":
            from nova_async.service import serve

            return serve(settings)
        if args.command == "db" and args.db_command == "migrate":
            applied = asyncio.run(_migrate(settings, args.migrate_mode))
            print(f"applied {len(applied)} migration(s)" + (f": {', '.join(applied)}" if applied else ""))
            return 0
        if args.command in cells_cli.COMMANDS:
            logging_setup.configure(settings.service.log_format, logging.WARNING)
            print(asyncio.run(cells_cli.run(args, settings)))
            return 0
        if args.command in identity_cli.COMMANDS:
            logging_setup.configure(settings.service.log_format, logging.WARNING)
            print(asyncio.run(identity_cli.run(args, settings)))
            return 0
        if args.command == "host-setup":
            from nova_async.compute.host_setup import setup_host

            print(asyncio.run(setup_host(settings.state_path)).summary())
            return 0
        if args.command == "guest-image":
            from nova_async.compute.guest_image import build_or_reuse, default_cache_dir

            out = Path(args.out) if args.out else default_cache_dir()
            print(asyncio.run(build_or_reuse(out)).summary())
            return 0
        if args.command == "cloud-image":
            from nova_async.compute import cloud_image

            out = Path(args.out) if args.out else cloud_image.default_cache_dir()
            print(asyncio.run(cloud_image.build_or_reuse(out)).summary())
            return 0
    except NovaAsyncError as exc:
        print(f"nova-async: {exc.message}", file=sys.stderr)
        return 1
    except ExceptionGroup as group:
        # A role that cannot start (libvirt unreachable, say) ends the TaskGroup: say why,
        # without the traceback, when the reason is one of ours.
        ours, rest = group.split(NovaAsyncError)
        if rest is not None or ours is None:
            raise
        for exc in _leaves(ours):
            print(f"nova-async: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 2
