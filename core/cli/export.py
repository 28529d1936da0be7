"""`threadloom export`: write a session as Markdown, a self-contained HTML page, or JSON."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .common import Command, add_db_option, open_reading


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write a session as Markdown, a self-contained HTML page, or JSON",
        description="Write a session to hand to someone else: Markdown (tool calls in <details>), "
        "one HTML file that needs no network (collapsible tool calls, diffs, highlighted code, "
        "subagents nested under the call that started them), or JSON (normalized messages plus "
        "the raw records). A session that was rewound exports the branch the agent continued "
        "unless --branch picks another.",
    )
    add_db_option(p)
    p.add_argument("session", help="session id, unique prefix, or the agent's own id")
    p.add_argument("--format", "-f", choices=("md", "html", "json"), default="md", help="default: md")
    p.add_argument(
        "-o", "--output", metavar="PATH", type=Path, help="write to PATH (default: standard output)"
    )
    p.add_argument("--force", action="store_true", help="replace PATH if it exists")
    p.add_argument("--branch", type=int, metavar="N", help="the branch to export (numbers: see the error)")
    p.add_argument(
        "--redact",
        action="store_true",
        help="mask secrets (API keys and tokens of the common providers, bearer headers, private "
        "keys, .env-style assignments) and say how many were masked",
    )


def cmd_export(args: argparse.Namespace) -> int:
    from ..actions.export import ExportError, export_session
    from ..base.text import count_of, one_line_name
    from ..read.query import resolve_session

    conn = open_reading(args)
    session = resolve_session(conn, args.session)
    try:
        done = export_session(conn, session, args.format, branch=args.branch, redact=args.redact)
    except ExportError as exc:
        print(f"threadloom: {exc}", file=sys.stderr)
        return 2
    what = count_of(done.messages, "message") + (
        f", {count_of(done.subagents, 'subagent')}" if done.subagents else ""
    )
    if done.branch is not None:
        what += f", branch {done.branch.number} of {done.branches}: --branch N exports another"
    said = [what] + ([done.redactor.summary()] if args.redact else [])
    if args.output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(done.data)  # already clean: escaped HTML/JSON, no control characters
        sys.stdout.buffer.flush()
        if args.redact or done.branch is not None:
            print(f"threadloom: {'; '.join(said)}", file=sys.stderr)
        return 0
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if args.force else os.O_EXCL)
    try:
        fd = os.open(args.output, flags, 0o644)
    except FileExistsError:
        print(
            f"threadloom: {one_line_name(str(args.output))} exists; choose another path or add --force to replace it",
            file=sys.stderr,
        )
        return 1
    except OSError as exc:
        print(
            f"threadloom: cannot write {one_line_name(str(args.output))}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 1
    with os.fdopen(fd, "wb") as f:
        f.write(done.data)
    print(f"threadloom: wrote {one_line_name(str(args.output))} ({'; '.join(said)})", file=sys.stderr)
    return 0


COMMANDS = (Command("export", cmd_export, reads=True),)
