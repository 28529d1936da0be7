"""The TUI's background work: the ingest, following a growing session, reading a fork back, and
the screens' reads of the archive (search, find, the fork picker, the context dialog, images).

Each runs in a thread with its own SQLite connection (the interface's connection never leaves its
thread), is started by `start` with its `Job` (group, description, whether a new one replaces a
running one) and talks to the interface only through past-tense messages. The app's writers end
through `finished`, which turns a worker's state into its message (`Ingested`, `Followed`,
`ForkIngested`, `RootsChanged`) that the app's one `on_worker_state_changed` posts to itself; a
screen's read (`read`) posts its own message (`PointsRead`, `Searched`, …) to the screen or
widget that started it, through `read_archive`, and posts nothing once cancelled.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from textual.message import Message
from textual.worker import Worker, WorkerState

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from ..core.actions.cleanup import CleanupRisk
    from ..core.ingest.pipeline import IngestReport, Progress
    from ..core.ingest.sync import SyncReport

PROGRESS_SECONDS = 0.05  # the ingest's progress is posted at most this often (the first file always)

Post = Callable[[Message], object]
T = TypeVar("T")


# ---------------------------------------------------------------------- messages


class IngestStatus(Message):
    """A phase of the ingest worker the user should see (writing the demo, database ready, or a
    first load under way, which the panes read through a read-only connection)."""

    def __init__(self, text: str, *, database_ready: bool = False, first_load: bool = False) -> None:
        super().__init__()
        self.text = text
        self.database_ready = database_ready
        self.first_load = first_load


class IngestProgressed(Message):
    """How far the ingest (or the search index after it) has got."""

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress


class RecordsLoaded(Message):
    """The records are in and browsable; the search index may still be catching up."""

    def __init__(self, report: IngestReport) -> None:
        super().__init__()
        self.report = report


class Ingested(Message):
    """The ingest worker ended: its report, or the error it failed with (neither: cancelled)."""

    def __init__(self, report: IngestReport | None, error: BaseException | None) -> None:
        super().__init__()
        self.report = report
        self.error = error


class Followed(Message):
    """The file of the session being read grew and what was added is read."""

    def __init__(self, session_id: str, report: IngestReport) -> None:
        super().__init__()
        self.session_id = session_id
        self.report = report


class Synced(Message):
    """The sync worker ended: its report, or the error it failed with."""

    def __init__(self, report: SyncReport | None, error: BaseException | None) -> None:
        super().__init__()
        self.report = report
        self.error = error


class ForkIngested(Message):
    """A fork written from the picker was read into the archive, or failed to be."""

    def __init__(self, report: IngestReport | None, error: BaseException | None) -> None:
        super().__init__()
        self.report = report
        self.error = error


class Exported(Message):
    """The open session was written to a file (`path`), or could not be (`error`)."""

    def __init__(self, path: Path | None, error: BaseException | None) -> None:
        super().__init__()
        self.path = path
        self.error = error


class CleanupAhead(Message):
    """Sessions an agent's own cleanup will delete that the archive has not kept yet (at start);
    `reading`: the ingest now under way reads them."""

    def __init__(self, risk: CleanupRisk, *, reading: bool) -> None:
        super().__init__()
        self.risk = risk
        self.reading = reading


class RootsChanged(Message):
    """A file was added to or removed from a folder the agents write their sessions in."""


class HiddenWritten(Message):
    """A session or project hidden (or shown again) was written to the archive (`done`: its kind
    and key), or could not be (`error`)."""

    def __init__(self, done: tuple[str, str] | None, error: BaseException | None) -> None:
        super().__init__()
        self.done = done
        self.error = error


class MemoryWritten(Message):
    """A tag, note or bookmark was written to the archive's memory (`said`: what, for a person), or
    could not be (`error`)."""

    def __init__(self, said: str | None, error: BaseException | None) -> None:
        super().__init__()
        self.said = said
        self.error = error


# ---------------------------------------------------------------------- starting and ending


@dataclass(frozen=True)
class Job:
    """How a kind of worker runs: its group (the router's key), whether a new one replaces a
    running one, and what Textual's worker list calls it."""

    group: str
    description: str
    exclusive: bool


INGEST = Job("ingest", "ingest", exclusive=True)
# a follow is started only when none is running; two forks written in a row are both read
FOLLOW = Job("follow", "read a growing session", exclusive=False)
FORK_INGEST = Job("fork-ingest", "ingest a fork", exclusive=False)
EXPORT = Job("export", "export a session", exclusive=False)
WATCH = Job("watch", "look for new session files", exclusive=False)
CLEANUP = Job("cleanup", "look for sessions an agent's cleanup will delete", exclusive=False)
# hiding waits for the writer lock (an ingest may hold it): each one written, in order
HIDE = Job("hide", "remember what is hidden", exclusive=False)
# tags, notes and bookmarks (core.insight.memory): written in order, each waiting for an ingest's lock
MEMORY = Job("memory", "write a tag, note or bookmark", exclusive=False)
# a sync with the hub (core.ingest.sync), waiting for an ingest's lock; one at a time
SYNC = Job("sync", "sync with the hub", exclusive=False)

# the screens' reads (`read`): a newer query, or the same question asked again, replaces the older
SEARCH = Job("search", "search", exclusive=True)
SIMILAR = Job("search", "similar", exclusive=True)  # one group with search: either replaces the other
FIND = Job("find", "find", exclusive=True)
CONTEXT = Job("context", "context", exclusive=True)
FORK_POINTS = Job("fork-points", "fork points", exclusive=True)
FORK_PLAN = Job("fork-plan", "fork plan", exclusive=True)
FORK_RESTORE = Job("fork-restore", "restore transcript", exclusive=True)
# each turn opened, and each point the cursor rests on, is read: none replaces another
FORK_MESSAGES = Job("fork-messages", "fork messages", exclusive=False)
FORK_UNDO = Job("fork-undo", "edits after the fork point", exclusive=False)
# an image decoded and scaled for the viewer: every one on screen is drawn
IMAGE = Job("images", "image", exclusive=False)
# an image handed to the system's viewer, whose opener is waited for a moment to see if it ran
OPEN_IMAGE = Job("open-image", "open an image", exclusive=False)


def start(node: DOMNode, job: Job, work: Callable[[], object]) -> Worker:
    """Run `work` in a thread worker of `node` (the app, a screen, a widget: its workers end with
    it); a failure ends up in `finished`, never a crash."""
    return node.run_worker(
        work,
        thread=True,
        group=job.group,
        exclusive=job.exclusive,
        exit_on_error=False,
        description=job.description,
    )


def read(
    node: DOMNode,
    job: Job,
    db_path: Path,
    read: Callable[[sqlite3.Connection], Message],
    failed: Callable[[str], Message],
) -> Worker:
    """Start `job` on `node`: `read_archive` in a thread worker, the message it makes posted to
    `node` (a read that fails says so in the message `failed` makes)."""
    return start(node, job, partial(read_archive, node.post_message, db_path, read, failed))


def read_archive(
    post: Callable[[T], object],
    db_path: Path,
    read: Callable[[sqlite3.Connection], T],
    failed: Callable[[str], T],
) -> None:
    """In a worker thread: post what `read(conn)` returns (a message, mostly), read through a
    read-only connection of the thread's own (the interface's never leaves its thread), closed
    after; or `failed(why)` when the archive cannot be opened or read (a locked, damaged or
    vanished file: said, never a traceback). A worker cancelled meanwhile (a newer query, a closed
    screen) posts nothing. The one way the screens read the archive off the interface's thread."""
    from textual.worker import NoActiveWorker, get_current_worker

    from ..core.store.db import connect

    def cancelled() -> bool:
        try:
            return get_current_worker().is_cancelled
        except NoActiveWorker:  # called outside a worker (a test, a script): never cancelled
            return False

    try:
        conn = connect(db_path, readonly=True)
    except Exception as exc:
        post(failed(str(exc)))
        return
    try:
        message = read(conn)
    except Exception as exc:
        if not cancelled():
            post(failed(str(exc) or type(exc).__name__))
        return
    finally:
        conn.close()
    if not cancelled():
        post(message)


def finished(worker: Worker, state: WorkerState) -> Message | None:
    """The past-tense message for one of these workers that has ended (None for any other)."""
    from ..core.ingest.pipeline import IngestReport

    if state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
        return None
    result = worker.result if state == WorkerState.SUCCESS else None
    error = worker.error if state == WorkerState.ERROR else None
    if worker.group == INGEST.group:
        return Ingested(result if isinstance(result, IngestReport) else None, error)
    if worker.group == FOLLOW.group:
        if result is None:
            return None  # a follow that failed is tried again when the file changes next
        session_id, report = result
        return Followed(session_id, report)
    if worker.group == FORK_INGEST.group and state != WorkerState.CANCELLED:
        return ForkIngested(result, error)
    if worker.group == WATCH.group:
        return RootsChanged() if result is True else None
    if worker.group == CLEANUP.group:
        from ..core.actions.cleanup import CleanupRisk

        return CleanupAhead(result, reading=False) if isinstance(result, CleanupRisk) else None
    if worker.group == HIDE.group and state != WorkerState.CANCELLED:
        return HiddenWritten(result if isinstance(result, tuple) else None, error)
    if worker.group == MEMORY.group and state != WorkerState.CANCELLED:
        return MemoryWritten(result if isinstance(result, str) else None, error)
    if worker.group == SYNC.group and state != WorkerState.CANCELLED:
        from ..core.ingest.sync import SyncReport

        return Synced(result if isinstance(result, SyncReport) else None, error)
    if worker.group == EXPORT.group and state != WorkerState.CANCELLED:
        return Exported(result if isinstance(result, Path) else None, error)
    return None


# ---------------------------------------------------------------------- the work


def ingest(
    post: Post,
    db_path: Path,
    sources: list[Path],
    *,
    demo_dir: Path | None,
    demo_long_turns: int | None,
    cancel: threading.Event,
    read_logs: bool = True,
) -> IngestReport:
    """Bring the archive up to date as the database's one writer, saying what it does by `post`.

    Records first (`RecordsLoaded` when they are browsable), then the search index, which is a
    quarter of a first load and which search can do without for a while. `read_logs=False`: no
    log is read, only an older archive's sessions rebuilt (and the index caught up)."""
    from ..core.ingest.update import Listener, update

    include_defaults = read_logs
    if demo_dir is not None:
        from ..core.adapters.claude_demo import LONG_SESSION_TURNS, write_demo_archive

        sources = [write_demo_archive(demo_dir, long_turns=demo_long_turns or LONG_SESSION_TURNS)]
        include_defaults = False

    def waiting(text: str) -> None:
        # another threadloom is ingesting: browse what is stored meanwhile (read-only: it may be
        # a first load, written without a journal), then catch up
        post(
            IngestStatus(
                f"{text[0].upper()}{text[1:]} · browse meanwhile · Esc stops waiting",
                database_ready=db_path.exists(),
                first_load=True,
            )
        )

    def upgrading(_layout: int) -> None:
        post(
            IngestStatus(
                "Upgrading the archive for this version of threadloom: sessions, turns and tool calls "
                "are rebuilt from the stored records (once)"
            )
        )

    last = [0.0]

    def progress(p: Progress) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_SECONDS or p.files_done in (1, p.files_total):  # 1: the panes may read
            last[0] = now
            post(IngestProgressed(p))

    def reading(conn: sqlite3.Connection) -> None:
        if include_defaults:  # before the ingest reads them: what it is about to save
            risk = cleanup_risk(conn)
            if risk is not None:
                post(CleanupAhead(risk, reading=True))
        # A first load into an empty ledger runs fastest as the database's only writer (no journal):
        # the panes read it through a read-only connection once the load is under way.
        first_load = conn.execute("SELECT NOT EXISTS (SELECT 1 FROM entries)").fetchone()[0] == 1
        post(IngestStatus("Reading agent logs", database_ready=not first_load, first_load=first_load))

    said = Listener(
        waiting=waiting,
        upgrading=upgrading,
        progress=progress,
        reading=reading,
        loaded=lambda report: post(RecordsLoaded(report)),
        indexing=lambda: post(IngestStatus("Indexing for search")),
    )
    return update(db_path, sources, include_defaults=include_defaults, listener=said, cancel=cancel)


def cleanup_risk(conn: sqlite3.Connection | None) -> CleanupRisk | None:
    """Claude Code's sessions its cleanup will delete soon that `conn`'s archive lacks, when there
    are any (a look at its projects folder and one query)."""
    from ..core.actions.cleanup import cleanup_risk

    try:
        risk = cleanup_risk(conn)
    except (OSError, sqlite3.Error):
        return None  # a warning is not worth an error of its own: the ingest says what is wrong
    return risk if risk is not None and risk.at_risk else None


def check_cleanup(db_path: Path) -> CleanupRisk | None:
    """`cleanup_risk` with a read-only connection of its own (no ingest runs: --no-ingest, or a
    read-only archive)."""
    from ..core.store.db import LedgerError, open_for_reading

    if not db_path.exists():
        return cleanup_risk(None)
    try:
        conn = open_for_reading(db_path)
    except (LedgerError, sqlite3.Error):
        return None
    try:
        return cleanup_risk(conn)
    finally:
        conn.close()


def hide(db_path: Path, kind: str, key: str, hidden: bool) -> tuple[str, str]:
    """Remember in the archive that a session or project is hidden (or not), as its one writer."""
    from ..core.actions.hidden import write_hidden

    write_hidden(db_path, kind, [key], hidden)
    return kind, key


def mark(db_path: Path, kind: str, ref: str, values: list[str]) -> str:
    """Tag, note or bookmark (a toggle: taken off when there) a session or message in the archive's
    memory, as its one writer; returns what was done, to say."""
    from ..core.insight import memory

    with memory.writing(db_path) as conn:
        target = memory.parse_target(conn, ref)
        author = memory.person()
        if kind == "bookmark":
            if memory.marks(conn, kind="bookmark", target=target):
                memory.remove_mark(conn, "bookmark", target)
                return "Bookmark taken off"
            memory.add_mark(conn, "bookmark", target, "", author)
            return "Bookmarked (B lists the bookmarks)"
        for value in values:
            memory.add_mark(conn, kind, target, value, author)
        if kind == "tag":
            tags = sorted(m.value for m in memory.marks(conn, kind="tag", target=target))
            return (
                "Tags: " + ", ".join(tags) + " (tag:NAME in search finds them)"
            )  # as the tag box lists them
        return "Note kept (note:WORD in search finds it)"


def sync(db_path: Path, url: str | None, rules: list[str]) -> SyncReport:
    """Push and pull with the hub as `threadloom sync` does, as the archive's one writer (after an
    ingest holding it): `url` and `rules` (added to what is shared) given by the first sync's
    question; then remembered. No rule and nothing shared yet: pull only."""
    from ..core.ingest import sync as core_sync
    from ..core.store.db import connect
    from ..core.store.writer_lock import writer_lock

    with writer_lock(db_path):
        conn = connect(db_path)
        try:
            known_url, known = core_sync.configured(conn)
            url = url or known_url
            if not url:
                raise core_sync.SyncError("no hub yet: give its URL")
            sharing = core_sync.apply_rules(known, rules)
            changed = bool(rules)
            report = core_sync.sync(
                conn,
                url,
                push=sharing is not None,
                sharing=sharing,
                reached=partial(core_sync.remember, conn, url, sharing, sharing_changed=changed, done=False),
            )
            core_sync.remember(conn, url, sharing, sharing_changed=changed)
            return report
        finally:
            conn.close()


def read_files(db_path: Path, paths: list[Path]) -> IngestReport:
    """Read just these files (a growing session, a fork just written) with a connection of its own."""
    from ..core.ingest.update import update

    return update(db_path, paths, include_defaults=False, remember=False)


def follow(db_path: Path, path: Path, session_id: str) -> tuple[str, IngestReport]:
    """Read what the agent added to the file of the session being read."""
    return session_id, read_files(db_path, [path])


class Follower:
    """Which files of sessions being read have changed since they were last looked at."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[int, int]] = {}  # (size, mtime) of a file last looked at

    def grown(self, conn: sqlite3.Connection, session_id: str) -> Path | None:
        """The session's file, once per change (even when nothing new comes of it)."""
        from ..core.read import browse

        grown = browse.grown_source(conn, session_id)
        if grown is None:
            return None
        path, seen = grown
        if self.seen.get(path) == seen:
            return None
        self.seen[path] = seen
        return Path(path)


def export(db_path: Path, session_id: str, folder: Path, fmt: str = "html") -> Path:
    """Write a session as `threadloom export` does, into a new file in `folder` (its own read-only
    connection: the app's belongs to the interface thread)."""
    from ..core.actions.export import export_session, file_name, write_new
    from ..core.read.query import get_session
    from ..core.store.db import open_for_reading

    conn = open_for_reading(db_path)
    try:
        session = get_session(conn, session_id)
        if session is None:
            raise LookupError(f"no session {session_id} in the archive")
        done = export_session(conn, session, fmt)
    finally:
        conn.close()
    return write_new(folder, file_name(session, fmt), done.data)
