"""`threadloom show`: print a session as readable text, subagents indented."""

from __future__ import annotations

import argparse
import io
import json
import sqlite3
import sys
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    from ..read.query import SessionSummary

from .common import Command, add_db_option, as_of_option, fail, open_reading, session_or_earlier


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "show",
        help="print a session as readable text, subagents indented",
        description="Print a session as readable text: messages (their Markdown rendered), thinking "
        "and tool calls, with the conversations of its subagents indented under the calls that "
        "started them.",
    )
    add_db_option(p)
    p.add_argument(
        "session",
        help="session id, unique prefix, or the agent's own id; SESSION#N: only the turn holding its message #N",
    )
    p.add_argument("--json", action="store_true", help="print the session and its messages as JSON")
    p.add_argument("--no-subagents", action="store_true", help="do not expand subagent conversations")
    p.add_argument(
        "--as-of",
        metavar="TIME",
        help="the session as it was then, before a rewrite of its files that came later (an edit, a "
        "truncation): 2026-05-12T14:30, or a day (its end), today, yesterday, 7d",
    )
    p.add_argument(
        "--as-written",
        action="store_true",
        help="print what users and assistants wrote as they wrote it (Markdown source, not rendered)",
    )
    p.add_argument(
        "--plan",
        action="store_true",
        help="print the session's plan as its agent saved it (Claude Code's plans/<slug>.md, Gemini "
        "CLI's <session>/plans/), kept in the archive",
    )


def cmd_show(args: argparse.Namespace) -> int:
    from ..read.query import cited_message, resolve_session

    usable, as_of = as_of_option(args)
    if not usable:
        return 2
    conn = open_reading(args)
    cited = cited_message(conn, args.session)  # 'SESSION#5': the turn answers cite
    args.turn = None
    if cited is not None:
        args.session, args.turn = cited
    if as_of is not None:
        from ..actions.restore import RestoreError, as_of_archive
        from ..base.text import short_when

        session_id = session_or_earlier(conn, args.session, as_of)
        if session_id is None:
            return 1
        try:
            then = as_of_archive(conn, session_id, as_of)
        except RestoreError as exc:  # its files could not be put back together as they were
            fail(exc)
            return 1
        note = f"as it was at {short_when(as_of)}, rebuilt from the records the archive kept"
        return _show(args, then, resolve_session(then, session_id), note)
    session_id = session_or_earlier(conn, args.session, None)  # one emptied since: said, with --as-of
    if session_id is None:
        return 1
    return _show(args, conn, resolve_session(conn, session_id))


def _show(args: argparse.Namespace, conn: sqlite3.Connection, session: SessionSummary, note: str = "") -> int:
    if args.turn is not None:
        return _show_turn(args, conn, session, args.turn)
    if args.json:
        from ..insight.answers import message_json
        from ..insight.changes import files_changed
        from ..read.query import messages

        data = session.as_dict()
        data["messages"] = [message_json(m) for m in messages(conn, session.id)]
        # its subagents' edits with its own (each call says which session made it), unless left out
        data["files_changed"] = files_changed(conn, session.id, subagents=not args.no_subagents)
        from dataclasses import asdict

        from ..adapters.base import shown_name
        from ..read.archive import plan_files
        from ..read.side_files import side_files

        # what its agent kept beside the log (saved tool outputs, file copies, todos), and its plans
        data["side_files"] = [asdict(f) for f in side_files(conn, session.id)]
        data["plans"] = [shown_name(path) for _, path, _ in plan_files(conn, session.id)]
        from ..read.archive import session_rewrites

        # each time its files were rewritten: when (unix ms), and how many records the rewrite took out
        data["rewrites"] = [
            {"superseded_at": v.superseded_at, "records": v.records, "removed": v.removed}
            for v in session_rewrites(conn, session.id)
        ]
        print(json.dumps(data, ensure_ascii=False))
        return 0
    if args.plan:
        return _print_plans(conn, session.id)
    from rich.console import Console

    from ..present.render import (
        PlainConsole,
        Printer,
        render_files_changed,
        render_session,
        show_workers,
    )
    from ..read.archive import rewrite_note, session_rewrites

    # its size measured once: left to Rich, every print asks the terminal again (a third of the time
    # of a long session's `show`)
    measured = Console(highlight=False).size
    console = Console(highlight=False, width=measured.width, height=measured.height)
    note = note or rewrite_note(session_rewrites(conn, session.id), session.id)
    options: dict[str, Any] = {
        "expand_subagents": not args.no_subagents,
        "markdown": not args.as_written,
        "note": note,
    }
    if sys.stdout.isatty():
        render_session(console, conn, session, **options)
        render_files_changed(console, conn, session.id, subagents=not args.no_subagents)
        return 0
    # piped (to a file, grep, a pager): Rich pads lines to the console's width; end each where its text
    # does, written as they are drawn (a long session's first lines come at once, not after all of it)
    lines = _TrimmedLines(sys.stdout)
    # a text file to Rich, which types its file as IO[str]
    console = Console(highlight=False, width=measured.width, height=measured.height, file=cast(TextIO, lines))
    # no colour will be shown (unless FORCE_COLOR says otherwise): the same lines written without
    # Rich's layout of each message, 100,000 messages in seconds rather than half a minute
    printer: Printer = (
        PlainConsole(console) if console.color_system is None and not console.is_terminal else console
    )
    # and a long session drawn on every core, a page at a time (`render_pages`)
    if isinstance(printer, PlainConsole):
        with printer.drawing():
            workers = show_workers(session.message_count)
            render_session(printer, conn, session, **options, workers=workers)
            render_files_changed(printer, conn, session.id, subagents=not args.no_subagents)
    else:
        render_session(printer, conn, session, **options)
        render_files_changed(printer, conn, session.id, subagents=not args.no_subagents)
    lines.close()
    return 0


def _show_turn(args: argparse.Namespace, conn: sqlite3.Connection, session: SessionSummary, seq: int) -> int:
    """Only the turn holding message #seq: what a citation `threadloom show 'SESSION#n'` opens."""
    from rich.console import Console

    from ..insight.answers import message_json
    from ..present.render import render_session
    from ..read.query import turn_messages

    found = turn_messages(conn, session.id, seq, tool_results=False)  # neither form prints a result
    if not found:
        fail(
            f"session {session.id} has no message #{seq} (`threadloom show {session.id[:13]}` shows them all)"
        )
        return 1
    if args.json:
        print(
            json.dumps(
                {**session.as_dict(), "messages": [message_json(m) for m in found]}, ensure_ascii=False
            )
        )
        return 0
    out = sys.stdout if sys.stdout.isatty() else cast(TextIO, _TrimmedLines(sys.stdout))
    console = Console(highlight=False, file=out)
    render_session(
        console, conn, session, expand_subagents=not args.no_subagents, markdown=not args.as_written, turn=seq
    )
    return 0


class _TrimmedLines(io.TextIOBase):
    """A file for Rich that passes each line on without the spaces after its text, as the lines
    come: what `str.splitlines` would cut the whole output into, each ended by a newline."""

    BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # where str.splitlines cuts

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.pending = ""  # the start of a line not ended yet

    def write(self, text: str) -> int:
        pieces = (self.pending + text).splitlines(keepends=True)
        # a line is passed on once its break is written ("\r" may yet be the start of "\r\n")
        self.pending = (
            pieces.pop() if pieces and (pieces[-1][-1] not in self.BREAKS or pieces[-1][-1] == "\r") else ""
        )
        self.out.write("".join(line.rstrip() + "\n" for line in pieces))
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        if self.pending:
            self.out.write(self.pending.rstrip() + "\n")
            self.pending = ""
        super().close()


def _print_plans(conn: sqlite3.Connection, session_id: str) -> int:
    """`show --plan`: the session's plans as kept, each under its file's name (controls made visible)."""
    from ..base.text import printable, strip_escapes
    from ..read.side_files import session_plans

    plans = session_plans(conn, session_id)
    if not plans:
        print(
            "threadloom: no plan is kept for this session (its agent saved none, or it was not read)",
            file=sys.stderr,
        )
        return 1
    for plan in plans:
        print(f"# {printable(plan.named)}\n")
        print(printable(strip_escapes(plan.text.replace("\r\n", "\n"))))
    return 0


COMMANDS = (Command("show", cmd_show, reads=True),)
