"""`threadloom ingest`: read new and changed session logs into the database."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..ingest.pipeline import IngestReport
    from ..ingest.pipeline import Progress as IngestProgress
    from ..store.carry import Carried

from ..base.text import count_of, one_line_name
from .common import Command, add_db_option, say_upgrading, say_waiting


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "ingest",
        help="read new and changed session logs into the database",
        description="Read new and changed session logs. Unchanged files are skipped "
        "by size, mtime, inode and ctime; grown files are read from where the last run stopped.",
    )
    add_db_option(p)
    p.add_argument(
        "--source",
        metavar="DIR",
        type=Path,
        action="append",
        default=[],
        help="a folder or file of agent logs to read besides the default locations (repeatable)",
    )
    p.add_argument(
        "--only", action="store_true", help="read only the --source folders, not the default locations"
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="build the database afresh beside the old one (then moved aside): its records carried "
        "over and replayed, every source read again",
    )
    p.add_argument(
        "--no-index",
        action="store_true",
        help="after a first (bulk) load, leave the search index and the turns for search by "
        "meaning to be built later: by the TUI in the background, by `threadloom index`, or "
        "before the next search",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object with the counts")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def cmd_ingest(args: argparse.Namespace) -> int:
    from ..ingest.update import Listener, update
    from ..store import db
    from ..store.writer_lock import writer_lock

    path = Path(args.db or db.default_db_path())
    for source in args.source:
        if not os.path.exists(source):  # a typo would be remembered and looked at on every run, unsaid
            print(
                f"threadloom: --source {one_line_name(str(source))}: no such file or folder; it is looked "
                "at again on every run (a drive not mounted now); `threadloom sources` lists it, "
                f"`threadloom sources --forget {one_line_name(shlex.quote(str(source)))}` stops that",
                file=sys.stderr,
            )
    if args.rebuild:  # a new database beside this one, built under this one's lock
        with writer_lock(path, on_wait=say_waiting):
            return _rebuild(args, path)

    with _progress_bar(args) as progress:
        said = Listener(
            waiting=say_waiting, upgrading=lambda layout: say_upgrading(path, layout), progress=progress
        )
        report = update(
            path, args.source, include_defaults=not args.only, index=not args.no_index, listener=said
        )
    return _report_ingest(args, report)


def _report_ingest(
    args: argparse.Namespace, report: IngestReport, extra: dict[str, Any] | None = None
) -> int:
    if args.json:
        print(json.dumps({**report.as_dict(), **(extra or {})}))
    else:
        _print_ingest_summary(report)
    return 1 if report.errors and report.files_read == 0 and report.files_skipped == 0 else 0


def _rebuild(args: argparse.Namespace, path: Path) -> int:
    """`ingest --rebuild`: a new database built beside the old one, from the agents' files and the
    folders the old one remembered, put in its place only once complete; what the user gave the old
    one (those folders, the sessions and projects hidden) is kept. The old one is kept under a name
    no other rebuild takes (said, --json too); an interrupted rebuild leaves it as it was."""
    from ..ingest.pipeline import run_ingest
    from ..store import db
    from ..store.carry import Carried, carry_records

    db.check_writable(path)  # a read-only database is left where it is
    if path.is_file():  # another application's database is not moved aside (a damaged one is)
        try:
            with contextlib.closing(db.peek(path)) as old:
                db.refuse_foreign(old, path)
        except sqlite3.DatabaseError as exc:
            text_file = db.not_a_database(path) if "not a database" in str(exc) else None
            if text_file is not None:  # a note or a log given as --db is not moved aside
                raise text_file from exc
    given = _user_data(path)
    fresh = path.with_name(f"{path.name}.rebuilding-{os.getpid()}")
    _remove_database(fresh)
    conn = db.connect(fresh)
    try:
        db.write_user_data(conn, given)
        if not args.quiet and not args.json and path.is_file():
            print("carrying the records of the old database…", file=sys.stderr)
        marker = Path(
            str(path) + db.FIRST_LOAD_SUFFIX
        )  # a first load that died (this rebuild holds the lock)
        carried = carry_records(path, conn) if not marker.exists() else Carried(notes=[DEAD_LOAD])
        _say_carried(args, carried, path)
        with _progress_bar(args) as progress:
            report = run_ingest(
                conn,
                args.source,
                include_defaults=not args.only,
                build_index=not args.no_index,
                progress=progress,
                on_wait=say_waiting,
            )
        if report.cancelled:
            raise KeyboardInterrupt
        _follow_renamed_sessions(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the new file whole in itself before the swap
    except BaseException:
        conn.close()
        _remove_database(fresh)
        raise
    conn.close()
    kept = _keep_aside(path)
    for suffix in ("", "-wal", "-shm"):
        side = Path(str(fresh) + suffix)
        if side.exists():
            os.replace(side, Path(str(path) + suffix))
    Path(str(fresh) + ".lock").unlink(missing_ok=True)
    marker.unlink(missing_ok=True)  # the dead load's: beside the new database it would start it afresh
    if kept and not args.json:
        print(f"previous database kept as {kept}", file=sys.stderr)
    return _report_ingest(
        args, report, {"previous_database": str(kept) if kept else None, "carried": carried.as_dict()}
    )


DEAD_LOAD = "it holds a first load that died, which its files give again"


def _say_carried(args: argparse.Namespace, carried: Carried, path: Path) -> None:
    """What the rebuild took from the old database, and what it left there (on stderr; --json
    has the counts as `carried`)."""
    if args.json or (args.quiet and not carried.damaged):
        return
    if carried.files:
        gone = (
            f", {count_of(carried.gone_from_disk, 'file')} no agent keeps any more"
            if carried.gone_from_disk
            else ""
        )
        print(
            f"carried {count_of(carried.files, 'stored file')} ({count_of(carried.records, 'record')}) "
            f"from the old database{gone}",
            file=sys.stderr,
        )
    if not carried.damaged:
        if not carried.files and carried.notes:
            print(f"nothing carried from the old database: {'; '.join(carried.notes)}", file=sys.stderr)
        return
    why = f" ({'; '.join(carried.notes)})" if carried.notes else ""
    if not carried.files:
        print(
            f"the old database is damaged and none of its records could be read{why}: this one is built "
            "from the agents' files; the old one stays beside it",
            file=sys.stderr,
        )
        return
    unread = f"; {count_of(carried.unreadable, 'stored row')} could not be read" if carried.unreadable else ""
    again = (
        f"; {count_of(carried.read_again, 'file')} still on disk read again for the records it lacked"
        if carried.read_again
        else ""
    )
    hub = (
        f"; {count_of(carried.left_to_hub, 'file')} from a sync hub are pulled again"
        if carried.left_to_hub
        else ""
    )
    print(
        f"the old database is damaged{why}{unread}{again}{hub}: what could not be read stays in the old "
        "database, kept beside this one",
        file=sys.stderr,
    )


def _follow_renamed_sessions(conn: sqlite3.Connection) -> None:
    """What the old database kept on sessions whose ids this threadloom gives otherwise (Aider's,
    read by an older one under their path) follows them into the rebuilt one."""
    from ..store import db, memory_tables
    from ..store.sql import transaction

    with transaction(conn, immediate=True):
        for renamed in db.RENAMED_SESSIONS.values():
            memory_tables.rename_sessions(conn, renamed(conn))


def _user_data(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """What the user gave the database at `path`: the --source folders it remembers, the sessions
    and projects hidden (none when it cannot be read: a damaged one is what a rebuild is for)."""
    from ..store import db

    if not path.is_file():
        return {}
    try:
        old = db.peek(path)
        try:
            return db.read_user_data(old)
        finally:
            old.close()
    except sqlite3.DatabaseError:
        print(
            f"threadloom: the --source folders, hidden sessions and memory {path} kept cannot be read from "
            "it; pass the folders again",
            file=sys.stderr,
        )
        return {}


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal", ".lock"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _keep_aside(path: Path) -> Path | None:
    """Move the database (and its -wal and -shm) to `<name>.<time>.bak`, `<name>.<time>-2.bak`, …:
    never a name already taken, so no earlier backup is ever replaced."""

    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    n = 1
    while True:
        target = path.with_name(f"{path.name}.{stamp}{'' if n == 1 else f'-{n}'}.bak")
        try:
            os.link(path, target)  # fails when the name is taken: checked and claimed in one step
            break
        except FileExistsError:
            n += 1
        except OSError:  # a file system without hard links: the name checked, then taken
            if not target.exists():
                os.replace(path, target)
                break
            n += 1
    for suffix in ("-wal", "-shm"):
        side = Path(str(path) + suffix)
        if side.exists():
            os.replace(side, Path(str(target) + suffix))
    path.unlink(missing_ok=True)
    return target


@contextlib.contextmanager
def _progress_bar(args: argparse.Namespace) -> Iterator[Callable[[IngestProgress], None] | None]:
    """The ingest's progress as a bar on a terminal (None: no bar, with --json, -q or a pipe)."""
    if args.json or args.quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.markup import escape
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from ..base.text import printable

    with Progress(
        TextColumn("[bold]ingest[/]"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[files]}"),
        TimeRemainingColumn(),
        TextColumn("[dim]{task.fields[name]}"),
        transient=True,
    ) as bar:
        task = bar.add_task("ingest", total=None, files="", name="")

        def on_progress(p: IngestProgress) -> None:
            if p.phase.after_files:
                doing = p.phase.value
                bar.update(
                    task,
                    total=p.bytes_total or 1,
                    completed=p.bytes_done,
                    files="",
                    name=f"{doing} {p.phase_done / max(1, p.phase_total):.0%}",
                )
                return
            # a file's name is anyone's (a --source from a backup): shown as text, never as markup or
            # a terminal command
            name = escape(printable(Path(p.path).name[:40]))
            bar.update(
                task,
                total=p.bytes_total or 1,
                completed=p.bytes_done,
                files=f"{p.files_done}/{p.files_total} files",
                name=name,
            )

        yield on_progress


def _print_ingest_summary(report: IngestReport) -> None:
    mb = report.bytes_read / 1e6
    print(
        f"{count_of(report.files_seen, 'file')} seen, {report.files_skipped} unchanged, {report.files_read} read "
        f"({mb:.1f} MB), {count_of(report.records_added, 'record')}, {count_of(report.sessions, 'session')} updated "
        f"({report.sessions_total} in total), {count_of(len(report.errors), 'error')}, {report.seconds:.2f} s"
    )
    if report.files_gone:
        print(
            f"{count_of(report.files_gone, 'source file')} disappeared; their sessions are kept in the archive"
        )
    if report.unclaimed:
        print(
            f"{count_of(len(report.unclaimed), 'file')} under your sources look like logs but no agent's reader takes "
            "them (`threadloom sources` lists them, with why)"
        )
    from ..base.text import printable

    for err in report.errors[:10]:
        print("  error: " + printable(err).replace("\n", "\\n"), file=sys.stderr)  # one line each
    if len(report.errors) > 10:
        print(f"  … and {len(report.errors) - 10} more errors", file=sys.stderr)
    if report.files_seen == 0:
        print(
            "no agent logs found in: " + ", ".join(report.roots) + ". Add some with --source DIR "
            "(`threadloom sources --forget DIR` stops looking in one given by mistake)."
        )


COMMANDS = (Command("ingest", cmd_ingest),)
