"""`threadloom hooks`: archive each Claude Code session as it ends (a hook in its settings)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .common import Command, add_db_option, db_for_later, explicit_db, fail


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "hooks",
        help="archive each Claude Code session as it ends (a hook in its settings)",
        description="Add to Claude Code's settings ($CLAUDE_CONFIG_DIR/settings.json, else "
        "~/.claude/settings.json) a SessionEnd hook (and, with --stop, a Stop hook, after each reply) "
        "that archives the session then, even with threadloom closed. The file is backed up first and "
        "merged: no key is lost or moved; installing twice changes nothing; uninstall removes only "
        "threadloom's entries. A settings file that is not valid JSON is left as it is. `run` is what "
        "the hook runs: it reads Claude Code's JSON on stdin and archives the session in the background.",
    )
    add_db_option(p)
    p.add_argument("action", choices=["install", "uninstall", "status", "run"], help="what to do")
    p.add_argument("--agent", metavar="AGENT", help=_agents_help(p))
    p.add_argument(
        "--stop", action="store_true", help="install: also after each reply (Stop), not only at the end"
    )
    p.add_argument("--dry-run", action="store_true", help="say what would change, write nothing")
    p.add_argument("--json", action="store_true", help="status: print it as JSON")
    p.add_argument(
        "--transcript",
        metavar="PATH",
        type=Path,
        help="run: archive this session now and wait for it (instead of reading stdin and returning)",
    )


def cmd_hooks(args: argparse.Namespace) -> int:
    from ..adapters import all_adapters
    from ..serve import hooks

    if args.action == "run":
        return _hook_run(args)
    if args.action != "status" and args.agent is None:
        programs = ", ".join(a.program for a in all_adapters() if a.session_hooks() is not None)
        fail(f"which agent's settings: --agent {programs} (the agents with hooks so far)")
        return 2
    try:
        if args.action == "install":
            outcome = hooks.install(
                db_for_later(args), agent=args.agent, stop=args.stop, dry_run=args.dry_run
            )
        elif args.action == "uninstall":
            outcome = hooks.uninstall(agent=args.agent, dry_run=args.dry_run)
        else:
            outcome = hooks.status(agent=args.agent)
    except (hooks.HooksError, OSError) as exc:
        fail(exc)
        return 1
    if args.json and args.action == "status":
        print(json.dumps(outcome.data))
    else:
        print("\n".join(outcome.lines))
    return 0


def _hook_run(args: argparse.Namespace) -> int:
    """What the hook runs. From the agent (stdin): start the ingest in the background and return
    at once, 0 whatever happens (a hook must never get in the session's way). With --transcript:
    the ingest itself."""
    from ..serve import hooks
    from ..serve.watch import log_path_for
    from ..store import db

    if args.transcript is not None:
        db_path = explicit_db(args) or db.default_db_path()
        return hooks.archive_session(db_path, Path(args.transcript).absolute(), log_path_for(db_path))
    try:
        transcript = hooks.transcript_of(sys.stdin.buffer.read(hooks.MAX_INPUT), args.agent)
    except hooks.HooksError as exc:
        print(f"threadloom hooks run: {exc}; nothing archived", file=sys.stderr)
        return 0
    if transcript is None:
        key = hooks.hooks_of(hooks.hooked_agent(args.agent)).transcript_key
        print(f"threadloom hooks run: no {key} in the hook's input; nothing archived", file=sys.stderr)
        return 0
    try:
        hooks.start_detached(transcript, explicit_db(args), args.agent)
    except OSError as exc:
        print(f"threadloom hooks run: could not start the ingest: {exc}", file=sys.stderr)
    return 0


COMMANDS = (Command("hooks", cmd_hooks),)


def _agents_help(parser: object) -> str:
    """The agents that run hooks, named for the help (only when this command's parser is built:
    the adapters are not loaded for another command)."""
    if not isinstance(parser, argparse.ArgumentParser):
        return ""
    from ..adapters import ADAPTERS

    hooked = sorted({a.program for a in ADAPTERS.values() if a.session_hooks() is not None})
    # install and uninstall refuse without it (a hook written into the settings of an agent not
    # meant is a surprise); only status and run take the first agent with hooks
    return (
        f"the agent whose settings get the hook, by its command: {', '.join(hooked)}; needed by install "
        f"and uninstall, which write that agent's settings (status and run: {hooked[0]} when not given)"
    )
