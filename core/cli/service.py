"""`threadloom service`: start `threadloom watch` at login (a systemd user unit, a launchd agent)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import Command, add_db_option, explicit_db, fail


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "service",
        help="start `threadloom watch` at login (a systemd user unit, a launchd agent)",
        description="Set `threadloom watch` up to start at each login and keep the archive current with "
        "threadloom closed: a systemd user unit on Linux (~/.config/systemd/user/threadloom-watch.service), "
        "a launchd agent on macOS (~/Library/LaunchAgents/org.threadloom.watch.plist). The service runs "
        "this python and this threadloom, with the variables that move the agents' folders "
        "(CLAUDE_CONFIG_DIR, CODEX_HOME, …) and the database as they are set now. Installing twice "
        "changes nothing; uninstall removes only a file install wrote; status says whether it runs.",
    )
    add_db_option(p)
    p.add_argument("action", choices=["install", "uninstall", "status"], help="what to do")
    p.add_argument(
        "--dry-run", action="store_true", help="print the file and the commands, write and run nothing"
    )
    p.add_argument(
        "--no-start", action="store_true", help="install: write the file, but do not enable or start it"
    )
    p.add_argument(
        "--manager",
        choices=["systemd", "launchd"],
        help="the service manager (default: this system's: systemd on Linux, launchd on macOS)",
    )
    p.add_argument("--json", action="store_true", help="status: print it as JSON")


def cmd_service(args: argparse.Namespace) -> int:
    from ..serve import service
    from ..serve.watch import log_path_for
    from ..store import db

    manager = args.manager or service.this_manager()
    if manager is None:
        fail(
            f"no service manager threadloom can set up on {sys.platform} (systemd, launchd): start "
            "`threadloom watch` from your login's startup instead"
        )
        return 1
    explicit = explicit_db(args)
    plan = service.plan(manager, explicit)
    try:
        if args.action == "install":
            outcome = service.install(plan, dry_run=args.dry_run, start=not args.no_start)
        elif args.action == "uninstall":
            outcome = service.uninstall(plan, dry_run=args.dry_run)
        else:
            outcome = service.status(plan, log_path_for(explicit or db.default_db_path()))
    except (service.ServiceError, OSError) as exc:
        fail(exc)
        return 1
    if args.json and args.action == "status":
        print(json.dumps(outcome.data))
    else:
        print("\n".join(outcome.lines))
    return 0 if outcome.ok else 1


COMMANDS = (Command("service", cmd_service),)
