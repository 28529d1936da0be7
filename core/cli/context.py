"""`threadloom context`: the past turns most relevant to a task, packed within a token budget (for a new session)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..base.text import printable
from .common import Command, add_db_option, open_caught_up


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "context",
        help="the past turns most relevant to a task, packed within a token budget (for a new session)",
        description="The past turns most relevant to QUERY across sessions (hybrid search), each with "
        "its session, date, project, prompt, final answer, the files and commands that mattered and a "
        "reference `threadloom show` opens, packed within --budget tokens (counted as characters / 4). "
        'Paste it as a new session\'s first message, or pipe it: `claude "$(threadloom context ...)"`.',
    )
    add_db_option(p)
    p.add_argument("query", nargs="+", help="what the new session is about, in your words")
    p.add_argument(
        "--budget", type=int, default=4000, metavar="TOKENS", help="at most this many tokens (default 4000)"
    )
    p.add_argument("--project", metavar="P", help="only turns of projects whose name or path contains P")
    p.add_argument("--since", metavar="D", help="only turns from then on: 2026-03-01, yesterday, 30d")
    p.add_argument(
        "--json", action="store_true", help="print JSON (the turns, their tokens, what was left out)"
    )


def cmd_context(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from ..insight.recall import build_context

    if args.budget < 200:
        print("threadloom: --budget must be at least 200 tokens", file=sys.stderr)
        return 2
    if args.since:  # as `search` and `stats` refuse a date they cannot read, not turns from any time
        from ..read.search import parse_query

        if parse_query(f"after:{args.since}").unusable_filters:
            print(
                f"threadloom: --since {printable(args.since)!r} is not a date (2026-03-01, yesterday, 7d)",
                file=sys.stderr,
            )
            return 2
    conn = open_caught_up(args, quiet=args.json)
    context = build_context(
        conn, " ".join(args.query), budget=args.budget, project=args.project, since=args.since
    )
    for problem in context.problems:
        print(f"threadloom: {problem}", file=sys.stderr)
    if args.json:
        data = asdict(context)
        data["text"] = context.as_text()
        data["tokens_counted_as"] = "characters / 4"
        print(json.dumps(data, ensure_ascii=False))
        return 0
    sys.stdout.write(context.as_text())
    return 0


COMMANDS = (Command("context", cmd_context, reads=True),)
