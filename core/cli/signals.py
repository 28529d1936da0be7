"""`threadloom signals`: what went wrong in sessions: retry loops, refused calls, dead ends, ...."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import Command, add_db_option, open_reading, say_unfinished, signals_help


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "signals",
        help="what went wrong in sessions: retry loops, refused calls, dead ends, ...",
        description="Without SESSION, the sessions with the most signals (ties: newest first), "
        "counted by kind; with SESSION, each of its signals with the records it points at (#seq, "
        "the tool call, an excerpt).",
        epilog="signals:\n" + signals_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument("session", nargs="?", help="session id, unique prefix, or the agent's own id")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="list at most N sessions (default 20)")
    p.add_argument("--json", action="store_true", help="print JSON")


def cmd_signals(args: argparse.Namespace) -> int:
    from ..base.text import one_line, short_when
    from ..insight import signals
    from ..read.query import display_title, resolve_session, short_ids

    conn = open_reading(args)
    if args.session is None:
        if args.json:
            from ..insight.answers import ranked_signals_json

            print(json.dumps(ranked_signals_json(conn, args.limit), ensure_ascii=False))
            return 0
        ranked = signals.ranked_sessions(conn, args.limit)
        shown_ids = short_ids(conn)  # the ids `sessions` prints, which `signals SESSION` takes back
        ids = [s.id.split(":", 1)[-1] if s.is_subagent else shown_ids.get(s.id, s.id) for s, _ in ranked]
        width = max((len(i) for i in ids), default=2)
        if ranked:
            print(f"{'id':<{width}}  {'when':<12}  {'n':>3}  {'title':<50}  signals")
        for sid, (s, counts) in zip(ids, ranked, strict=True):
            kinds = ", ".join(
                f"{name} {n}" for name, n in sorted(counts.items(), key=lambda i: (-i[1], i[0]))
            )
            title = one_line(display_title(s), 50)
            print(
                f"{sid:<{width}}  {short_when(s.ended_at):<12}  {sum(counts.values()):>3}  {title:<50}  {kinds}"
            )
        if not say_unfinished(conn) and not ranked:
            print("no signals: no session showed one (or nothing is ingested yet)", file=sys.stderr)
        return 0
    session = resolve_session(conn, args.session)
    if args.json:
        from ..insight.answers import session_signals_json

        print(json.dumps(session_signals_json(conn, session), ensure_ascii=False))
        return 0
    found = signals.session_signals(conn, session.id)
    texts = signals.excerpts(conn, session.id, found)
    print(f"{session.id}  {one_line(display_title(session), 80)}")
    if not found:
        print("no signals")
    for f in found:
        where = f"#{f.seq}" if f.seq is not None else "session"
        print(f"\n{f.name}  [{f.severity}]  {where}  {one_line(f.detail, 200)}")
        for e in f.evidence:
            label = f"#{e.seq}" if e.seq is not None else f"entry {e.entry_id}"
            what = f"{e.tool} " if e.tool else ""
            print(f"    {label:<7} {what}{texts.get((e.entry_id, e.tool_call_id), '')}")
    return 0


COMMANDS = (Command("signals", cmd_signals, reads=True),)
