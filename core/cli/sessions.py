"""`threadloom sessions`: list sessions, newest first."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import Command, add_db_option, open_reading, print_table, resolve_agent_option, say_none_match


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "sessions",
        help="list sessions, newest first",
        description="List sessions, newest first, each subagent under the session that started "
        "it (↳; ⚙ when that session is not listed). The id column (each id as long as it must be "
        "to name one session) is what `show`, `resume`, `export` and `restore` take; --json has "
        "every id whole, and lists the sessions in the order --sort gives, each with its "
        "parent_session_id.",
    )
    add_db_option(p)
    p.add_argument("--project", metavar="P", help="project name or path (substring)")
    p.add_argument("--agent", metavar="A", help="claude-code, codex, ...")
    p.add_argument("--machine", metavar="M", help="the sessions of that machine (synced through a hub)")
    p.add_argument("--who", metavar="W", help="the sessions pushed to the hub by that person (its role)")
    p.add_argument("--main", action="store_true", help="main sessions only (no subagents)")
    p.add_argument("--all", action="store_true", help="include sessions without messages")
    p.add_argument(
        "--hidden",
        action="store_true",
        help="include the sessions hidden from the lists (`threadloom hide`), marked ⊘ (--json: hidden)",
    )
    p.add_argument(
        "--sort",
        choices=("recent", "oldest", "messages", "tokens", "duration"),
        default="recent",
        help="recent (last activity, the default), oldest (started), or largest first",
    )
    p.add_argument(
        "--wide",
        action="store_true",
        help="every column, nothing cut: full id, agent, project, branch, started, last activity, "
        "messages, the four token counts, cost, duration, model, title, file",
    )
    p.add_argument(
        "--json", action="store_true", help="print a JSON list (every field, in the order --sort gives)"
    )


def cmd_sessions(args: argparse.Namespace) -> int:
    from ..actions.hidden import read_hidden
    from ..read.query import list_sessions, short_ids, short_subagent_ids, sort_sessions, under_their_sessions

    conn = open_reading(args)
    if not resolve_agent_option(conn, args):
        return 2
    rows = list_sessions(
        conn,
        project=args.project,
        agent=args.agent,
        include_subagents=not args.main,
        include_empty=args.all,
        machine=args.machine,
        who=args.who,
    )
    rows = sort_sessions(rows, args.sort)
    hidden = read_hidden(conn)
    owners = {r.id: r for r in rows}
    out_of_list = {r.id for r in rows if hidden and hidden.hides(r, owners)}
    if not args.hidden:  # hidden from the lists: `threadloom hide`, h in the TUI
        rows = [r for r in rows if r.id not in out_of_list]
    from ..ingest.sync import session_origins

    origins = session_origins(conn)
    if args.json:
        listed = [r.as_dict() for r in rows]
        for item in listed:  # another machine's session: which, and whose
            if item["id"] in origins:
                item["machine"], item["who"] = origins[item["id"]]
        if args.hidden:
            for item in listed:
                item["hidden"] = item["id"] in out_of_list
        print(json.dumps(listed, ensure_ascii=False))
        return 0
    if not rows:
        say_none_match(conn, args)
        return 0
    grouped = under_their_sessions(rows)  # the table: each subagent under its session
    if args.wide:
        _print_wide_sessions(grouped, out_of_list)
        return 0
    from rich.console import Console
    from rich.table import Table

    from ..base.text import TableColumn, one_line, short_when, text_table

    # piped (to grep, a file): no terminal width to fit, so nothing is cut; on a terminal the title,
    # project and model give way, the id (what `show` takes) and the numbers never do. No markup:
    # the cells are the logs' text ("[trimmed] title" is a title, not a style)
    console = Console(width=None if sys.stdout.isatty() else 1000, markup=False)
    shown_ids = short_ids(conn) | short_subagent_ids(conn)
    cells = [
        (
            shown_ids.get(r.id, r.id.split(":", 1)[-1]),
            short_when(r.last_activity),
            # from the logs: a folder's name may hold a newline, which would break the row in two
            one_line(r.project, 10_000) + (f" @{origins[r.id][0]}" if r.id in origins else ""),
            _listed_title(r, depth, r.id in out_of_list),
            str(r.message_count),
            r.tokens_text,
            r.cost_text,
            one_line(r.model, 10_000),
        )
        for r, depth in grouped
    ]
    # the id as wide as the widest shown (13, a subagent's own id cut as a main session's is): a
    # column of 24 for ids of 13 left the project and the model a few letters at 120 columns
    from rich.cells import cell_len

    widest_id = max((cell_len(row[0]) for row in cells), default=2)
    fixed = {
        "id": max(2, min(24, widest_id)),
        "when": 12,
        "msgs": 5,
        "tokens": 6,
        "cost": 9,
    }
    room = console.width - sum(fixed.values()) - 2 * 7  # the gaps between the 8 columns
    widths = {"project": max(8, room // 6), "model": max(8, room // 6)}
    widths["title"] = max(12, room - widths["project"] - widths["model"])
    columns = [
        TableColumn(
            col, right=col in ("msgs", "tokens", "cost"), min_width=fixed.get(col), max_width=widths.get(col)
        )
        for col in ("id", "when", "project", "title", "msgs", "tokens", "cost", "model")
    ]
    lines = text_table(columns, cells, console.width)
    if lines is not None:  # drawn as Rich would, without Rich's cost per cell
        head = f"\x1b[1m{lines[0]}\x1b[0m" if sys.stdout.isatty() else lines[0]
        sys.stdout.write("\n".join([head, *lines[1:]]) + "\n")
        return 0
    table = Table(box=None, header_style="bold", pad_edge=False)  # a terminal too narrow: Rich squeezes it
    for column in columns:
        table.add_column(
            column.name,
            overflow="ellipsis",
            no_wrap=True,
            min_width=column.min_width,
            max_width=column.max_width,
            justify="right" if column.right else "left",
        )
    for row in cells:
        table.add_row(*row)
    print_table(console, table)
    return 0


def _listed_title(r: Any, depth: int = 0, hidden: bool = False) -> str:
    """A session's title as `sessions` lists it: a subagent's task, marked as one and indented
    under the session that started it (`depth`); ⚙ for one whose session is not listed; ⊘ before
    a hidden one (listed with --hidden)."""
    from ..actions.hidden import MARK
    from ..read.query import display_title

    title = (MARK + " " if hidden else "") + display_title(r)
    if not r.is_subagent:
        return title
    return ("  " * (depth - 1) + "↳ " if depth else "⚙ ") + title


def _print_wide_sessions(rows: list[tuple[Any, int]], hidden: set[str] | None = None) -> None:
    """`sessions --wide`: every column whole (ids, paths and titles are never cut), one line a
    session however wide the terminal; the lines end where their text does."""
    from rich.console import Console
    from rich.table import Table

    from ..adapters.base import shown_name
    from ..base.text import human_duration, printable, short_when

    columns = (
        "id", "agent", "project", "branch", "started", "last activity", "msgs", "input", "output",
        "cache write", "cache read", "cost", "duration", "model", "title", "file",
    )  # fmt: skip
    numbers = {"msgs", "input", "output", "cache write", "cache read", "cost", "duration"}
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in columns:
        table.add_column(col, no_wrap=True, justify="right" if col in numbers else "left")
    for r, depth in rows:
        cells = (
            r.id,
            r.agent,
            r.project or "",
            r.git_branch or "",
            short_when(r.started_at),
            short_when(r.last_activity),
            f"{r.message_count:,}",
            f"{r.input_tokens:,}",
            f"{r.output_tokens:,}",
            f"{r.cache_creation_tokens:,}",
            f"{r.cache_read_tokens:,}",
            r.cost_text,
            human_duration(r.duration_ms),
            r.model or "",
            _listed_title(r, depth, r.id in (hidden or ())),
            shown_name(r.file_path or ""),
        )
        # names and titles come from the logs: nothing of them reaches the terminal raw, and a
        # newline or tab in a folder's name is shown as its picture rather than breaking the row
        table.add_row(*(printable(cell).replace("\n", "␊").replace("\t", "␉") for cell in cells))
    console = Console(width=100_000, highlight=False, markup=False)
    with console.capture() as captured:
        console.print(table)
    sys.stdout.writelines(line.rstrip() + "\n" for line in captured.get().splitlines())


COMMANDS = (Command("sessions", cmd_sessions, reads=True),)
