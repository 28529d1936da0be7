"""`threadloom restore`: write a session's original files back, byte for byte."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..base.text import count_of, one_line_name
from .common import Command, add_db_option, as_of_option, fail, open_reading, session_or_earlier


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "restore",
        help="write a session's original files back, byte for byte",
        description="Write the files a session was read from back, byte for byte, from the "
        "database: for a log its agent deleted or rewrote. Nothing is ever overwritten: a file "
        "already in DIR with the same bytes is left as it is (restoring twice is fine); one with "
        "other bytes, or a symbolic link where a file or folder goes, stops the restore before "
        "anything is written. Files go under DIR only, never through a link out of it.",
    )
    add_db_option(p)
    p.add_argument("session", help="session id, unique prefix, or the agent's own id")
    p.add_argument(
        "--to",
        metavar="DIR",
        type=Path,
        required=True,
        help="folder to write into (created if missing; files are never overwritten)",
    )
    p.add_argument(
        "--as-of",
        metavar="TIME",
        help="each file as the archive held it then: before a rewrite (an edit, a truncation) and "
        "without the lines appended since: "
        "2026-05-12T14:30, or a day (its end), today, yesterday, 7d",
    )
    p.add_argument(
        "--from",
        dest="source",
        metavar="PATH",
        type=Path,
        help="the copy to restore when the session was read from two places holding the same file "
        "(the agent's folder and a --source backup): a copy's path, or the folder it was read from",
    )
    p.add_argument("--json", action="store_true", help="print the files written as JSON")


def cmd_restore(args: argparse.Namespace) -> int:
    from ..actions.restore import RestoreError, restore_session
    from ..store.db import cannot_use

    usable, as_of = as_of_option(args)
    if not usable:
        return 2
    conn = open_reading(args)
    # a session whose file was emptied or cut before it is listed no more; its records are kept
    session_id = session_or_earlier(conn, args.session, as_of)
    if session_id is None:
        return 1
    try:
        files = restore_session(conn, session_id, args.to, as_of=as_of, source=args.source)
    except RestoreError as exc:
        fail(exc)
        return 1
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        fail(cannot_use(args.to, exc, what="the restored files into", fix="choose another --to folder"))
        return 1
    if args.json:
        print(json.dumps([f.__dict__ for f in files]))
    else:
        for f in files:
            note = "" if f.complete else "  (incomplete: part of the source was never read)"
            there = "  (already there, the same bytes: left as it was)" if f.already_there else ""
            print(f"{one_line_name(f.written_to)}  {f.bytes} bytes{note}{there}")
        print(f"{count_of(len(files), 'file')} restored for session {session_id}")
    damaged = [f for f in files if f.damaged]
    for f in damaged:
        fail(
            f"{one_line_name(f.written_to)}: {count_of(f.damaged, 'record')} of it no longer match what was "
            "stored (the archive's copy is damaged: a disk or a copy fault), written as the archive holds "
            "them; `threadloom verify` names every damaged file"
        )
    return 1 if damaged else 0


COMMANDS = (Command("restore", cmd_restore, reads=True),)
