"""`threadloom similar`: the turns of other sessions most like a message or turn: have I solved this before?."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import Command, add_db_option, open_caught_up


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "similar",
        help="the turns of other sessions most like a message or turn: have I solved this before?",
        description="The turns of other sessions nearest in meaning to the turn of ENTRY (an entry id "
        "or a message uuid from `show --json` or `search --json`, a turn id, or SESSION#n for message #n "
        "as `show` numbers them). A uuid or turn id several unrelated sessions share is refused, naming "
        "each session's entry id.",
    )
    add_db_option(p)
    p.add_argument("entry", help="an entry id, a message uuid, a turn id, or SESSION#n")
    p.add_argument("--limit", type=int, default=10, metavar="N", help="at most N turns (default 10)")
    p.add_argument("--json", action="store_true", help="print a JSON list")


def cmd_similar(args: argparse.Namespace) -> int:
    from ..insight.recall import NOTHING_SIMILAR, NotEmbedded, similar

    conn = open_caught_up(args, quiet=args.json)
    try:
        hits = similar(conn, args.entry, limit=args.limit)
    except NotEmbedded as exc:
        print(f"threadloom: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([h.as_dict() for h in hits], ensure_ascii=False))
        return 0
    from ..base.text import human_when, one_line
    from ..insight.answers import show_command

    if not hits:
        print(NOTHING_SIMILAR)
    for h in hits:
        where = (h.main_title if h.relation == "subagent" else None) or h.session_title or h.session_id
        print(
            f"{h.score:5.1f}  {human_when(h.timestamp):>12}  {one_line(where, 30):30}  {one_line(h.snippet, 80)}"
        )
        print(f"       {show_command(h.session_id, h.seq)}")
    return 0


COMMANDS = (Command("similar", cmd_similar, reads=True),)
