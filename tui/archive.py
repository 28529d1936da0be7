"""The app's hold on the archive: the database it opens and closes, the ingest that fills it, the
open session followed as it grows, the agents' folders watched for new files, and the messages the
background work (`threadloom.tui.workers`) sends back when it ends.

`ThreadloomApp` (`threadloom.tui.app`) is this plus the screens, keys and palette: the two halves
talk through the browsing screen (`self.browser`), which shows what this part reads; what this part
asks of it is `ArchiveView`, and nothing more.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from textual.app import App
from textual.worker import Worker

from ..core.base.text import count_of
from ..core.read import browse
from . import workers
from .archive_state import ArchiveState
from .events import AgentRan, ForkWritten, HideChanged
from .screens import ErrorScreen
from .workers import (
    CleanupAhead,
    Exported,
    Followed,
    ForkIngested,
    HiddenWritten,
    Ingested,
    IngestProgressed,
    IngestStatus,
    MemoryWritten,
    RecordsLoaded,
    RootsChanged,
    Synced,
)

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel

    from ..core.ingest.pipeline import IngestReport, Progress, RootWatch


class ArchiveView(Protocol):
    """What the archive's side of the app asks of the screen that shows the archive (the browser):
    read through a connection, show what the ingest is doing and what it added, follow the open
    session as it grows."""

    def use_connection(
        self, conn: sqlite3.Connection | None, *, replacing: sqlite3.Connection | None = None
    ) -> None:
        """Read through `conn` from now on (the message view leaves `replacing` for it too)."""

    def refresh_panes(self) -> None:
        """Read the archive again: it was added to, or what is hidden changed."""

    def show_session(self, session_id: str) -> None:
        """Show a session asked for from outside the browser (`threadloom open SESSION`)."""

    def forget_load(self) -> None:
        """A first load failed: show none of it, and let go of its connection."""

    def ingest_started(self, status: str) -> None:
        """An ingest began: its bar shows `status`."""

    def show_status(self, text: str) -> None:
        """What the ingest is doing now."""

    def ingest_progressed(self, progress: Progress, *, load_reader: bool) -> None:
        """How far the ingest is; while it reads files the panes show what is in (`load_reader`:
        through a first load's reader)."""

    def ingest_ended(self) -> None:
        """The ingest is over: its bar goes."""

    @property
    def whole_session_open(self) -> str | None:
        """The session shown whole, the one followed as its agent writes more."""

    def session_grew(self, session_id: str) -> None:
        """The followed session's file was read further: show what came."""

    def hide_written(self, done: tuple[str, str] | None) -> None:
        """What was hidden (`done`) is written to the archive, or nothing is (None)."""

    def marks_written(self) -> None:
        """A tag, note or bookmark was written: what shows them reads them again."""


class ArchiveApp(App[int]):
    """The archive's side of the app: no screens or keys of its own beyond the ingest's."""

    FOLLOW_SECONDS = 2.0  # how often the file of the session being read is checked for growth
    WATCH_SECONDS = 5.0  # how often the agents' folders are checked for new session files

    def __init__(
        self,
        *,
        db_path: Path | None,
        sources: Iterable[Path],
        demo: bool,
        ingest: bool,
        demo_long_turns: int | None,
    ) -> None:
        super().__init__()
        self.db_path = db_path
        self.demo = demo
        self.ingest_on_start = ingest
        self.demo_long_turns = demo_long_turns
        # the connection, what the archive allows now and where its logs are looked for
        self.archive = ArchiveState(sources=[Path(s) for s in sources])
        self.cancel_event = threading.Event()
        self.last_report: IngestReport | None = None
        self.follower = workers.Follower()
        self._archive_seen: int | None = None  # the archive's version the screens show (archive_version)
        self._db_identity: tuple[int, int] | None = None  # the database file the connection reads
        self.root_watch: RootWatch | None = None  # the folders the last ingest looked in
        self.browser: ArchiveView  # the subclass makes it, as its default screen
        self._rescan_asked = False  # Ctrl+R: the ingest's end is reported even when nothing was new
        self.open_session: str | None = None  # a session to show once the archive is open
        self._hides: list[HideChanged] = []  # what is hidden or shown again, written one at a time

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """A notification, always as plain text: threadloom's carry tags typed, titles, paths and
        errors from the logs, which Textual would read as markup ("[red]hot[/red]" drawn red, a
        "[trimmed]" title dropped). Every screen's and widget's `notify` comes here."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    @property
    def conn(self) -> sqlite3.Connection | None:
        """The connection the panes read through (`archive.conn`): what the screens and the palette
        read, never a second one."""
        return self.archive.conn

    def keep_watch(self) -> None:
        """From now on check the open session's file and the agents' folders, each on its clock."""
        self.set_interval(self.FOLLOW_SECONDS, self._follow_open_session)
        self.set_interval(self.WATCH_SECONDS, self.watch_roots)

    # ------------------------------------------------------------------ the database

    def _upgrade_pending(self) -> bool:
        """A database of an older schema has its sessions rebuilt from its stored records (a minute
        or more at 1 GB): the ingest worker does it, with the screen up and saying so, before the
        panes read them (with --no-ingest too, reading no logs)."""
        from ..core.store.db import upgrade_due

        return bool(self.db_path is not None and not self.archive.read_only and upgrade_due(self.db_path))

    def _check_writable(self) -> None:
        """A database the user made read-only (or on a read-only disk) is browsed as it is: no
        ingest, never a chmod; the notice says why and how to add to it."""
        from ..core.store.db import LedgerError, check_writable

        assert self.db_path is not None
        try:
            check_writable(self.db_path)
        except LedgerError as exc:
            self.archive.made_read_only(str(exc))
            self.ingest_on_start = False
            self.notify(
                f"{exc} Browsing only: nothing is ingested.",
                title="Read-only archive",
                severity="warning",
                timeout=12,
            )

    def _open_database(self, *, readonly: bool = False) -> None:
        from ..core.store.db import LedgerError

        if self.conn is not None:
            return
        try:
            conn = self._connect(readonly=readonly)
        except LedgerError as exc:
            self._cannot_open(exc)
            return
        self.archive.opened(conn, reader=readonly)
        self._db_identity = _file_identity(self.db_path)
        self.browser.use_connection(conn)
        self.browser.refresh_panes()
        self._archive_seen = browse.archive_version(conn)
        if self.open_session is not None:  # `threadloom open SESSION`: shown once the panes are filled
            session_id, self.open_session = self.open_session, None
            self.call_after_refresh(self.browser.show_session, session_id)

    def _connect(self, *, readonly: bool = False) -> sqlite3.Connection:
        """A connection to the database: a read-only archive's as it is (never upgraded in place)."""
        from ..core.store.db import connect, open_for_reading

        assert self.db_path is not None
        return (
            open_for_reading(self.db_path)
            if self.archive.read_only
            else connect(self.db_path, readonly=readonly)
        )

    def _cannot_open(self, error: Exception) -> None:
        """The database is damaged, locked or unreadable: its message says what to do."""
        self.archive.open_failed(str(error))
        self.push_screen(ErrorScreen("Cannot open the database", str(error), "q quits, Esc closes"))

    def _end_load_reader(self) -> None:
        """The first load is over: browse through an ordinary connection from now on."""
        reader = self.archive.take_reader()
        if reader is None:
            return
        self._open_database()
        self.browser.use_connection(self.conn, replacing=reader)
        self._reload_stats()  # an open stats screen reads through the new connection from now on
        reader.close()

    def archive_changed(self) -> None:
        """What the screens show was added to: the browser's panes, and an open stats screen,
        read it again."""
        if not self.is_running:  # closing: the panes are being taken down
            return
        self.browser.refresh_panes()
        self._reload_stats()
        if self.conn is not None:  # what they now show: a change after it is the next one to show
            self._archive_seen = browse.archive_version(self.conn)

    def _reload_stats(self) -> None:
        from .stats import StatsScreen

        if self.conn is None:
            return
        for screen in self.screen_stack:
            if isinstance(screen, StatsScreen):
                screen.reload(self.conn)

    def on_unmount(self) -> None:
        conn = self.archive.closed()
        if conn is not None:
            conn.close()
        if self.archive.temp_dir is not None and not self.archive.ingesting:
            shutil.rmtree(self.archive.temp_dir, ignore_errors=True)

    # ------------------------------------------------------------------ the ingest

    def start_ingest(self, *, demo_dir: Path | None = None, read_logs: bool = True) -> None:
        if self.archive.ingesting:
            return
        if self.archive.read_only and demo_dir is None:
            self.notify(self.archive.read_only, title="Read-only archive", severity="warning", timeout=8)
            return
        self.archive.ingest_started()
        self.refresh_bindings()
        self.cancel_event = threading.Event()
        self.browser.ingest_started("Writing the demo archive" if demo_dir else "Reading agent logs")
        assert self.db_path is not None
        work = partial(
            workers.ingest,
            self.post_message,
            self.db_path,
            list(self.archive.sources) if read_logs else [],
            demo_dir=demo_dir,
            demo_long_turns=self.demo_long_turns,
            cancel=self.cancel_event,
            read_logs=read_logs,
        )
        workers.start(self, workers.INGEST, work)

    def _start_demo(self) -> None:
        from ..core.adapters.claude_demo import claim_demo_dir

        temp_dir = claim_demo_dir()
        self.archive.became_demo(temp_dir)
        self.db_path = temp_dir / "demo.db"
        self.title = "threadloom · demo"
        self.start_ingest(demo_dir=temp_dir / "archive")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one router of the app's workers: each that ends comes back as its past-tense message."""
        message = workers.finished(event.worker, event.state)
        if message is not None:
            self.post_message(message)

    def on_ingest_status(self, event: IngestStatus) -> None:
        self.browser.show_status(event.text)
        if event.first_load:
            self.archive.load_began()
        if event.database_ready and self.conn is None:
            self._open_database(readonly=self.archive.first_load)

    def on_ingest_progressed(self, event: IngestProgressed) -> None:
        p = event.progress
        reading = not p.phase.after_files  # after the files, nothing new to show
        if reading and self.conn is None and self.archive.first_load and p.files_done > 0:
            # the load is under way (its files are being written in ~1 s transactions): browse
            # what is in meanwhile, read-only, rather than wait a minute for a large archive
            self._open_database(readonly=True)
        self.browser.ingest_progressed(p, load_reader=self.archive.load_reader)

    def on_records_loaded(self, event: RecordsLoaded) -> None:
        report = event.report
        self._keep_report(report)
        self.archive.records_loaded()
        self._end_load_reader()
        if self.conn is None:
            self._open_database()
        self.archive_changed()
        if report.files_read:
            self.notify(ingest_done(report), title="Ingest done")
        elif self._rescan_asked:  # Ctrl+R: say that it looked, even when nothing was new
            self.notify(
                f"No new or changed agent logs ({count_of(report.files_seen, 'file')} checked)",
                title="Rescan",
                timeout=3,
            )
        self._rescan_asked = False
        if report.errors:
            self.notify(
                f"{count_of(len(report.errors), 'file')} could not be read; first: {report.errors[0]}",
                title="Ingest errors",
                severity="error",
                timeout=10,
            )

    def _keep_report(self, report: IngestReport) -> None:
        from ..core.ingest.pipeline import RootWatch

        self.last_report = report
        self.archive.looked_in(report.roots)
        watching = self.ingest_on_start and not self.demo and not self.archive.is_demo
        if watching and (self.root_watch is None or self.root_watch.roots != report.roots):
            self.root_watch = RootWatch(report.roots)

    def on_ingested(self, event: Ingested) -> None:
        self.archive.ingest_ended()
        self.browser.ingest_ended()
        if event.error is not None and self.archive.load_reader and self.conn is not None:
            # a first load that failed is started afresh by the next launch: show none of it
            self.browser.forget_load()
            reader = self.archive.closed()
            if reader is not None:
                reader.close()
        self._end_load_reader()  # a first load cancelled half-way: what is in stays browsable
        self.refresh_bindings()
        if event.error is not None:
            from ..core.store.db import LedgerError

            error = event.error
            if isinstance(error, LedgerError) and self.conn is None:  # it never opened: not the logs
                self._cannot_open(error)
                return
            self.push_screen(
                ErrorScreen(
                    "Reading agent logs failed",
                    f"{type(error).__name__}: {error}",
                    "What was read before the error is kept. Ctrl+R tries again; "
                    "`threadloom ingest` shows the same error on the command line.",
                )
            )
            self.browser.refresh_panes()
            return
        report = event.report
        if report is None:  # cancelled before it had a report
            self.browser.refresh_panes()
            return
        self._keep_report(report)
        if self.conn is None:
            self._open_database()
        self.archive_changed()
        if report.cancelled and report.index_complete is False:
            self.notify(
                "Search indexing paused; it continues on the next launch. Until then search "
                "finds older records only.",
                severity="warning",
            )
        elif report.cancelled:
            self.notify(
                f"Ingest cancelled after {report.files_read:,} files; what was read is kept.",
                severity="warning",
            )
        elif report.index_complete:
            self.notify(f"Search index complete in {report.index_seconds:.1f} s", timeout=3)

    # ------------------------------------------------------------------ following a live session

    def _follow_open_session(self) -> None:
        """Every FOLLOW_SECONDS: when the file of the session being read has grown (its agent is
        still at work), read what was added, and show it; when another writer has changed the
        archive meanwhile (a watch read the same file first, a CLI ingest, a sync), show what it
        holds now: the screens and the open session (a message completed in place, a rewrite)."""
        session_id = self.browser.whole_session_open
        if (
            not self.archive.settled
            or self.conn is None
            or self.db_path is None
            or any(w.group == workers.FOLLOW.group and w.is_running for w in self.workers)
        ):
            return
        if self._database_replaced():
            return
        path = self.follower.grown(self.conn, session_id) if session_id is not None else None
        if path is not None and session_id is not None:
            workers.start(self, workers.FOLLOW, partial(workers.follow, self.db_path, path, session_id))
            return
        version = browse.archive_version(self.conn)
        if version != self._archive_seen:
            self.archive_changed()
            if session_id is not None:
                self.browser.session_grew(session_id)

    def _database_replaced(self) -> bool:
        """`ingest --rebuild` puts a new database in this one's place (the old one moved aside as
        its backup): the open connection went on reading the backup, and what the app wrote went to
        the new one. Read the file now at the path; True when the connection was opened anew. Not
        while another screen is up (a memory or fork screen reads through the connection it was
        given): once it is closed. A file there that cannot be opened is said once, and the one
        opened before is read on."""
        from ..core.store.db import LedgerError

        identity = _file_identity(self.db_path)
        if identity is None or self._db_identity is None or identity == self._db_identity:
            return False
        if self.screen is not self.browser:
            return False
        assert self.db_path is not None
        self._db_identity = identity
        try:
            conn = self._connect()
        except (LedgerError, sqlite3.Error) as exc:
            self.notify(
                f"{exc} Still reading the database opened before.",
                title="Another file took the database's place",
                severity="warning",
                timeout=12,
            )
            return False
        old = self.archive.closed()
        self.archive.opened(conn)
        self.browser.use_connection(conn, replacing=old)
        self.archive_changed()
        if old is not None:
            old.close()
        return True

    def watch_roots(self) -> None:
        """Every WATCH_SECONDS: a session file added where the agents write (a session started in
        another terminal) is read in, as Ctrl+R would, without being asked. Not with --no-ingest,
        nor on the demo or a read-only archive; the check runs in a thread."""
        if (
            self.root_watch is None
            or not self.archive.settled
            or self.archive.read_only
            or any(w.group == workers.WATCH.group and w.is_running for w in self.workers)
        ):
            return
        workers.start(self, workers.WATCH, self.root_watch.changed)

    def check_cleanup(self) -> None:
        """With no ingest to run (--no-ingest, a read-only archive): still say what an agent's
        cleanup is about to delete that the archive lacks."""
        if self.db_path is not None and not self.demo:
            workers.start(self, workers.CLEANUP, partial(workers.check_cleanup, self.db_path))

    def on_cleanup_ahead(self, event: CleanupAhead) -> None:
        hint = "threadloom is reading them now" if event.reading else "`threadloom ingest` archives them now"
        self.notify(
            event.risk.message(hint=hint),
            title="Sessions about to be deleted",
            severity="warning",
            timeout=30,
        )

    def on_roots_changed(self, event: RootsChanged) -> None:
        if not self.archive.ingesting:
            self.start_ingest()

    def on_followed(self, event: Followed) -> None:
        # a follow that ends while the app closes finds its panes gone (the torture test met it)
        if self.conn is None or not event.report.records_added or not self.is_running:
            return
        self.archive_changed()
        self.browser.session_grew(event.session_id)

    # ------------------------------------------------------------------ hiding

    def on_hide_changed(self, event: HideChanged) -> None:
        """Remember in the archive what the browser now hides (or shows again); a read-only
        archive cannot, and the browser shows it as it is stored."""
        if self.archive.read_only or self.db_path is None:
            self.notify(
                "This archive is read-only: what is hidden cannot be remembered.",
                title="Hide",
                severity="warning",
                timeout=6,
            )
            self.browser.refresh_panes()
            return
        self._hides.append(event)
        if len(self._hides) == 1:
            self._write_hide()

    def _write_hide(self) -> None:
        """The first of the hides asked for written by a worker; the next waits for it: two h on a
        row, written at once, could land in either order and leave it as the first had it."""
        if self._hides and self.db_path is not None:
            first = self._hides[0]
            work = partial(workers.hide, self.db_path, first.kind, first.key, first.hidden)
            workers.start(self, workers.HIDE, work)

    def on_hidden_written(self, event: HiddenWritten) -> None:
        if self._hides:
            self._hides.pop(0)
            self._write_hide()
        if event.done is None or all((h.kind, h.key) != event.done for h in self._hides):
            self.browser.hide_written(event.done)  # else a later press on it is still to be written
        if event.error is not None:
            self.notify(
                f"Could not remember what is hidden: {event.error}",
                title="Hide",
                severity="error",
                timeout=10,
            )
            self.browser.refresh_panes()  # as the archive has it

    # ------------------------------------------------------------------ memory

    def write_mark(self, kind: str, ref: str, values: list[str]) -> None:
        """A tag, note or bookmark written to the archive's memory by a worker (it waits for an
        ingest holding the archive); a read-only archive cannot keep it."""
        if self.archive.read_only or self.db_path is None:
            self.notify("This archive is read-only: tags, notes and bookmarks cannot be kept.", title="Memory",
                        severity="warning", timeout=6)  # fmt: skip
            return
        workers.start(self, workers.MEMORY, partial(workers.mark, self.db_path, kind, ref, values))

    def on_memory_written(self, event: MemoryWritten) -> None:
        if event.error is not None:
            self.notify(f"Could not keep it: {event.error}", title="Memory", severity="error", timeout=10)
        elif event.said:
            self.notify(event.said, title="Memory", timeout=4)
        if event.error is None and self.is_running:  # a write ending as the app closes: its panes are gone
            self.browser.marks_written()

    # ------------------------------------------------------------------ sync

    def start_sync(self, url: str | None, rules: list[str]) -> None:
        """Push and pull with the hub in a worker (it waits for an ingest holding the archive)."""
        if self.archive.read_only or self.db_path is None:
            self.notify(
                "This archive is read-only: it cannot sync.", title="Sync", severity="warning", timeout=6
            )
            return
        self.notify("Syncing with the hub…", title="Sync", timeout=3)
        workers.start(self, workers.SYNC, partial(workers.sync, self.db_path, url, rules))

    def on_synced(self, event: Synced) -> None:
        from ..core.ingest.sync import SyncError

        report = event.report
        if event.error is not None or report is None:
            why = str(event.error) if isinstance(event.error, SyncError) else repr(event.error)
            self.notify(f"Could not sync: {why}", title="Sync", severity="error", timeout=10)
            return
        pushed = (
            f"pushed {count_of(report.pushed_records, 'record')}"
            if report.pushed_sources or report.not_shared
            else "pushed nothing (pull only)"
        )
        self.notify(
            f"{pushed}, pulled {count_of(report.pulled_records, 'record')} ({count_of(report.sessions, 'session')}), "
            f"{count_of(report.pulled_rows, 'memory item')}"
            + (
                f", {report.memory_conflicts} conflicts (memory list --conflicts)"
                if report.memory_conflicts
                else ""
            ),
            title=f"Synced as {report.machine}",
            timeout=6,
        )
        if report.pulled_records or report.pulled_rows:
            self.browser.refresh_panes()

    # ------------------------------------------------------------------ the other workers' ends

    def on_fork_written(self, event: ForkWritten) -> None:
        """Read a fork threadloom just wrote, so it shows in the tree (under its source, too)."""
        if self.db_path is not None:
            work = partial(workers.read_files, self.db_path, [event.path])
            workers.start(self, workers.FORK_INGEST, work)

    def on_exported(self, event: Exported) -> None:
        if event.error is not None or event.path is None:
            self.notify(
                f"Could not export the session: {event.error}", title="Export", severity="error", timeout=10
            )
            return
        self.notify(f"Wrote {event.path}", title="Export", timeout=6)

    def on_fork_ingested(self, event: ForkIngested) -> None:
        if event.error is not None:
            self.notify(
                f"The fork was written but could not be read back: {event.error}",
                title="Fork",
                severity="error",
                timeout=10,
            )
            return
        from .fork import ForkPicker

        self.archive_changed()
        if event.report is not None and event.report.sessions:
            if isinstance(self.screen, ForkPicker):
                self.screen.read_back()  # a toast would sit over the picker's own status
            else:
                self.notify(
                    "The fork is in the session tree, beside and under its source.", title="Fork", timeout=4
                )

    def on_agent_ran(self, event: AgentRan) -> None:
        """An agent started from the fork picker has ended: read what it wrote (a new session, or
        the resumed one grown), as Ctrl+R does; the demo archive does not change."""
        if self.demo or self.archive.is_demo or self.archive.read_only:
            self.browser.refresh_panes()
        else:
            self.start_ingest()

    # ------------------------------------------------------------------ the ingest's keys

    def action_cancel_ingest(self) -> None:
        if self.archive.ingesting:
            self.cancel_event.set()
            self.notify("Cancelling after the current file…", timeout=2)

    def action_rescan(self) -> None:
        if self.archive.ingesting:
            self.notify("Already reading agent logs", timeout=2)
        elif self.demo or self.archive.is_demo:
            self.notify("The demo archive does not change", timeout=2)
        else:
            self._rescan_asked = True
            self.start_ingest()

    def open_demo(self) -> None:
        """`d` on the empty state: the demo archive, written and ingested into a temporary folder."""
        conn = self.archive.closed()
        if conn is not None:
            conn.close()
            self.browser.use_connection(None)
        self.demo = True
        self._start_demo()


def ingest_done(report: IngestReport) -> str:
    """The notice at the end of an ingest that read something ('1 file read', never '1 files')."""
    return (
        f"{count_of(report.files_read, 'file')} read ({report.bytes_read / 1e6:,.1f} MB), "
        f"{count_of(report.sessions, 'session')} updated in {report.seconds:.1f} s"
    )


def _file_identity(path: Path | None) -> tuple[int, int] | None:
    """The file at `path` as the file system tells one file from another (None: there is none)."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
