"""`threadloom verify`: re-read every source and report stored bytes that no longer match."""

from __future__ import annotations

import argparse
import json
import sqlite3
from typing import Any

from .common import Command, add_db_option, open_reading


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="re-read every source and report stored bytes that no longer match",
        description="Re-read every source file still on disk and compare it with the bytes "
        "stored for it: reports files that changed in place or shrank, and names each file that "
        "disappeared with the session read from it (its stored copy is what `restore` writes back); "
        "checks every stored record against the hash taken when it was stored, which tells damage to "
        "the archive itself (a disk, a copy) from a change of the source.",
    )
    add_db_option(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print the report as JSON (`missing`: every vanished file's path and sessions)",
    )


def cmd_verify(args: argparse.Namespace) -> int:
    from ..base.text import count_of, one_line_name
    from ..read.archive import verify

    conn = open_reading(args)
    report = verify(conn)
    if args.json:
        print(
            json.dumps(
                {
                    "files_checked": report.files_checked,
                    "files_missing": report.files_missing,
                    "missing": [{"path": path, "sessions": sessions} for path, sessions in report.missing],
                    "records_checked": report.records_checked,
                    "files_rewritten": report.files_rewritten,
                    "records_superseded": report.records_superseded,
                    "mismatches": report.mismatches,
                    "not_stored": [{"path": path, "error": error} for path, error in report.not_stored],
                    "unread": [{"path": path, "bytes": n, "why": why} for path, n, why in report.unread],
                    "damaged": [
                        {"path": path, "records": n, "first_line": first} for path, n, first in report.damaged
                    ],
                }
            )
        )
    else:
        print(
            f"{count_of(report.files_checked, 'file')}, {count_of(report.records_checked, 'record')} checked; "
            f"{count_of(report.files_missing, 'source')} no longer on disk (kept in the archive)"
            + (":" if report.missing else "")
        )
        _print_missing(conn, report.missing)
        if report.files_rewritten:
            print(
                f"{count_of(report.files_rewritten, 'file')} {'was' if report.files_rewritten == 1 else 'were'} "
                "rewritten by their agents (or by hand): their earlier "
                f"versions are kept ({report.records_superseded:,} records no longer in the files); "
                "`threadloom restore SESSION --as-of TIME` writes a file as it was"
            )
        for line in report.mismatches:
            print("  changed: " + one_line_name(line))
        for path, error in report.not_stored:
            print(f"  not stored: {one_line_name(path)}: {one_line_name(error)}")
        for path, n, first in report.damaged:
            where = f" (first at line {first})" if first is not None else ""
            print(
                f"  damaged: {one_line_name(path)}: {count_of(n, 'stored record')}{where} no longer "
                f"{'matches' if n == 1 else 'match'} the hash taken when stored"
            )
        _print_unread(report.unread)
        if report.ok:
            print("all stored bytes match their sources")
        if report.mismatches:
            print(
                f"{count_of(len(report.mismatches), 'file')} differ"
                if len(report.mismatches) != 1
                else "1 file differs"
            )
        if report.damaged:
            print(
                f"the archive itself is damaged ({count_of(len(report.damaged), 'file')}): a disk or a copy "
                "changed bytes it had stored. Keep the sources still on disk, and take the database from a "
                "backup if you have one; `threadloom restore` writes the damaged records as they now are"
            )
        if report.not_stored:
            print(
                f"{count_of(len(report.not_stored), 'file')} could not be read into the archive, so their bytes are not "
                "stored: mend what the error names (a file's permissions, say) and run `threadloom ingest` "
                "again; an error that stays is a threadloom bug, please report it"
            )
    return 0 if report.ok else 1


def _print_unread(unread: list[tuple[str, int, str]]) -> None:
    """The files holding bytes the archive does not have yet, and when it will."""
    from ..base.text import one_line_name

    for path, n, why in unread[:MISSING_SHOWN]:
        path = one_line_name(path)
        if why == "unfinished":
            print(
                f"  not stored yet: {path}: its last {n:,} bytes are a line its writer has not finished "
                "(JSON cut short); `threadloom ingest` keeps them once it is finished or a minute unchanged"
            )
        else:
            print(
                f"  not stored yet: {path}: {n:,} bytes written since the last ingest; `threadloom ingest` reads them"
            )
    if len(unread) > MISSING_SHOWN:
        print(
            f"  … and {len(unread) - MISSING_SHOWN:,} more files with bytes not stored yet (--json lists every one)"
        )


MISSING_SHOWN = 20  # vanished files named one a line; --json lists every one


def _print_missing(conn: sqlite3.Connection, missing: list[tuple[str, list[str]]]) -> None:
    """Each source no longer on disk, with the session read from it (as `sessions` prints its id)
    and the command that writes it back."""
    from ..base.text import one_line_name
    from ..read.query import short_ids

    shown = short_ids(conn) if missing else {}
    for path, sessions in missing[:MISSING_SHOWN]:
        ids = [shown.get(s, s.split(":", 1)[-1]) for s in sessions]
        path = one_line_name(path)
        if not ids:
            print(f"  gone: {path}")
            continue
        more = f" (and {len(ids) - 1} more)" if len(ids) > 1 else ""
        print(f"  gone: {path}  session {ids[0]}{more}: threadloom restore {ids[0]} --to DIR")
    if len(missing) > MISSING_SHOWN:
        print(f"  … and {len(missing) - MISSING_SHOWN:,} more (--json lists every one)")


COMMANDS = (Command("verify", cmd_verify, reads=True),)
