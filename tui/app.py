"""threadloom's Textual app: projects → sessions → messages, with ingest running behind.

The window shows what the database already holds at once; the ingest runs in a thread worker
with its own connection and reports progress by messages, and the panes are refreshed as
sessions land. Everything the app reads goes through `core.browse` / `core.query`.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Label, OptionList, ProgressBar, Static, Tree
from textual.worker import Worker, WorkerState
from threadloom.core import browse
from threadloom.core.text import human_tokens
from threadloom.tui.keymap import keymap_path, load_keymap
from threadloom.tui.messages import MessageView
from threadloom.tui.panes import NodeRef, ProjectList, SessionTree
from threadloom.tui.render import NO_CONTROLS, count_of, plain_title, short_model
from threadloom.tui.screens import ErrorScreen, HelpScreen, RawJsonScreen

if TYPE_CHECKING:
    from collections.abc import Sequence

    from textual.command import Provider
    from textual.filter import LineFilter
    from threadloom.core.browse import SessionNode
    from threadloom.core.ingest import IngestReport, Progress
    from threadloom.core.search import Hit
    from threadloom.tui.search import SearchScreen

NARROW = 110
WIDE = 150
PANE_IDS = ("projects", "sessions", "messages")
PANE_NAMES = {"projects": "Projects", "sessions": "Sessions", "messages": "Messages"}
BROWSER_ONLY = frozenset(
    {"quit", "jump", "search", "fork", "focus_pane", "open_demo", "back_to_search", "back", "help"}
)


class IngestProgressed(Message):
    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress


class IngestStatus(Message):
    """A phase of the ingest worker the user should see (writing the demo, database ready, or a
    first load under way, which the panes read through a read-only connection)."""

    def __init__(self, text: str, *, database_ready: bool = False, first_load: bool = False) -> None:
        super().__init__()
        self.text = text
        self.database_ready = database_ready
        self.first_load = first_load


class RecordsLoaded(Message):
    """The records are in and browsable; the search index may still be catching up."""

    def __init__(self, report: IngestReport) -> None:
        super().__init__()
        self.report = report


def _layout_classes(width: int, focused: str) -> dict[str, bool]:
    """The main screen's classes for a terminal width and the focused pane (app.tcss reads them)."""
    classes = {"-narrow": width < NARROW, "-medium": NARROW <= width < WIDE, "-wide": width >= WIDE}
    classes.update({f"-focus-{pane}": focused == pane for pane in PANE_IDS})
    return classes


class MainScreen(Screen[None]):
    """The browsing screen; only here so its copy binding has an id like every other one."""

    BINDINGS = [
        Binding("ctrl+c,super+c", "screen.copy_text", "Copy selection", show=False, id="app.copy-selection")
    ]
    AUTO_FOCUS = ""  # the app chooses: the projects pane, or nothing on the empty state


class ThreadloomApp(App[int]):
    """Browse every agent session threadloom has archived."""

    CSS_PATH = Path(__file__).with_name("app.tcss")
    FOLLOW_SECONDS = 2.0  # how often the file of the session being read is checked for growth
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
        self.now = now
        self.demo_long_turns = demo_long_turns
        self.conn: sqlite3.Connection | None = None
        self.first_load = False  # a first load is filling an empty database
        self.load_reader = False  # self.conn is a read-only connection opened during that load
        self.temp_dir: Path | None = None
        self.cancel_event = threading.Event()
        self.ingesting = False
        self.last_report: IngestReport | None = None
        self._last_pane_refresh = 0.0
        self._open_ref: NodeRef | None = None  # what the message view shows
        self._follow_seen: dict[str, tuple[int, int]] = {}  # (size, mtime) of a file last looked at
        self._preview_timer: Timer | None = None
        self._status = "Reading agent logs"
        self.search_screen: SearchScreen | None = None
        self._search_return = False  # Esc in the browser goes back to the search results
        self._rescan_asked = False  # Ctrl+R: the ingest's end is reported even when nothing was new
        # Esc from a subagent opened from a Task call: the sessions (and messages) it came from
        self._back: list[tuple[str, int]] = []

    # ------------------------------------------------------------------ layout

    @property
    def main_screen(self) -> Screen:
        """The browsing screen: the panes live there even while search or a dialog is on top."""
        return self.screen_stack[0] if self.screen_stack else self.screen

    def get_default_screen(self) -> Screen:
        # born with its layout classes: adding them after the panes are styled restyles every one
        # of them again (60 ms of the first frame)
        classes = " ".join(
            name for name, wanted in _layout_classes(self.size.width, "projects").items() if wanted
        )
        return MainScreen(id="_default", classes=classes)

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, then the one that keeps a log's control characters off the terminal."""
        return [*super().get_line_filters(), NO_CONTROLS]

    def compose(self) -> ComposeResult:
        with Horizontal(id="panes"):
            yield ProjectList(now=self.now, id="projects")
            yield SessionTree(now=self.now, id="sessions")
            yield MessageView(id="messages")
        yield Static(id="empty")
        with Horizontal(id="ingest-bar"):
            yield Label("", id="ingest-label")
            yield ProgressBar(id="ingest-progress", show_eta=True)
        yield Footer()

    def on_mount(self) -> None:
        self._load_keymap()
        self.main_screen.query_one(ProjectList).border_title = "Projects"
        self.main_screen.query_one(SessionTree).border_title = "Sessions"
        self.main_screen.query_one(MessageView).border_title = "Messages"
        self._apply_layout()
        self.set_interval(self.FOLLOW_SECONDS, self._follow_open_session)
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
            self.refresh_panes()
        if not self.main_screen.has_class("-empty"):
            self.main_screen.query_one(ProjectList).focus()

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
        if keymap:
            self.set_keymap(keymap)
        for problem in problems:
            self.notify(problem, title="Keymap not applied", severity="warning", timeout=8)

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
            self.push_screen(ErrorScreen("Cannot open the database", str(exc)))
            return
        self.load_reader = readonly
        self.refresh_panes()

    def _end_load_reader(self) -> None:
        """The first load is over: browse through an ordinary connection from now on."""
        if not self.load_reader or self.conn is None:
            return
        reader, self.conn = self.conn, None
        self.load_reader = False
        self._open_database()
        view = self.main_screen.query_one(MessageView)
        if view.conn is reader:
            view.conn = self.conn
        reader.close()

    def on_resize(self, event: events.Resize) -> None:
        self._apply_layout(event.size.width)

    def _apply_layout(self, width: int | None = None) -> None:
        for name, wanted in _layout_classes(width or self.size.width, self._focused_pane()).items():
            self.main_screen.set_class(wanted, name)

    def _focused_pane(self) -> str:
        # the main screen's own focus: a dialog on top of it (help, raw record, fork) has the app's
        widget: Widget | None = self.main_screen.focused
        while widget is not None:
            if widget.id in PANE_IDS:
                return widget.id or "projects"
            widget = widget.parent if isinstance(widget.parent, Widget) else None
        return "projects"

    def on_descendant_focus(self) -> None:
        self._apply_layout()

    # ------------------------------------------------------------------ panes

    def refresh_panes(self, *, keep_state: bool = True) -> None:
        """Re-read projects and the current project's sessions (kept expanded where they were)."""
        if self.conn is None:
            return
        projects = browse.list_projects(self.conn)
        project_list = self.main_screen.query_one(ProjectList)
        project_list.set_projects(projects)
        current = project_list.current
        tree = self.main_screen.query_one(SessionTree)
        tree.show_project(self.conn, current.path if current else None, keep_state=keep_state)
        tree.border_subtitle = tree.facts(tree.cursor_node)
        view = self.main_screen.query_one(MessageView)
        if view.session_id is None and tree.root.children:
            self.call_after_refresh(self._open_first)  # after the tree has put its cursor
        self._last_pane_refresh = time.monotonic()
        self._show_empty(not projects and not self.ingesting)
        if projects and self.main_screen.focused is None and self.screen is self.main_screen:
            project_list.focus()  # the demo, or a first load, that started with nothing to focus

    def _open_first(self) -> None:
        """Nothing open yet: show the newest session, so the first screen is never blank."""
        tree = self.main_screen.query_one(SessionTree)
        if self.main_screen.query_one(MessageView).session_id is None and tree.cursor_node is not None:
            self.open_ref(tree.cursor_node.data)

    def _show_empty(self, empty: bool) -> None:
        was_empty = self.main_screen.has_class("-empty")
        self.main_screen.set_class(empty, "-empty")
        self.refresh_bindings()
        if empty:
            self.main_screen.query_one("#empty", Static).update(self._empty_text())
            self.set_focus(None)
        elif was_empty:
            self.main_screen.query_one(ProjectList).focus()

    def _empty_text(self) -> Text:
        from threadloom.core.adapters import all_adapters

        roots = (
            self.last_report.roots
            if self.last_report
            else [str(r) for a in all_adapters() for r in a.default_roots()] + [str(s) for s in self.sources]
        )
        text = Text()
        text.append("No agent sessions yet\n\n", style="bold")
        text.append("threadloom looked for agent logs in:\n")
        for root in roots:
            state = "found" if Path(root).exists() else "not present"
            text.append(f"  {root}  ", style="#d7af5f")
            text.append(f"({state})\n", style="dim")
        text.append("\nLogs somewhere else (a backup, another machine's ~/.claude)? Add the folder:\n\n")
        text.append("  threadloom --source ~/path/to/claude/projects\n\n", style="bold #87d787")
        text.append("Folders given with --source are remembered and rescanned on every start.\n\n")
        text.append("Press ", style="")
        text.append("d", style="bold reverse")
        text.append(" to open the demo archive, or ")
        text.append("q", style="bold reverse")
        text.append(" to quit.")
        return text

    @on(OptionList.OptionHighlighted, "#projects")
    def _project_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if self.conn is None or event.option.id is None:
            return
        if self.main_screen.query_one(SessionTree).show_project(self.conn, event.option.id, keep_state=True):
            self.call_after_refresh(self._project_shown)

    def _project_shown(self) -> None:
        """Another project's sessions are listed: the tree's facts line and the message pane follow
        (after the preview's pause), so the pane never shows a conversation of a project that is
        no longer listed beside it."""
        tree = self.main_screen.query_one(SessionTree)
        tree.border_subtitle = tree.facts(tree.cursor_node)
        open_project = (
            self._open_ref.session.project_path if self._open_ref and self._open_ref.session else None
        )
        if self._open_ref is not None and (open_project or None) == (tree.project or None):
            return
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(0.12, self._preview_project)

    def _preview_project(self) -> None:
        tree = self.main_screen.query_one(SessionTree)
        node = tree.cursor_node
        if node is not None and node.data is not None and node.data.session is not None:
            self.open_ref(node.data)
        else:
            self._open_ref = None
            self.main_screen.query_one(MessageView).clear("No sessions in this project.")

    @on(OptionList.OptionSelected, "#projects")
    def _project_selected(self) -> None:
        self.main_screen.query_one(SessionTree).focus()

    @on(Tree.NodeHighlighted, "#sessions")
    def _session_highlighted(self, event: Tree.NodeHighlighted[NodeRef]) -> None:
        # open what the cursor rests on after a short pause, so holding an arrow key stays cheap
        if self._preview_timer is not None:
            self._preview_timer.stop()
        ref = event.node.data
        tree = self.main_screen.query_one(SessionTree)
        tree.border_subtitle = tree.facts(event.node)
        if tree.has_focus:  # the user is moving through the tree, not a jump revealing a node
            self._preview_timer = self.set_timer(0.12, lambda: self.open_ref(ref))

    @on(Tree.NodeSelected, "#sessions")
    def _session_selected(self, event: Tree.NodeSelected[NodeRef]) -> None:
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self.open_ref(event.node.data)
        if event.node.data is not None and event.node.data.kind != "loading":
            self.main_screen.query_one(MessageView).focus()

    @property
    def _open_key(self) -> tuple | None:
        """What is shown, as (kind, session id, branch number, segment number)."""
        ref = self._open_ref
        if ref is None or ref.session is None:
            return None
        return (
            ref.kind,
            ref.session.id,
            ref.branch.number if ref.branch else None,
            ref.segment.number if ref.segment else None,
        )

    def open_ref(self, ref: NodeRef | None, *, keep_trail: bool = False) -> None:
        """Show a session, a branch or a compaction segment in the message view. `keep_trail`:
        opened by following a subagent or going back, so Esc's way back stays."""
        if ref is None or ref.session is None or self.conn is None or ref.kind == "loading":
            return
        session = ref.session
        previous, self._open_ref = self._open_key, ref
        if self._open_key == previous:
            return
        if not keep_trail and self._back:  # opened some other way: no way back from it
            self._back.clear()
            self.refresh_bindings()
        view = self.main_screen.query_one(MessageView)
        title = (
            session.task_description if session.is_subagent and session.task_description else session.title
        )
        count = session.message_count
        if ref.kind == "branch" and ref.branch is not None:
            seqs = browse.branch_seqs(self.conn, session.id, ref.branch.turn_ids)
            view.show(self.conn, session.id, seqs)
            count = len(seqs)
            view.border_subtitle = f"branch {ref.branch.number} · {count_of(count, 'message')}"
        elif ref.kind == "segment" and ref.segment is not None:
            view.show(self.conn, session.id, range(session.message_count), at=ref.segment.start_seq)
            view.border_subtitle = f"segment {ref.segment.number} · {count_of(count, 'message')}"
        else:
            rewinds = browse.rewind_seqs(self.conn, session.id) if session.branch_count else set()
            view.show(self.conn, session.id, range(session.message_count), rewinds=rewinds)
            view.border_subtitle = _subtitle(session, count, len(rewinds))
            view.border_title = plain_title(title, 70)
            return
        view.border_title = plain_title(title, 70)
        view.border_subtitle += _tokens_and_model(session)

    def jump_to_session(self, session_id: str, *, keep_trail: bool = False) -> None:
        """Reveal a session or subagent in the tree (switching project if needed) and read it."""
        if self.conn is None:
            return
        node = browse.get_node(self.conn, session_id, include_warmup=True)
        if node is None:
            self.notify(f"No session {session_id}", severity="warning")
            return
        projects = self.main_screen.query_one(ProjectList)
        tree = self.main_screen.query_one(SessionTree)
        path = node.project_path or ""
        if projects.current is None or projects.current.path != path:
            paths = [p.path for p in projects.projects]
            if path in paths:
                projects.highlighted = paths.index(path)
            tree.show_project(self.conn, path)
        if self._preview_timer is not None:
            self._preview_timer.stop()
        chain = browse.session_path(self.conn, session_id)
        if node.is_warmup and not tree.include_warmup:
            tree.include_warmup = True
            tree.show_project(self.conn, path)
        tree_node = tree.reveal(chain)
        if tree_node is not None:
            self.call_after_refresh(tree.move_cursor, tree_node)
        ref = tree_node.data if tree_node is not None else NodeRef("session", node)
        self._open_ref = None
        self.open_ref(ref, keep_trail=keep_trail)
        self.main_screen.query_one(MessageView).focus()

    @on(MessageView.SubagentRequested)
    def _open_subagent(self, event: MessageView.SubagentRequested) -> None:
        view = self.main_screen.query_one(MessageView)
        row = view.current_row()
        if view.session_id is not None:
            self._back.append((view.session_id, row.seq if row is not None else 0))
        self._follow_trail(event.session_id)

    def action_back(self) -> None:
        """Esc (or Backspace) in a subagent opened from its Task call: back to that call."""
        if not self._back:
            return
        session_id, seq = self._back.pop()
        self._follow_trail(session_id)
        view = self.main_screen.query_one(MessageView)
        self.call_after_refresh(
            lambda: view.go_to_seq(seq, mark=False) if view.session_id == session_id else None
        )

    def _follow_trail(self, session_id: str) -> None:
        self.jump_to_session(session_id, keep_trail=True)
        self.refresh_bindings()

    @on(MessageView.RawRequested)
    def _show_raw(self, event: MessageView.RawRequested) -> None:
        if self.conn is None:
            return
        raw = browse.raw_entry(self.conn, event.entry_id)
        if raw is None:
            self.notify("This record is no longer in the database", severity="warning")
            return
        self.push_screen(RawJsonScreen(raw, f"Raw record · entry {event.entry_id}"))

    # ------------------------------------------------------------------ ingest

    def start_ingest(self, *, demo_dir: Path | None = None, read_logs: bool = True) -> None:
        if self.ingesting:
            return
        if self.read_only and demo_dir is None:
            self.notify(self.read_only, title="Read-only archive", severity="warning", timeout=8)
            return
        self.ingesting = True
        self.refresh_bindings()
        self.cancel_event = threading.Event()
        self.main_screen.add_class("-ingesting")
        self._show_empty(False)
        self._status = "Writing the demo archive" if demo_dir else "Reading agent logs"
        self.main_screen.query_one("#ingest-label", Label).update(f"{self._status}…")
        self.main_screen.query_one(ProgressBar).update(total=None, progress=0)
        assert self.db_path is not None
        sources = list(self.sources) if read_logs else []
        self._ingest_worker(self.db_path, sources, demo_dir, read_logs)

    @work(thread=True, exclusive=True, group="ingest", exit_on_error=False, description="ingest")
    def _ingest_worker(
        self, db_path: Path, sources: list[Path], demo_dir: Path | None, read_logs: bool = True
    ) -> IngestReport:
        """Runs in a thread with its own connection; only messages go back to the interface.
        `read_logs=False`: no source is read, only a pending rebuild done (and the index built)."""
        from threadloom.core.db import connect, upgrade_due
        from threadloom.core.ingest import IngestReport
        from threadloom.core.writer_lock import WriterBusy, writer_lock

        include_defaults = read_logs
        if demo_dir is not None:
            from threadloom.core.demo import LONG_SESSION_TURNS, write_demo_archive

            sources = [write_demo_archive(demo_dir, long_turns=self.demo_long_turns or LONG_SESSION_TURNS)]
            include_defaults = False

        def waiting(text: str) -> None:
            # another threadloom is ingesting: browse what is stored meanwhile (read-only: it may be
            # a first load, written without a journal), then catch up
            self.post_message(
                IngestStatus(
                    f"{text[0].upper()}{text[1:]} · browse meanwhile · Esc stops waiting",
                    database_ready=db_path.exists(),
                    first_load=True,
                )
            )

        try:
            with writer_lock(db_path, on_wait=waiting, cancel=self.cancel_event):
                if db_path.exists() and upgrade_due(db_path):
                    self.post_message(
                        IngestStatus(
                            "Upgrading the archive for this version of threadloom: sessions, turns and tool calls "
                            "are rebuilt from the stored records (once)"
                        )
                    )
                return self._ingest(connect(db_path), sources, include_defaults)
        except WriterBusy:
            return IngestReport(cancelled=True)

    def _ingest(self, conn: sqlite3.Connection, sources: list[Path], include_defaults: bool) -> IngestReport:
        """The ingest worker's work, once it is the database's one writer."""
        from threadloom.core.ingest import IngestReport, rebuild_pending, run_ingest

        try:
            last = [0.0]

            def progress(p: Progress) -> None:
                now = time.monotonic()
                if now - last[0] >= 0.05 or p.files_done in (1, p.files_total):  # 1: the panes may read
                    last[0] = now
                    self.post_message(IngestProgressed(p))

            # an older archive's sessions are rebuilt before the panes read them
            if not rebuild_pending(conn, progress, self.cancel_event):
                return IngestReport(cancelled=True)
            # A first load into an empty ledger runs fastest as the database's only writer (no
            # journal): the panes read it through a read-only connection once the load is under way.
            first_load = conn.execute("SELECT NOT EXISTS (SELECT 1 FROM entries)").fetchone()[0] == 1
            self.post_message(
                IngestStatus("Reading agent logs", database_ready=not first_load, first_load=first_load)
            )

            report = run_ingest(
                conn,
                sources,
                include_defaults=include_defaults,
                progress=progress,
                cancel=self.cancel_event,
                build_index=False,
            )
            if report.cancelled:
                return report
            self.post_message(RecordsLoaded(report))
            # the archive is browsable now; the search index (a quarter of a first load) follows
            from threadloom.core import search_index
            from threadloom.core.ingest import INDEXING
            from threadloom.core.ingest import Progress as IngestProgress

            if search_index.pending(conn) is None:
                return report
            self.post_message(IngestStatus("Indexing for search"))
            index_started = time.perf_counter()

            def index_progress(p: search_index.IndexProgress) -> None:
                self.post_message(
                    IngestProgressed(
                        IngestProgress(p.done, p.total, p.done, p.total, INDEXING, p.elapsed, p.done, p.total)
                    )
                )

            report.index_complete = search_index.build(conn, index_progress, self.cancel_event)
            report.cancelled = not report.index_complete
            report.index_seconds = round(time.perf_counter() - index_started, 3)
            return report
        finally:
            conn.close()

    def on_records_loaded(self, event: RecordsLoaded) -> None:
        report = event.report
        self.last_report = report
        self.first_load = False
        self._end_load_reader()
        if self.conn is None:
            self._open_database()
        self.refresh_panes()
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

    def on_ingest_status(self, event: IngestStatus) -> None:
        self._status = event.text
        self.main_screen.query_one("#ingest-label", Label).update(f"{event.text}…")
        self.first_load = self.first_load or event.first_load
        if event.database_ready and self.conn is None:
            self._open_database(readonly=self.first_load)

    def on_ingest_progressed(self, event: IngestProgressed) -> None:
        from threadloom.core.ingest import INDEXING

        p = event.progress
        bar = self.main_screen.query_one(ProgressBar)
        if p.path == INDEXING:
            bar.update(total=max(1, p.index_total), progress=p.index_done)
            self.main_screen.query_one("#ingest-label", Label).update(
                f"Indexing for search: {p.index_done / max(1, p.index_total):.0%} · browse meanwhile · Esc pauses",
                layout=False,  # its size is fixed: no layout of the whole screen 20 times a second
            )
            return
        bar.update(total=max(1, p.bytes_total), progress=p.bytes_done)
        self.main_screen.query_one("#ingest-label", Label).update(
            f"{self._status}: {p.files_done:,}/{p.files_total:,} files · "
            f"{p.bytes_done / 1e6:,.1f}/{p.bytes_total / 1e6:,.1f} MB · Esc cancels",
            layout=False,
        )
        if self.conn is None and self.first_load and p.files_done > 0:
            # the load is under way (its files are being written in ~1 s transactions): browse
            # what is in meanwhile, read-only, rather than wait a minute for a large archive
            self._open_database(readonly=True)
        # during a first load a refresh takes the GIL and the database from the load: once the
        # panes show something, every 3 s is enough
        shown = bool(self.main_screen.query_one(ProjectList).projects)
        interval = (3.0 if shown else 0.25) if self.load_reader else 0.7
        if time.monotonic() - self._last_pane_refresh > interval:
            self.refresh_panes()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group == "fork-ingest":
            self._fork_ingested(event)
            return
        if worker.group == "follow":
            self._followed(event)
            return
        if worker.group != "ingest" or event.state not in (
            WorkerState.SUCCESS,
            WorkerState.ERROR,
            WorkerState.CANCELLED,
        ):
            return
        self.ingesting = False
        self.first_load = False
        if event.state == WorkerState.ERROR and self.load_reader and self.conn is not None:
            # a first load that failed is started afresh by the next launch: show none of it
            self.main_screen.query_one(MessageView).clear()
            self.main_screen.query_one(ProjectList).set_projects([])
            self.main_screen.query_one(SessionTree).show_project(self.conn, None)
            self.main_screen.query_one(SessionTree).conn = None
            self.conn.close()
            self.conn, self.load_reader = None, False
        self._end_load_reader()  # a first load cancelled half-way: what is in stays browsable
        self.refresh_bindings()
        self.main_screen.remove_class("-ingesting")
        if event.state == WorkerState.ERROR:
            error = worker.error
            self.push_screen(
                ErrorScreen(
                    "Reading agent logs failed",
                    f"{type(error).__name__}: {error}",
                    "What was read before the error is kept. Ctrl+R tries again; "
                    "`threadloom ingest` shows the same error on the command line.",
                )
            )
            self.refresh_panes()
            return
        from threadloom.core.ingest import IngestReport

        report = worker.result
        if not isinstance(report, IngestReport):
            self.refresh_panes()
            return
        self.last_report = report
        if self.conn is None:
            self._open_database()
        self.refresh_panes()
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

    def _start_demo(self) -> None:
        from threadloom.core.demo import claim_demo_dir

        self.temp_dir = claim_demo_dir()
        self.db_path = self.temp_dir / "demo.db"
        self.sources = []
        self.title = "threadloom · demo"
        self.start_ingest(demo_dir=self.temp_dir / "archive")

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.search_screen is not None and self.screen is self.search_screen:
            # on the search screen letters are typed into the query; these belong to the browser
            return action not in BROWSER_ONLY
        if action == "back":
            return bool(self._back)
        if action == "back_to_search":
            return self._search_return and self.search_screen is not None
        if action == "fork":  # not during a first load: forking ingests the fork, after the load
            return (
                self._focused_pane() in ("messages", "sessions")
                and self.conn is not None
                and not self.load_reader
            )
        if action == "cancel_ingest":
            return self.ingesting
        if action == "open_demo":
            return self.main_screen.has_class("-empty")
        return True

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
        self.demo = True
        self._start_demo()

    # ------------------------------------------------------------------ search

    def action_search(self) -> None:
        """Open search (the same screen each time: the last query stays, selected)."""
        from threadloom.tui.search import SearchScreen

        if self.db_path is None or self.conn is None:
            self.notify("No database yet", timeout=2)
            return
        if isinstance(self.screen, SearchScreen):
            return
        self._search_return = False
        if self.search_screen is None or self.search_screen.db_path != self.db_path:
            if self.search_screen is not None:
                self.uninstall_screen(self.search_screen)
            self.search_screen = SearchScreen(self.db_path, now=self.now)
            self.install_screen(self.search_screen, "search")
            self.push_screen(self.search_screen)
        else:
            self.push_screen(self.search_screen)
            self.search_screen.reopen()
        self.refresh_bindings()

    def open_search_hit(self, hit: Hit) -> None:
        """Enter on a hit: the session in the message viewer, at the hit, marked; Esc comes back."""
        if self.screen is not self.main_screen:
            self.pop_screen()
        self._search_return = True
        self.jump_to_session(hit.session_id)
        if hit.seq is not None:
            view = self.main_screen.query_one(MessageView)
            seq = hit.seq
            self.call_after_refresh(
                lambda: view.go_to_seq(seq) if view.session_id == hit.session_id else None
            )
        self.refresh_bindings()

    def action_back_to_search(self) -> None:
        if self.search_screen is None or self.screen is not self.main_screen:
            return
        self._search_return = False
        self.push_screen(self.search_screen)
        self.refresh_bindings()

    def close_search(self) -> None:
        from threadloom.tui.search import SearchScreen

        self._search_return = False
        if isinstance(self.screen, SearchScreen):
            self.pop_screen()
        self.refresh_bindings()

    # ------------------------------------------------------------------ fork

    def action_fork(self) -> None:
        """`f`: the fork picker for the message under the cursor, or for a session's latest turn."""
        pane = self._focused_pane()
        if pane == "messages":
            view = self.main_screen.query_one(MessageView)
            row = view.current_row()
            if view.session_id is not None:
                self.open_fork_picker(
                    view.session_id, row.entry_id if row else None, turn_id=row.turn_id if row else None
                )
                return
        elif pane == "sessions":
            node = self.main_screen.query_one(SessionTree).cursor_node
            ref = node.data if node is not None else None
            if ref is not None and ref.session is not None and ref.kind != "loading":
                leaf = ref.branch.leaf_turn_id if ref.branch is not None else None
                self.open_fork_picker(ref.session.id, None, turn_id=leaf)
                return
        self.notify("Open a session, then press f on a message to fork from it", timeout=3)

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

    # ------------------------------------------------------------------ following a live session

    def _follow_open_session(self) -> None:
        """Every FOLLOW_SECONDS: when the file of the session being read has grown (its agent is
        still at work), read what was added, and show it."""
        key = self._open_key
        if (
            self.conn is None
            or self.db_path is None
            or self.ingesting
            or self.load_reader
            or key is None
            or key[0] != "session"
            or any(w.group == "follow" and w.is_running for w in self.workers)
        ):
            return
        grown = browse.grown_source(self.conn, key[1])
        if grown is None:
            return
        path, seen = grown
        if self._follow_seen.get(path) == seen:
            return
        self._follow_seen[path] = seen  # once per change, even when nothing new comes of it
        self._follow_worker(self.db_path, Path(path), key[1])

    @work(thread=True, group="follow", exit_on_error=False, description="read a growing session")
    def _follow_worker(self, db_path: Path, path: Path, session_id: str) -> tuple[str, IngestReport]:
        from threadloom.core.db import connect
        from threadloom.core.ingest import run_ingest

        conn = connect(db_path)
        try:
            return session_id, run_ingest(conn, [path], include_defaults=False, remember=False)
        finally:
            conn.close()

    def _followed(self, event: Worker.StateChanged) -> None:
        if event.state != WorkerState.SUCCESS or self.conn is None:
            return
        session_id, report = event.worker.result
        if not report.records_added:
            return
        self.refresh_panes()
        key = self._open_key
        view = self.main_screen.query_one(MessageView)
        if key is None or key[0] != "session" or key[1] != session_id or view.session_id != session_id:
            return
        node = browse.get_node(self.conn, session_id, include_warmup=True)
        if node is None:
            return
        if node.branch_count:  # the agent may have been rewound meanwhile: mark the new branch
            view.rewinds = browse.rewind_seqs(self.conn, session_id)
        if view.extend(range(node.message_count)):
            view.border_subtitle = _subtitle(node, node.message_count, len(view.rewinds))

    def ingest_fork(self, path: Path) -> None:
        """Read a fork threadloom just wrote, so it shows in the tree (under its source, too)."""
        if self.db_path is not None:
            self._fork_ingest_worker(self.db_path, path)

    @work(thread=True, group="fork-ingest", exit_on_error=False, description="ingest a fork")
    def _fork_ingest_worker(self, db_path: Path, path: Path) -> IngestReport:
        from threadloom.core.db import connect
        from threadloom.core.ingest import run_ingest

        conn = connect(db_path)
        try:
            return run_ingest(conn, [path], include_defaults=False, remember=False)
        finally:
            conn.close()

    def after_agent_ran(self) -> None:
        """An agent started from the fork picker has ended: read what it wrote (a new session, or
        the resumed one grown), as Ctrl+R does; the demo archive does not change."""
        if self.demo or self.temp_dir is not None or self.read_only:
            self.refresh_panes()
        else:
            self.start_ingest()

    def _fork_ingested(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.notify(
                f"The fork was written but could not be read back: {event.worker.error}",
                title="Fork",
                severity="error",
                timeout=10,
            )
            return
        if event.state == WorkerState.SUCCESS:
            self.refresh_panes()
            report = event.worker.result
            if getattr(report, "sessions", 0):
                self.notify(
                    "The fork is in the session tree, beside and under its source.", title="Fork", timeout=4
                )

    def action_jump(self) -> None:
        from textual.command import CommandPalette
        from threadloom.tui.commands import RecentSessionsProvider

        self.push_screen(CommandPalette(providers=[RecentSessionsProvider], placeholder="Jump to session…"))

    def action_focus_pane(self, pane: str) -> None:
        widget = self.main_screen.query_one(f"#{pane}")
        if widget.display:
            widget.focus()
        else:
            widget.focus()
            self._apply_layout()

    def _cycle(self, step: int) -> None:
        current = PANE_IDS.index(self._focused_pane())
        self.main_screen.query_one(f"#{PANE_IDS[(current + step) % len(PANE_IDS)]}").focus()

    def action_next_pane(self) -> None:
        if isinstance(self.screen, Screen) and self.screen is self.screen_stack[0]:
            self._cycle(1)
        else:
            self.screen.focus_next()

    def action_previous_pane(self) -> None:
        if self.screen is self.screen_stack[0]:
            self._cycle(-1)
        else:
            self.screen.focus_previous()

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        pane = self._focused_pane()
        focused = self.main_screen.query_one(f"#{pane}")
        pane_keys: dict[tuple[str, str], list[str]] = {}
        global_keys: dict[tuple[str, str], list[str]] = {}
        meta: dict[tuple[str, str], tuple[str, str]] = {}
        for key, active in self.screen.active_bindings.items():
            binding = active.binding
            if active.node is focused:
                target = pane_keys
            elif active.node is self or active.node is self.screen:
                target = global_keys
            else:
                continue
            name = binding.id or binding.action
            target.setdefault((name, binding.action), []).append(self.get_key_display(binding.with_key(key)))
            meta[(name, binding.action)] = (binding.tooltip or binding.description, binding.id or "")

        def rows(found: dict[tuple[str, str], list[str]]) -> list[tuple[str, str, str]]:
            return [(", ".join(keys), meta[k][0], meta[k][1]) for k, keys in found.items()]

        self.push_screen(HelpScreen(PANE_NAMES[pane], rows(pane_keys), rows(global_keys)))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette lists what applies now: pane actions for the focused pane, ingest state."""
        pane = self._focused_pane()
        view = self.main_screen.query_one(MessageView)
        if pane == "messages" and view.session_id:
            yield SystemCommand(
                "Messages: expand or collapse all tool calls", "Key e", view.action_toggle_all
            )
            yield SystemCommand("Messages: show the raw JSON of this message", "Key r", view.action_raw)
            yield SystemCommand("Messages: copy the text under the cursor", "Key y", view.action_copy)
            yield SystemCommand("Messages: go to the last message", "Key G", view.action_last)
        if pane == "sessions":
            tree = self.main_screen.query_one(SessionTree)
            verb = "Hide" if tree.include_warmup else "Show"
            yield SystemCommand(f"Sessions: {verb} Warmup agents", "Key w", tree.action_toggle_warmup)
        yield SystemCommand("Jump to session", "By title, id or project (key p)", self.action_jump)
        if self.ingesting:
            yield SystemCommand(
                "Ingest: cancel", "Stop after the current file (Esc)", self.action_cancel_ingest
            )
        elif self.temp_dir is None:
            yield SystemCommand(
                "Ingest: rescan now", "Read new and changed agent logs (Ctrl+R)", self.action_rescan
            )
        yield SystemCommand("Help: keys of the focused pane", "F1 or ?", self.action_help)
        # Textual's own "Keys" panel would be a second, different help beside ours
        yield from (command for command in super().get_system_commands(screen) if command.title != "Keys")

    def on_unmount(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.temp_dir is not None and not self.ingesting:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def _subtitle(session: SessionNode, count: int, rewinds: int) -> str:
    """The message view's subtitle for a whole session: size, branches, tokens, model."""
    text = count_of(count, "message")
    if rewinds:
        text += f" · {rewinds + 1} branches"
    return text + _tokens_and_model(session)


def _tokens_and_model(session: SessionNode) -> str:
    """' · 215k tokens · opus-4-1' (no model: no separator left hanging)."""
    model = short_model(session.model)
    return f" · {human_tokens(session.tokens)} tokens" + (f" · {model}" if model else "")


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
        result = app.run()
    finally:
        if app.temp_dir is not None:
            shutil.rmtree(app.temp_dir, ignore_errors=True)
    return result if isinstance(result, int) else 0
