"""threadloom's Textual app: the hub between the browser, search and the fork picker.

The app owns what outlives a screen: the database connection it opens and closes, the key
bindings and the palette, and the background work (`threadloom.tui.workers`), whose ends come back
through one `on_worker_state_changed` as past-tense messages. Screens never call into it: they post
the messages of `threadloom.tui.events`, which are all handled here, and the app tells the browsing
screen (`threadloom.tui.browser`) what to show.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker
from threadloom.core import browse
from threadloom.tui import workers
from threadloom.tui.browser import BrowserScreen, layout_classes
from threadloom.tui.events import (
    AgentRan,
    ForkWritten,
    OpenForkPicker,
    OpenProject,
    OpenSession,
    SearchClosed,
    SearchHitChosen,
)
from threadloom.tui.keymap import keymap_path, load_keymap, unknown_ids
from threadloom.tui.render import NO_CONTROLS
from threadloom.tui.screens import ErrorScreen, HelpScreen
from threadloom.tui.workers import (
    Exported,
    Followed,
    ForkIngested,
    Ingested,
    IngestProgressed,
    IngestStatus,
    RecordsLoaded,
    RootsChanged,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from textual.command import Provider
    from textual.filter import LineFilter
    from threadloom.core.ingest import IngestReport, RootWatch
    from threadloom.tui.search import SearchScreen

BROWSER_ONLY = frozenset(
    {
        "quit",
        "jump",
        "search",
        "fork",
        "export",
        "focus_pane",
        "open_demo",
        "back_to_search",
        "back",
        "help",
        "signals",
    }
)


class ThreadloomApp(App[int]):
    """Browse every agent session threadloom has archived."""

    CSS_PATH = Path(__file__).with_name("app.tcss")
    FOLLOW_SECONDS = 2.0  # how often the file of the session being read is checked for growth
    WATCH_SECONDS = 5.0  # how often the agents' folders are checked for new session files
    TITLE = "threadloom"
    COMMANDS = {
        lambda: _palette_provider("ActionsProvider"),
        lambda: _palette_provider("SessionJumpProvider"),
    }
    BINDINGS = [
        Binding("tab", "next_pane", "Next pane", show=False, id="app.next-pane", priority=True),
        Binding(
            "shift+tab", "previous_pane", "Previous pane", show=False, id="app.previous-pane", priority=True
        ),
        Binding("1", "focus_pane('projects')", "Projects", show=False, id="app.focus-projects"),
        Binding("2", "focus_pane('sessions')", "Sessions", show=False, id="app.focus-sessions"),
        Binding("3", "focus_pane('messages')", "Messages", show=False, id="app.focus-messages"),
        # the footer shows these in this order after the pane's own keys and cuts what does not fit:
        # what threadloom is for first, the keys every TUI has last
        Binding(
            "slash", "search", "Search", id="app.search", tooltip="Search every conversation of every agent"
        ),
        Binding(
            "f",
            "fork",
            "Fork",
            id="app.fork",
            tooltip="Fork or resume from the message (or session) under the cursor",
        ),
        Binding("p", "jump", "Jump", id="app.jump", tooltip="Jump to a session by title, id or project"),
        Binding(
            "E",
            "export",
            "Export",
            show=False,
            id="app.export",
            tooltip="Write the open session as one HTML page into the current folder",
        ),
        Binding(
            "S",
            "stats",
            "Stats",
            show=False,
            id="app.stats",
            tooltip="Stats: tokens, cost, tool calls and changed lines",
        ),
        Binding(
            "W",
            "signals",
            "Signals",
            show=False,
            id="app.signals",
            tooltip="What went wrong in the open session (signals)",
        ),
        Binding("f1,question_mark", "help", "Help", id="app.help", tooltip="Keys of the focused pane"),
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("ctrl+r", "rescan", "Rescan", show=False, id="app.rescan", tooltip="Read new agent logs now"),
        Binding(
            "escape,backspace",
            "back",
            "Back",
            id="app.back",
            tooltip="Back to the session (and message) this subagent was opened from",
        ),
        Binding(
            "escape",
            "back_to_search",
            "Back to search",
            id="app.back-to-search",
            tooltip="Return to the search results this message was opened from",
        ),
        Binding("escape", "cancel_ingest", "Cancel ingest", id="app.cancel-ingest"),
        Binding("d", "open_demo", "Open demo", id="app.demo"),
        Binding(
            "ctrl+p",
            "command_palette",
            "Palette",
            show=False,
            id="app.palette",
            priority=True,
            tooltip="Actions that apply now, and jump to session",
        ),
        Binding("ctrl+q", "quit", "Quit", show=False, id="app.force-quit", priority=True),
    ]

    def __init__(
        self,
        *,
        db_path: Path | None = None,
        sources: Iterable[Path] = (),
        demo: bool = False,
        ingest: bool = True,
        now: Callable[[], float] = time.time,
        demo_long_turns: int | None = None,
    ) -> None:
        super().__init__()
        self.db_path = db_path
        self.sources = [Path(s) for s in sources]
        self.demo = demo
        self.ingest_on_start = ingest
        self.read_only = ""  # why the database cannot be written, when it cannot: browse only
        self.open_error = ""  # why the database could not be opened: quitting says it and exits 1
        self.now = now
        self.demo_long_turns = demo_long_turns
        self.conn: sqlite3.Connection | None = None
        self.first_load = False  # a first load is filling an empty database
        self.load_reader = False  # self.conn is a read-only connection opened during that load
        self.temp_dir: Path | None = None
        self.cancel_event = threading.Event()
        self.ingesting = False
        self.last_report: IngestReport | None = None
        self.follower = workers.Follower()
        self.root_watch: RootWatch | None = None  # the folders the last ingest looked in
        self.browser: BrowserScreen  # made by get_default_screen
        self.search_screen: SearchScreen | None = None
        self._rescan_asked = False  # Ctrl+R: the ingest's end is reported even when nothing was new

    # ------------------------------------------------------------------ screens and start-up

    def get_default_screen(self) -> Screen:
        # born with its layout classes: adding them after the panes are styled restyles every one
        # of them again (60 ms of the first frame)
        classes = " ".join(
            name for name, wanted in layout_classes(self.size.width, "projects").items() if wanted
        )
        self.browser = BrowserScreen(now=self.now, sources=self.sources, id="_default", classes=classes)
        return self.browser

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, then the one that keeps a log's control characters off the terminal."""
        return [*super().get_line_filters(), NO_CONTROLS]

    async def on_mount(self) -> None:
        self._load_keymap()
        # the browser composes its panes in its own task: they are filled here, before the first frame
        await self.browser.composed.wait()
        self._load_settings()
        self.browser.apply_layout(self.size.width)
        self.set_interval(self.FOLLOW_SECONDS, self._follow_open_session)
        self.set_interval(self.WATCH_SECONDS, self.watch_roots)
        if self.demo:
            self._start_demo()
            return
        if self.db_path is None:
            from threadloom.core.db import default_db_path

            self.db_path = default_db_path()
        upgrade = False
        if self.db_path.exists():
            self._check_writable()
            upgrade = self._upgrade_pending()
            if not upgrade:
                self._open_database()
        if not self.ingest_on_start and self.conn is None and not upgrade:  # else on_ready starts the worker
            self._open_database()
            self.browser.refresh_panes()
        self.browser.focus_first_pane()

    def on_ready(self) -> None:
        """The first frame is displayed: only now start the ingest, whose imports and stats would
        otherwise hold the GIL while the archive we already have is being drawn."""
        if self.ingest_on_start and not self.demo:
            self.start_ingest()
        elif not self.demo and self.conn is None and self._upgrade_pending():
            self.start_ingest(read_logs=False)  # --no-ingest: the worker only rebuilds the older archive

    def _load_keymap(self) -> None:
        path = keymap_path()
        keymap, problems = load_keymap(path)
        self._warn_keymap(problems)
        if keymap:
            self.set_keymap(keymap)
            # which ids exist is known once every screen's module is imported: after the first frame
            self.call_after_refresh(lambda: self._warn_keymap(unknown_ids(keymap, path)))

    def _warn_keymap(self, problems: list[str]) -> None:
        for problem in problems:
            self.notify(problem, title="Keymap not applied", severity="warning", timeout=8)

    def _load_settings(self) -> None:
        """What was remembered (hidden short sessions, pane widths); the defaults when the file is
        damaged, with a warning that names it."""
        from threadloom.tui.settings import load_settings, settings_path

        settings, problems = load_settings(settings_path())
        self.browser.use_settings(settings)
        for problem in problems:
            self.notify(problem, title="Settings not read", severity="warning", timeout=8)

    def on_resize(self, event: events.Resize) -> None:
        self.browser.apply_layout(event.size.width)

    # ------------------------------------------------------------------ the database

    def _upgrade_pending(self) -> bool:
        """A database of an older schema has its sessions rebuilt from its stored records (a minute
        or more at 1 GB): the ingest worker does it, with the screen up and saying so, before the
        panes read them (with --no-ingest too, reading no logs)."""
        from threadloom.core.db import upgrade_due

        return bool(self.db_path is not None and not self.read_only and upgrade_due(self.db_path))

    def _check_writable(self) -> None:
        """A database the user made read-only (or on a read-only disk) is browsed as it is: no
        ingest, never a chmod; the notice says why and how to add to it."""
        from threadloom.core.db import LedgerError, check_writable

        assert self.db_path is not None
        try:
            check_writable(self.db_path)
        except LedgerError as exc:
            self.read_only = str(exc)
            self.ingest_on_start = False
            self.notify(
                f"{exc} Browsing only: nothing is ingested.",
                title="Read-only archive",
                severity="warning",
                timeout=12,
            )

    def _open_database(self, *, readonly: bool = False) -> None:
        from threadloom.core.db import LedgerError, connect, open_for_reading

        if self.conn is not None:
            return
        try:
            self.conn = (
                open_for_reading(self.db_path) if self.read_only else connect(self.db_path, readonly=readonly)
            )
        except LedgerError as exc:
            self._cannot_open(exc)
            return
        self.open_error = ""
        self.load_reader = readonly
        self.browser.use_connection(self.conn)
        self.browser.refresh_panes()

    def _cannot_open(self, error: Exception) -> None:
        """The database is damaged, locked or unreadable: its message says what to do."""
        self.open_error = str(error)
        self.push_screen(ErrorScreen("Cannot open the database", self.open_error, "q quits, Esc closes"))

    def _end_load_reader(self) -> None:
        """The first load is over: browse through an ordinary connection from now on."""
        if not self.load_reader or self.conn is None:
            return
        reader, self.conn = self.conn, None
        self.load_reader = False
        self._open_database()
        self.browser.use_connection(self.conn, replacing=reader)
        reader.close()

    def on_unmount(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.temp_dir is not None and not self.ingesting:
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    # ------------------------------------------------------------------ the ingest

    def start_ingest(self, *, demo_dir: Path | None = None, read_logs: bool = True) -> None:
        if self.ingesting:
            return
        if self.read_only and demo_dir is None:
            self.notify(self.read_only, title="Read-only archive", severity="warning", timeout=8)
            return
        self.ingesting = True
        self.refresh_bindings()
        self.cancel_event = threading.Event()
        self.browser.ingest_started("Writing the demo archive" if demo_dir else "Reading agent logs")
        assert self.db_path is not None
        work = partial(
            workers.ingest,
            self.post_message,
            self.db_path,
            list(self.sources) if read_logs else [],
            demo_dir=demo_dir,
            demo_long_turns=self.demo_long_turns,
            cancel=self.cancel_event,
            read_logs=read_logs,
        )
        workers.start(self, workers.INGEST, work)

    def _start_demo(self) -> None:
        from threadloom.core.demo import claim_demo_dir

        self.temp_dir = claim_demo_dir()
        self.db_path = self.temp_dir / "demo.db"
        self.sources = []
        self.browser.sources = []
        self.title = "threadloom · demo"
        self.start_ingest(demo_dir=self.temp_dir / "archive")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one router of the app's workers: each that ends comes back as its past-tense message."""
        message = workers.finished(event.worker, event.state)
        if message is not None:
            self.post_message(message)

    def on_ingest_status(self, event: IngestStatus) -> None:
        self.browser.show_status(event.text)
        self.first_load = self.first_load or event.first_load
        if event.database_ready and self.conn is None:
            self._open_database(readonly=self.first_load)

    def on_ingest_progressed(self, event: IngestProgressed) -> None:
        from threadloom.core.ingest import INDEXING

        p = event.progress
        self.browser.show_progress(p)
        if p.path == INDEXING:
            return
        if self.conn is None and self.first_load and p.files_done > 0:
            # the load is under way (its files are being written in ~1 s transactions): browse
            # what is in meanwhile, read-only, rather than wait a minute for a large archive
            self._open_database(readonly=True)
        self.browser.refresh_while_loading(load_reader=self.load_reader)

    def on_records_loaded(self, event: RecordsLoaded) -> None:
        report = event.report
        self._keep_report(report)
        self.first_load = False
        self._end_load_reader()
        if self.conn is None:
            self._open_database()
        self.browser.refresh_panes()
        if report.files_read:
            self.notify(
                f"{report.files_read:,} files read ({report.bytes_read / 1e6:,.1f} MB), "
                f"{report.sessions:,} sessions updated in {report.seconds:.1f} s",
                title="Ingest done",
            )
        elif self._rescan_asked:  # Ctrl+R: say that it looked, even when nothing was new
            self.notify(
                f"No new or changed agent logs ({report.files_seen:,} files checked)",
                title="Rescan",
                timeout=3,
            )
        self._rescan_asked = False
        if report.errors:
            self.notify(
                f"{len(report.errors)} files could not be read; first: {report.errors[0]}",
                title="Ingest errors",
                severity="error",
                timeout=10,
            )

    def _keep_report(self, report: IngestReport) -> None:
        from threadloom.core.ingest import RootWatch

        self.last_report = report
        self.browser.roots = report.roots  # what the empty state says was looked in
        watching = self.ingest_on_start and not self.demo and self.temp_dir is None
        if watching and (self.root_watch is None or self.root_watch.roots != report.roots):
            self.root_watch = RootWatch(report.roots)

    def on_ingested(self, event: Ingested) -> None:
        self.ingesting = False
        self.first_load = False
        self.browser.ingest_ended()
        if event.error is not None and self.load_reader and self.conn is not None:
            # a first load that failed is started afresh by the next launch: show none of it
            self.browser.forget_load()
            self.conn.close()
            self.conn, self.load_reader = None, False
            self.browser.use_connection(None)
        self._end_load_reader()  # a first load cancelled half-way: what is in stays browsable
        self.refresh_bindings()
        if event.error is not None:
            from threadloom.core.db import LedgerError

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
        self.browser.refresh_panes()
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
        still at work), read what was added, and show it."""
        session_id = self.browser.whole_session_open
        if (
            self.conn is None
            or self.db_path is None
            or self.ingesting
            or self.load_reader
            or session_id is None
            or any(w.group == workers.FOLLOW.group and w.is_running for w in self.workers)
        ):
            return
        path = self.follower.grown(self.conn, session_id)
        if path is not None:
            workers.start(self, workers.FOLLOW, partial(workers.follow, self.db_path, path, session_id))

    def watch_roots(self) -> None:
        """Every WATCH_SECONDS: a session file added where the agents write (a session started in
        another terminal) is read in, as Ctrl+R would, without being asked. Not with --no-ingest,
        nor on the demo or a read-only archive; the check runs in a thread."""
        if (
            self.root_watch is None
            or self.conn is None
            or self.ingesting
            or self.load_reader
            or self.read_only
            or any(w.group == workers.WATCH.group and w.is_running for w in self.workers)
        ):
            return
        workers.start(self, workers.WATCH, self.root_watch.changed)

    def on_roots_changed(self, event: RootsChanged) -> None:
        if not self.ingesting:
            self.start_ingest()

    def on_followed(self, event: Followed) -> None:
        if self.conn is None or not event.report.records_added:
            return
        self.browser.refresh_panes()
        self.browser.session_grew(event.session_id)

    # ------------------------------------------------------------------ search

    def key_shown(self, binding_id: str) -> str:
        """The key that runs the binding `binding_id` now (after the user's keymap), as shown."""
        for active in self.active_bindings.values():
            if active.binding.id == binding_id:
                return self.get_key_display(active.binding)
        return ""

    def action_search(self) -> None:
        """Open search (the same screen each time: the last query stays, selected)."""
        from threadloom.tui.search import SearchScreen

        if self.db_path is None or self.conn is None:
            self.notify("No database yet", timeout=2)
            return
        if isinstance(self.screen, SearchScreen):
            return
        self.browser.search_return = False
        if self.search_screen is None or self.search_screen.db_path != self.db_path:
            if self.search_screen is not None:
                self.uninstall_screen(self.search_screen)
            self.search_screen = SearchScreen(self.db_path, now=self.now, key=self.key_shown("app.search"))
            self.install_screen(self.search_screen, "search")
            self.push_screen(self.search_screen)
        else:
            self.push_screen(self.search_screen)
            self.search_screen.reopen()
        self.refresh_bindings()

    def on_search_hit_chosen(self, event: SearchHitChosen) -> None:
        """Enter on a hit: the session in the message viewer, at the hit, marked; Esc comes back."""
        if self.screen is not self.browser:
            self.pop_screen()
        self.browser.open_hit(event.hit)
        self.refresh_bindings()

    def action_back_to_search(self) -> None:
        if self.search_screen is None or self.screen is not self.browser:
            return
        self.browser.search_return = False
        self.push_screen(self.search_screen)
        self.refresh_bindings()

    def on_search_closed(self, event: SearchClosed) -> None:
        from threadloom.tui.search import SearchScreen

        self.browser.search_return = False
        if isinstance(self.screen, SearchScreen):
            self.pop_screen()
        self.refresh_bindings()

    def on_open_session(self, event: OpenSession) -> None:
        self.browser.jump_to_session(event.session_id)

    # ------------------------------------------------------------------ stats

    def action_stats(self) -> None:
        """`S`: the stats screen (totals by period, project, model, agent or session)."""
        from threadloom.tui.stats import StatsScreen

        if self.conn is None:
            self.notify("No database yet", timeout=2)
            return
        if self.screen is self.browser:
            self.push_screen(StatsScreen(self.conn))

    def on_open_project(self, event: OpenProject) -> None:
        self.browser.show_project(event.path)

    # ------------------------------------------------------------------ fork

    def action_fork(self) -> None:
        """`f`: the fork picker for the message under the cursor, or for a session's latest turn."""
        target = self.browser.fork_target()
        if target is None:
            self.notify("Open a session, then press f on a message to fork from it", timeout=3)
            return
        session_id, entry_id, turn_id = target
        self.open_fork_picker(session_id, entry_id, turn_id=turn_id)

    def on_open_fork_picker(self, event: OpenForkPicker) -> None:
        self.open_fork_picker(event.session_id, event.entry_id, turn_id=event.turn_id, seq=event.seq)

    def open_fork_picker(
        self, session_id: str, entry_id: int | None, *, turn_id: str | None = None, seq: int | None = None
    ) -> None:
        """The fork picker around an entry (or the latest branch); `seq` finds the entry's turn."""
        from threadloom.tui.fork import ForkPicker

        if self.conn is None or self.db_path is None:
            return
        if turn_id is None and seq is not None:
            rows = browse.message_page(self.conn, session_id, seq, seq)
            turn_id = rows[0].turn_id if rows else None
        if entry_id is None and turn_id is not None:
            seqs = browse.branch_seqs(self.conn, session_id, [turn_id])
            rows = browse.message_page(self.conn, session_id, seqs[-1], seqs[-1]) if seqs else []
            entry_id = rows[0].entry_id if rows else None
        self.push_screen(ForkPicker(self.conn, self.db_path, session_id, entry_id=entry_id, turn_id=turn_id))

    def on_fork_written(self, event: ForkWritten) -> None:
        """Read a fork threadloom just wrote, so it shows in the tree (under its source, too)."""
        if self.db_path is not None:
            work = partial(workers.read_files, self.db_path, [event.path])
            workers.start(self, workers.FORK_INGEST, work)

    def action_export(self) -> None:
        """`E`: the open session as one self-contained HTML page, in the folder threadloom runs in."""
        session_id, db_path = self.browser.open_session_id, self.db_path
        if session_id is None or db_path is None:
            return
        workers.start(self, workers.EXPORT, partial(workers.export, db_path, session_id, Path.cwd()))

    def action_signals(self) -> None:
        """`W` (what went wrong): the open session's signals; Enter on a piece of evidence shows that message."""
        from threadloom.tui.messages import MessageView
        from threadloom.tui.signals import SignalsScreen

        session_id = self.browser.open_session_id
        if session_id is None or self.conn is None:
            return

        def show(seq: int | None) -> None:
            """The chosen message in the viewer, marked, as a search hit opens (without its way back)."""
            if seq is None:
                return
            self.browser.jump_to_session(session_id)
            view = self.browser.query_one(MessageView)
            self.call_after_refresh(lambda: view.go_to_seq(seq) if view.session_id == session_id else None)

        self.push_screen(SignalsScreen(self.conn, session_id), show)

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
        self.browser.refresh_panes()
        if event.report is not None and event.report.sessions:
            self.notify(
                "The fork is in the session tree, beside and under its source.", title="Fork", timeout=4
            )

    def on_agent_ran(self, event: AgentRan) -> None:
        """An agent started from the fork picker has ended: read what it wrote (a new session, or
        the resumed one grown), as Ctrl+R does; the demo archive does not change."""
        if self.demo or self.temp_dir is not None or self.read_only:
            self.browser.refresh_panes()
        else:
            self.start_ingest()

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.screen.id == "stats":  # its letters group its table; Ctrl+Q still quits
            return action == "quit" or action not in BROWSER_ONLY
        if self.search_screen is not None and self.screen is self.search_screen:
            # on the search screen letters are typed into the query; these belong to the browser
            return action not in BROWSER_ONLY
        if action == "back":
            return bool(self.browser.trail)
        if action == "back_to_search":
            return self.browser.search_return and self.search_screen is not None
        if action == "fork":  # not during a first load: forking ingests the fork, after the load
            return (
                self.browser.focused_pane in ("messages", "sessions")
                and self.conn is not None
                and not self.load_reader
            )
        if action == "export":
            return self.browser.open_session_id is not None and self.db_path is not None
        if action == "signals":
            return self.browser.open_session_id is not None and self.conn is not None
        if action == "cancel_ingest":
            return self.ingesting
        if action == "open_demo":
            return self.browser.is_empty
        return True

    async def action_quit(self) -> None:
        """Quit; when the database could not be opened, with exit status 1 and the reason (with its
        fix) printed on the terminal the TUI gives back, so a script or a user sees it failed."""
        if self.open_error:
            self.exit(return_code=1, message=f"threadloom: {self.open_error}")
        else:
            self.exit()

    def action_cancel_ingest(self) -> None:
        if self.ingesting:
            self.cancel_event.set()
            self.notify("Cancelling after the current file…", timeout=2)

    def action_rescan(self) -> None:
        if self.ingesting:
            self.notify("Already reading agent logs", timeout=2)
        elif self.demo or self.temp_dir is not None:
            self.notify("The demo archive does not change", timeout=2)
        else:
            self._rescan_asked = True
            self.start_ingest()

    def action_open_demo(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
            self.browser.use_connection(None)
        self.demo = True
        self._start_demo()

    def action_back(self) -> None:  # type: ignore[override]  # replaces Textual's own (async) back action
        """Esc (or Backspace) in a subagent opened from its Task call: back to that call."""
        self.browser.go_back()

    def action_jump(self) -> None:
        from textual.command import CommandPalette
        from threadloom.tui.commands import RecentSessionsProvider

        self.push_screen(CommandPalette(providers=[RecentSessionsProvider], placeholder="Jump to session…"))

    def action_focus_pane(self, pane: str) -> None:
        self.browser.focus_pane(pane)

    def action_next_pane(self) -> None:
        if self.screen is self.browser:
            self.browser.cycle(1)
        else:
            self.screen.focus_next()

    def action_previous_pane(self) -> None:
        if self.screen is self.browser:
            self.browser.cycle(-1)
        else:
            self.screen.focus_previous()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.browser.show_help()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette lists what applies now: pane actions for the focused pane, ingest state."""
        yield from self.browser.pane_commands()
        yield SystemCommand("Jump to session", "By title, id or project (key p)", self.action_jump)
        if self.conn is not None:
            yield SystemCommand(
                "Stats: tokens and cost",
                "By day, week, month, project, model, agent or session (key S)",
                self.action_stats,
            )
        if self.ingesting:
            yield SystemCommand(
                "Ingest: cancel", "Stop after the current file (Esc)", self.action_cancel_ingest
            )
        elif self.temp_dir is None:
            yield SystemCommand(
                "Ingest: rescan now", "Read new and changed agent logs (Ctrl+R)", self.action_rescan
            )
        if self.browser.open_session_id is not None and self.conn is not None:
            yield SystemCommand(
                "Signals of the session",
                "Retry loops, refused calls, dead ends, … (key W)",
                self.action_signals,
            )
        yield SystemCommand("Help: keys of the focused pane", "F1 or ?", self.action_help)
        # Textual's own "Keys" panel would be a second, different help beside ours
        yield from (command for command in super().get_system_commands(screen) if command.title != "Keys")


def _palette_provider(name: str) -> type[Provider]:
    """Imported when the palette first opens: the command machinery costs start-up time."""
    from threadloom.tui import commands

    return getattr(commands, name)


def run_app(
    *, db_path: Path | None = None, sources: Iterable[Path] = (), demo: bool = False, ingest: bool = True
) -> int:
    """Entry point for `threadloom` without a subcommand; returns the process exit code."""
    app = ThreadloomApp(db_path=db_path, sources=sources, demo=demo, ingest=ingest)
    try:
        app.run()
    finally:
        if app.temp_dir is not None:
            shutil.rmtree(app.temp_dir, ignore_errors=True)
    return app.return_code or 0
