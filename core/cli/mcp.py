"""`threadloom mcp`: answer agents over the Model Context Protocol (stdio); `mcp install --agent A` registers it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .common import Command, add_db_option, db_for_later, fail


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "mcp",
        help="answer agents over the Model Context Protocol (stdio); `mcp install --agent A` registers it",
        description="Run threadloom's MCP server on stdio, for an agent to start: search, recent sessions, a "
        "session's outline, one turn in full, a file's history, signals and stats, and memory (remember, "
        "recall, tag), every answer bounded (about 2,000 tokens, a cursor to page on). It reads the archive "
        "read-only, so it answers while an ingest runs. `threadloom mcp install --agent claude` (codex, "
        "gemini, cursor, opencode) registers it in that agent's own configuration.",
        epilog="examples:\n  threadloom mcp install --agent claude\n  threadloom mcp install --agent codex --dry-run"
        "\n  threadloom mcp uninstall --agent cursor",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    actions = p.add_subparsers(dest="mcp_action", metavar="ACTION")
    for name in ("install", "uninstall"):
        q = actions.add_parser(
            name,
            help=f"{'register the server in' if name == 'install' else 'take the server out of'} an agent's configuration",
            description="Register `threadloom mcp` in the agent's own configuration file, merged with what it "
            "holds (its other keys and servers kept), idempotent."
            if name == "install"
            else "Take `threadloom mcp` out of the agent's configuration file, leaving the rest as it is.",
        )
        add_db_option(q)
        q.add_argument(
            "--agent",
            required=True,
            metavar="AGENT",
            help=_agents_help(q),
        )
        q.add_argument("--dry-run", action="store_true", help="print the change (a diff) and write nothing")
        q.add_argument("--json", action="store_true", help="print what was done as JSON")


def _agents_help(parser: object) -> str:
    """The agents threadloom registers with, named for the help (only when this command's parser
    is built: the adapters and the diffing are not loaded for another command)."""
    if not isinstance(parser, argparse.ArgumentParser):
        return ""
    from ..actions.mcp_install import mcp_agents

    return f"the agent, by its command: {', '.join(sorted(mcp_agents()))}"


def cmd_mcp(args: argparse.Namespace) -> int:
    """`mcp`: serve on stdio; `mcp install|uninstall --agent A`: the agent's configuration."""
    from ..store import db

    if args.mcp_action is None:
        from ..serve.mcp_server import serve

        serve(Path(args.db or db.default_db_path()).expanduser())
        return 0
    from ..actions.mcp_install import InstallError, apply, plan

    try:
        change = plan(args.agent, remove=args.mcp_action == "uninstall", db=db_for_later(args))
        if not args.dry_run:
            apply(change)
    except InstallError as exc:
        fail(exc)
        return 1
    if args.json:
        print(json.dumps({**change.as_dict(), "dry_run": args.dry_run}))
        return 0
    if args.dry_run:
        sys.stdout.write(change.diff() or f"{change.path}: nothing to change ({change.action})\n")
        print("threadloom: dry run: nothing written", file=sys.stderr)
        return 0
    said = {
        "added": f"registered threadloom's MCP server in {change.path}",
        "updated": f"updated threadloom's MCP server in {change.path}",
        "unchanged": f"threadloom's MCP server is already registered in {change.path}: nothing changed",
        "removed": f"took threadloom's MCP server out of {change.path}",
        "absent": f"threadloom's MCP server is not in {change.path}: nothing changed",
    }[change.action]
    print(said)
    if change.action in ("added", "updated"):
        print(f"threadloom: restart {args.agent} to load it", file=sys.stderr)
    return 0


COMMANDS = (Command("mcp", cmd_mcp),)
