"""`threadloom search`: search every conversation by words and by meaning."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import Command, add_db_option, open_caught_up, search_help


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "search",
        help="search every conversation by words and by meaning",
        description="Search every conversation: by words (typos forgiven) and by meaning, fused (--mode).",
        epilog="query syntax:\n" + search_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument("query", nargs="+", help='words, "phrases" and filters (see below)')
    p.add_argument("--limit", type=int, default=20, metavar="N", help="show at most N hits (default 20)")
    p.add_argument("--json", action="store_true", help="print a JSON list of hits")
    p.add_argument(
        "--mode",
        choices=("hybrid", "words", "meaning"),
        default="hybrid",
        help="hybrid (default): the words and the turns nearest in meaning, fused; words: every word "
        "must match (typos forgiven); meaning: turns by meaning only, a sentence that shares no word still finds its turn",
    )


def _unusable(problems: list[str]) -> bool:
    """Say the filters that cannot be honoured (a date that is none, an agent of no such name)."""
    for problem in problems:
        print(f"threadloom: {problem}", file=sys.stderr)
    if problems:
        print("threadloom: nothing searched: mend the filter, or leave it out", file=sys.stderr)
    return bool(problems)


def cmd_search(args: argparse.Namespace) -> int:
    from ..insight.recall import search_recall
    from ..read.search import parse_query

    if _unusable(parse_query(" ".join(args.query)).unusable_filters):
        return 2
    conn = open_caught_up(args, quiet=args.json)
    if _unusable(parse_query(" ".join(args.query), conn=conn).unusable_filters):  # agent: the archive's names
        return 2
    result = search_recall(conn, " ".join(args.query), mode=args.mode, limit=args.limit)
    if args.json:
        print(json.dumps([h.as_dict() for h in result.hits], ensure_ascii=False))
        for problem in result.problems:
            print(f"threadloom: {problem}", file=sys.stderr)
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..base.text import human_when, one_line
    from ..read.query import UNTITLED, short_ids

    console = Console(
        highlight=False, width=None if sys.stdout.isatty() else 160
    )  # piped: snippets not squeezed
    for problem in result.problems:
        console.print(Text(problem, style="yellow"))  # it quotes the query: never read as markup
    if not result.hits:  # no table of headings over nothing
        console.print(f"[dim]no hits ({result.seconds * 1000:.0f} ms)[/]")
        return 0
    table = Table(box=None, header_style="bold", pad_edge=False, expand=True)
    table.add_column("session", max_width=34, overflow="fold")
    shown = short_ids(conn)
    table.add_column("who", no_wrap=True)
    table.add_column("when", no_wrap=True)
    table.add_column("snippet", ratio=1)
    for h in result.hits:
        snippet = Text(h.snippet)
        for start, end in h.highlights:
            snippet.stylize("bold reverse", start, end)
        where = Text(one_line(h.session_title or UNTITLED, 34), style="bold")
        where.append(f"\n{one_line(f'{h.agent} · {h.project or chr(63)}', 34)}", style="dim")
        # the id as `sessions` prints it (a subagent's whole), which `show` takes back: never cut
        where.append(f"\n{shown.get(h.session_id, h.session_id)}", style="dim")
        if h.main_session_id:
            where.append(f"\n{h.relation} of {one_line(h.main_title or h.main_session_id, 22)}", style="dim")
        if h.why != "words":
            snippet.append(
                f"  ({'by meaning' if h.why == 'meaning' else 'words + meaning'})", style="italic cyan"
            )
        table.add_row(where, h.role or "", human_when(h.timestamp), snippet)
    console.print(table)
    console.print(f"[dim]{result.count_label} hits in {result.seconds * 1000:.0f} ms[/]")
    return 0


COMMANDS = (Command("search", cmd_search, reads=True),)
