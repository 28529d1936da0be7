"""`threadloom stats`: tokens, cost, tool calls and changed lines by day, week, month, project, model, agent or session."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from .common import (
    Command,
    add_db_option,
    fail,
    open_reading,
    print_table,
    resolve_agent_option,
    say_none_match,
    say_unfinished,
)


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "stats",
        help="tokens, cost, tool calls and changed lines by day, week, month, project, model, agent or session",
        description="Totals over the archive: sessions, messages, tokens by kind (input, output, cache "
        "write, cache read), cost in USD, tool calls and how many failed, and the lines edits added "
        "and removed, one row per period or per project, model, agent or session. Read from sums "
        "the ingest keeps, so it is quick on any archive. Days are local days (the TZ environment "
        "variable, else the system's zone); a week is named by its Monday. A cost of '?' (null in "
        "--json) is unknown: a model the price table does not know; '$1.23 + ?' is partly known.",
        epilog="D: 2026-03-01, today, yesterday, or an age: 7d, 2w, 3m (days, weeks, 30-day months)\n\n"
        "examples:\n  threadloom stats                      cost and tokens per day\n"
        "  threadloom stats --by month --since 3m\n  threadloom stats --by model --project api --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument(
        "--by",
        choices=("day", "week", "month", "project", "model", "agent", "session", "machine"),
        default="day",
        help="one row per local day (default), week, month, project, model, agent, main session "
        "(its subagents counted in it) or machine (synced through a hub)",
    )
    p.add_argument("--since", metavar="D", help="from this local day on (included)")
    p.add_argument("--until", metavar="D", help="up to this local day (included)")
    p.add_argument("--project", metavar="P", help="project name or path (substring)")
    p.add_argument("--agent", metavar="A", help="claude-code, codex, ...")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of rows: period, sessions, messages, api_messages, input_tokens, "
        "output_tokens, cache_creation_tokens, cache_read_tokens, cost_usd (null when unknown), "
        "unpriced_messages, tool_calls, failed_tool_calls, lines_added, lines_removed, label, key",
    )


def cmd_stats(args: argparse.Namespace) -> int:
    from ..insight import stats

    try:
        since = stats.parse_day(args.since) if args.since else None
        until = stats.parse_day(args.until, end=True) if args.until else None
    except ValueError as exc:
        fail(f"{exc}")
        return 2
    if since is not None and until is not None and since >= until:
        fail(f"--since {args.since} is after --until {args.until}: nothing lies between (swap them?)")
        return 2
    conn = open_reading(args)
    if not resolve_agent_option(conn, args):
        return 2
    rows = stats.report(conn, args.by, since=since, until=until, project=args.project, agent=args.agent)
    if args.by == "model":  # the row of what no model was recorded for is named, not blank
        from ..base.text import NO_MODEL

        for row in rows:
            row.label = row.label or NO_MODEL
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], ensure_ascii=False))
        return 0
    if not rows:
        if not say_unfinished(conn):
            say_none_match(conn, args)
        return 0
    from rich.console import Console
    from rich.table import Table

    from ..base.text import human_tokens
    from ..read.query import short_ids

    console = Console(width=None if sys.stdout.isatty() else 1000, markup=False)  # labels: the logs' text
    table = Table(box=None, header_style="bold", pad_edge=False, show_footer=True, footer_style="bold")
    shown = short_ids(conn) if args.by == "session" else {}  # as `sessions` prints them: `show` takes them
    every = [
        *rows,
        *stats.report(conn, "total", since=since, until=until, project=args.project, agent=args.agent),
    ]
    columns: list[tuple[str, Callable[[stats.StatsRow], str]]] = [
        (args.by, lambda r: r.label if args.by != "session" else f"{shown.get(r.key, r.key)}  {r.label}"),
        ("sessions", lambda r: str(r.sessions)),
        ("msgs", lambda r: str(r.messages)),
        ("input", lambda r: human_tokens(r.input_tokens)),
        ("output", lambda r: human_tokens(r.output_tokens)),
        ("cache w", lambda r: human_tokens(r.cache_creation_tokens)),
        ("cache r", lambda r: human_tokens(r.cache_read_tokens)),
        ("cost", lambda r: r.cost_text),
        ("tools", lambda r: str(r.tool_calls)),
        ("failed", lambda r: str(r.failed_tool_calls)),
        ("+lines", lambda r: str(r.lines_added)),
        ("-lines", lambda r: str(r.lines_removed)),
    ]
    for i, (name, cell) in enumerate(columns):
        table.add_column(
            name,
            footer=cell(every[-1]) if i else "total",
            justify="left" if i == 0 else "right",
            overflow="ellipsis",
            no_wrap=True,
            max_width=60 if i == 0 else None,
        )
    for row in rows:
        table.add_row(*(cell(row) for _, cell in columns))
    print_table(console, table)
    say_unfinished(conn)  # what the table leaves out
    return 0


COMMANDS = (Command("stats", cmd_stats, reads=True),)
