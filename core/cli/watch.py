"""`threadloom watch`: keep archiving with the app closed: every agent's new and changed files as they are written."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .common import WATCH_HELP, Command, add_db_option, positive_seconds


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "watch",
        help="keep archiving with the app closed: every agent's new and changed files as they are written",
        description=WATCH_HELP,
        epilog="log: <database name>-watch.log beside the database (rotated at 1 MB, two kept), e.g.\n"
        "  tail -f ~/.local/share/threadloom/threadloom-watch.log",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument(
        "--poll",
        action="store_true",
        help="poll instead of using file system events (chosen by itself on a network file system)",
    )
    p.add_argument(
        "--poll-interval",
        metavar="SECONDS",
        type=positive_seconds,
        default=5.0,
        help="how often polling looks (default: 5)",
    )
    p.add_argument(
        "--settle",
        metavar="SECONDS",
        type=positive_seconds,
        default=1.0,
        help="read changes once their files have been quiet this long (default: 1; at most 5 s after "
        "the first change of a batch, however busy the agent)",
    )
    p.add_argument("--log", metavar="PATH", type=Path, help="log file (default: beside the database)")
    p.add_argument(
        "--quiet", "-q", action="store_true", help="log to the file only (a terminal also gets each line)"
    )
    p.add_argument(
        "--sync",
        action="store_true",
        help="after each ingest that read something, `threadloom sync` with the hub and sharing it remembers",
    )


def cmd_watch(args: argparse.Namespace) -> int:
    from ..serve.watch import WatchOptions, log_path_for, run_watch
    from ..store import db

    db_path = Path(args.db or db.default_db_path()).expanduser().absolute()
    options = WatchOptions(
        db_path=db_path,
        log_path=Path(args.log).expanduser().absolute() if args.log else log_path_for(db_path),
        poll=args.poll,
        poll_seconds=args.poll_interval,
        settle=args.settle,
        echo=not args.quiet and sys.stderr.isatty(),
        sync=args.sync,
    )
    return run_watch(options)


COMMANDS = (Command("watch", cmd_watch),)
