"""What the commands share: the `--db` option, opening the archive, saying a failure, reading a
moment."""

from __future__ import annotations

import argparse
import os
import shlex
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Command:
    """A subcommand as the table in core.cli registers it: its name, what runs it, whether it only
    reads the archive (its output is escaped, and a damaged database is explained, not raised), and
    whether it writes but prints what the archive holds (its output is escaped too)."""

    name: str
    run: Callable[[argparse.Namespace], int]
    reads: bool = False
    prints_archive: bool = False


def add_db_option(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    # Subcommands accept --db too; SUPPRESS keeps `threadloom --db X ingest` from being reset to None.
    parser.add_argument(
        "--db",
        metavar="PATH",
        type=Path,
        default=None if top else argparse.SUPPRESS,
        help="database file (default: $THREADLOOM_DB or the platform user data dir)",
    )


SYNC_HELP = """\
Share this archive with your other machines (and a team) through a PostgreSQL database, the hub.

  threadloom sync --init URL              once, by the hub's owner: its tables, roles and policies
  threadloom sync --grant ROLE URL        make a login role a member (--reader: read only)
  threadloom sync URL --share all         the first sync: say what is shared (nothing is by default)
  threadloom sync                         then: push what is new here, pull what others pushed
  threadloom sync --forget MACHINE URL    by the owner: take MACHINE's records off (pushed again next)

Pushed: the exact records of each shared source file (never what was derived from them), each
stored once on the hub; a file appended to sends its new records only, one rewritten the records
the hub lacks. Pulled: other machines' records, placed here as the records of their files, so
sessions, stats, signals and search work on them as on this machine's own (`machine:NAME` and
`who:NAME` filter them). Sharing rules: `all`, `agent:NAME`, `project:PATH` (a project's path,
name or folder; wildcards), with --share and --exclude, remembered. Interrupted, a sync loses and
duplicates nothing: the next one goes on. Passwords are never stored or printed."""


WATCH_HELP = """\
Archive every agent's new and changed session files as they are written, until stopped
(SIGTERM, Ctrl+C): what `threadloom service install` starts at login.

The agents' folders are watched with the file system's events, or polled where there are none
(a network file system, the inotify limit reached): the log says which. A burst of appends is
read together once the file has been quiet a moment; an append reads just that file, a new or
removed file the folders that changed. The database is written only while an ingest runs, so
the TUI and `threadloom ingest` work beside it (each waits for the other's write). Idle, it
uses well under 1 % of a core. Stopped by a signal, it finishes the file it is writing."""


def positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{value} s: give a number of seconds above 0, up to 3600")
    return seconds


def signals_help() -> str:
    from ..base.text import SIGNALS

    return "\n".join(f"  {name:<18} {what}" for name, what in SIGNALS.items())


def search_help() -> str:
    from ..base.text import SEARCH_HELP

    return "\n".join("  " + line for line in SEARCH_HELP.splitlines())


def fail(message: object) -> None:
    from ..base.text import printable

    print(f"threadloom: {printable(str(message))}", file=sys.stderr)


def open_writing(args: argparse.Namespace) -> sqlite3.Connection:
    from ..store import db

    conn = db.connect(args.db)
    rebuild_if_due(args, conn)
    return conn


def open_reading(args: argparse.Namespace) -> sqlite3.Connection:
    """A reading command's connection; a database that does not exist is not created for it (a
    mistyped --db would leave an empty one, and its folders, behind)."""
    from ..store import db

    path = Path(args.db) if args.db else db.default_db_path()
    if str(path) != ":memory:" and absent_but_creatable(path):
        where = f" --db {shlex.quote(str(path))}" if args.db else ""
        raise db.LedgerError(
            f"no database at {path} yet: `threadloom ingest{where}` reads your agents' logs into it"
        )
    conn = db.open_for_reading(args.db)
    rebuild_if_due(args, conn)
    return conn


def absent_but_creatable(path: Path) -> bool:
    """No file at `path`, though one could be made there (its nearest existing folder can be
    written). A path that could not be used says why when it is opened, as before."""
    try:
        os.stat(path)
        return False
    except FileNotFoundError:
        pass
    except OSError:
        return False  # not a folder on the way, a name too long …: opening it explains
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def rebuild_if_due(args: argparse.Namespace, conn: sqlite3.Connection) -> None:
    """An older database's sessions are rebuilt from its stored records before a command reads
    them (not half-empty tables): said before the wait."""
    from ..store import db

    version = db.rebuild_due(conn)
    if version is None:
        return  # before importing ingest: a command that only reads never pays for it
    from ..ingest.pipeline import rebuild_pending

    say_upgrading(Path(args.db or db.default_db_path()), version)
    rebuild_pending(conn, on_wait=say_waiting)


def say_upgrading(path: Path, layout: int) -> None:
    """That the database at `path`, of an older `layout`, has its sessions rebuilt now (once)."""
    from ..store import db

    print(
        f"threadloom: {path} was written by another version of threadloom (layout {layout}, now "
        f"{db.SCHEMA_VERSION}): its sessions are rebuilt from the stored records, once; on a big archive "
        "this takes a minute or two",
        file=sys.stderr,
        flush=True,
    )


def resolve_agent_option(conn: sqlite3.Connection, args: argparse.Namespace) -> bool:
    """`--agent` as the archive names the agent (gemini-cli: gemini), set on `args`; False, said with
    the names there are, when it names none (a filter nothing passes, not an empty listing)."""
    if not getattr(args, "agent", None):
        return True
    from ..adapters import UnknownAgent
    from ..read.query import agent_filter

    try:
        args.agent = agent_filter(conn, args.agent)
    except UnknownAgent as exc:
        fail(f"--agent {args.agent}: {exc}")
        return False
    return True


def say_none_match(conn: sqlite3.Connection, args: argparse.Namespace) -> None:
    """Why a listing is empty: an archive with nothing in it yet, or filters nothing passes."""
    if conn.execute("SELECT 1 FROM agent_sessions LIMIT 1").fetchone() is None:
        print("no sessions yet: run `threadloom ingest` (or add --source DIR)", file=sys.stderr)
        return
    given = [
        f"--{name} {value}"
        for name in ("project", "agent", "since", "until")
        if (value := getattr(args, name, None))
    ]
    print(
        f"no sessions match {' '.join(given) or 'these options'}: leave one out to see more", file=sys.stderr
    )


def say_unfinished(conn: sqlite3.Connection) -> bool:
    """That some sessions' costs, stats and signals are not computed yet, and how to finish them
    (a sync or ingest stopped after storing their records): not that there are none. True when said."""
    from ..base.text import count_of
    from ..store.derived import unfinished

    left = unfinished(conn)
    if left:
        print(
            f"threadloom: the costs, stats and signals of {count_of(left, 'session')} are not computed yet (a sync "
            "or ingest stopped before finishing them): run `threadloom ingest` (or `threadloom sync`) to finish them",
            file=sys.stderr,
        )
    return bool(left)


def say_waiting(text: str) -> None:
    """Another threadloom holds the writer lock: say so before waiting for it."""
    print(f"threadloom: {text} (Ctrl+C to stop)", file=sys.stderr, flush=True)


def catch_up_index(
    conn: sqlite3.Connection, *, quiet: bool, wait: bool = True, timings: dict[str, float] | None = None
) -> int:
    """Finish what a bulk load left behind (the search index, then the episodes for search by
    meaning); returns how many entry ids the index covered.

    Without `wait`, work another threadloom is doing is left to it (0 is returned)."""
    from ..insight import refresh
    from ..store import search_index

    if not refresh.left_behind(conn):
        return 0
    state = search_index.pending(conn)
    behind = 0 if state is None else state.total - state.done
    if quiet or not sys.stderr.isatty():
        return behind if refresh.catch_up(conn, wait=wait, on_wait=say_waiting, timings=timings) else 0
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    # on the terminal itself: the bar's cursor moves are not text for _PrintableStream to escape
    console = Console(file=getattr(sys.stderr, "unfiltered", sys.stderr))
    with Progress(
        TextColumn("[bold]{task.description}[/]"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeRemainingColumn(),
        transient=True,
        console=console,
    ) as bar:
        task = bar.add_task("indexing for search", total=max(1, behind))

        def indexed(p: search_index.IndexProgress) -> None:
            bar.update(task, total=max(1, p.total), completed=p.done)

        def embedded(done: int, total: int) -> None:
            bar.update(
                task, description="reading turns for search by meaning", total=max(1, total), completed=done
            )

        done = refresh.catch_up(conn, indexed, embedded, wait=wait, on_wait=say_waiting, timings=timings)
    return behind if done else 0


def open_caught_up(args: argparse.Namespace, *, quiet: bool) -> sqlite3.Connection:
    """A reading command's connection to an archive whose first load left nothing behind: what
    it left (the search index, the turns for meaning) is finished first where the database can be
    written, else the command reads what there is and says so."""
    from ..insight import refresh
    from ..store import db

    conn = open_reading(args)
    if not refresh.left_behind(conn):
        return conn
    try:
        db.check_writable(args.db or db.default_db_path())
    except db.LedgerError:
        print(
            "threadloom: the database cannot be written, so what its first load left (the search index, "
            "the turns for search by meaning) is not completed now: the newest records may be missing "
            "(`threadloom index` completes it once the database is writable)",
            file=sys.stderr,
        )
        return conn
    conn.close()
    conn = open_writing(args)
    if catch_up_index(conn, quiet=quiet, wait=False) and not quiet:
        print("threadloom: the search index was behind the archive; it is complete now", file=sys.stderr)
    return conn


def print_table(console: Any, table: Any) -> None:
    """Piped, a table's lines without the spaces that pad them to its width (a row was 380
    characters for one long title elsewhere); on a terminal, as drawn."""
    if sys.stdout.isatty():
        console.print(table)
        return
    with console.capture() as captured:
        console.print(table)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def session_or_earlier(conn: sqlite3.Connection, ref: str, as_of: int | None) -> str | None:
    """The session `ref` names, or one only earlier versions of files hold (emptied or cut since),
    which needs a moment before that (None: said why)."""
    from ..read.archive import sessions_in_versions
    from ..read.query import resolve_session

    try:
        return resolve_session(conn, ref).id
    except LookupError:
        earlier = sessions_in_versions(conn, ref)
        if len(earlier) != 1:
            raise
        if as_of is None:
            fail(
                f"session {earlier[0]} is only in earlier versions of its files (they were emptied or cut "
                "since): add --as-of TIME, a moment before that, to see them as they were"
            )
            return None
        return earlier[0]


def parse_moment(value: str) -> int:
    """A moment as unix ms: a local date and time ('2026-05-12T14:30', '2026-05-12 14:30'), or a
    day as `stats` takes it (its end: how the files stood that day)."""
    from datetime import datetime

    from ..insight import stats

    try:
        return int(datetime.fromisoformat(value.strip()).timestamp() * 1000)
    except ValueError:
        pass
    try:
        return stats.parse_day(value, end=True) - 1
    except ValueError:
        raise ValueError(
            f"{value!r} is not a time (2026-05-12T14:30, 2026-05-12, today, yesterday, 7d)"
        ) from None


def as_of_option(args: argparse.Namespace) -> tuple[bool, int | None]:
    """(whether --as-of can be used, its moment in unix ms or None when it is not given); a time
    that is none is said."""
    if not args.as_of:
        return True, None
    try:
        return True, parse_moment(args.as_of)
    except ValueError as exc:
        fail(f"--as-of: {exc}")
        return False, None


def explicit_db(args: argparse.Namespace) -> Path | None:
    """--db as an absolute path, for a command another process runs later (a service, a hook)."""
    db = getattr(args, "db", None)
    return Path(db).expanduser().absolute() if db else None


def db_for_later(args: argparse.Namespace) -> Path | None:
    """The archive a command written now for an agent to run later must name (a hook, an MCP
    server): --db, else $THREADLOOM_DB, which an agent started from a launcher or an IDE does not
    have; None for the default, which it finds alike."""
    chosen = explicit_db(args)
    if chosen is None and os.environ.get("THREADLOOM_DB"):
        chosen = Path(os.environ["THREADLOOM_DB"]).expanduser().absolute()
    return chosen
