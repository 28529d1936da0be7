"""threadloom's Textual app: the hub between the browser, search and the fork picker.

The app owns what outlives a screen. Its archive side (`threadloom.tui.archive`) keeps the
database, the ingest and the background work (`threadloom.tui.workers`), whose ends come back
through one `on_worker_state_changed` as past-tense messages; this module adds the key bindings,
the palette and the screens. Screens never call into the app: they post the messages of
`threadloom.tui.events`, which are all handled on it, and the app tells the browsing screen
(`threadloom.tui.browser`) what to show.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from ..core.base.text import use_clock
from ..core.read import browse
from . import workers
from .archive import ArchiveApp
from .browser import BrowserScreen, layout_classes
from .events import (
    OpenForkPicker,
    OpenProject,
    OpenSession,
    SearchClosed,
    SearchHitChosen,
)
from .keymap import keymap_path, load_keymap, unknown_ids
from .render import safe_lines
from .screens import HelpScreen

if TYPE_CHECKING:
    from collections.abc import Sequence

    from textual.command import Provider
    from textual.filter import LineFilter

    from .messages import MessageView
    from .search import SearchScreen

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
        "tag",
        "note",
        "bookmark",
        "bookmarks",
        "memory",
        "sync",
    }
)
MEMORY_ACTIONS = frozenset({"tag", "note", "bookmark", "bookmarks", "memory"})


class ThreadloomApp(ArchiveApp):
    """Browse every agent session threadloom has archived."""

    CSS_PATH = Path(__file__).with_name("app.tcss")
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
            "U",
            "sync",
            "Sync",
            show=False,
            id="app.sync",
            tooltip="Push and pull with the sync hub (the first time: choose what is shared)",
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
        Binding(
            "t",
            "tag",
            "Tag",
            show=False,
            id="app.tag",
            tooltip="Tag the session (in the viewer: the message) under the cursor; tag:NAME finds it",
        ),
        Binding(
            "n",
            "note",
            "Note",
            show=False,
            id="app.note",
            tooltip="Write a note on the session under the cursor; note:WORD finds it",
        ),
        Binding(
            "b",
            "bookmark",
            "Bookmark",
            show=False,
            id="app.bookmark",
            tooltip="Bookmark the session (in the viewer: the message) under the cursor, or take it off",
        ),
        Binding("B", "bookmarks", "Bookmarks", show=False, id="app.bookmarks", tooltip="The bookmarks"),
        Binding(
            "M",
            "memory",
            "Memory",
            show=False,
            id="app.memory",
            tooltip="Memory: decisions, facts, guidelines by scope with their history; tags; notes",
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
        open_session: str | None = None,
    ) -> None:
        super().__init__(
            db_path=db_path, sources=sources, demo=demo, ingest=ingest, demo_long_turns=demo_long_turns
        )
        self.open_session = open_session  # `threadloom open SESSION`: shown once the archive is open
        self.now = now
        use_clock(now)  # the dates drawn say their year by this clock's
        self.search_screen: SearchScreen | None = None

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
        """Textual's filters, then the one that keeps a log's control characters off the terminal,
        as one filter (`SafeLines`)."""
        return [safe_lines(super().get_line_filters())]

    async def on_mount(self) -> None:
        self._load_keymap()
        # the browser composes its panes in its own task: they are filled here, before the first frame
        await self.browser.composed.wait()
        self._load_settings()
        self.browser.apply_layout(self.size.width)
        self.keep_watch()
        if self.demo:
            self._start_demo()
            return
        if self.db_path is None:
            from ..core.store.db import default_db_path

            self.db_path = default_db_path()
        upgrade = False
        if self.db_path.exists():
            self._check_writable()
            upgrade = self._upgrade_pending()
            if not upgrade:
                self._open_database()
        # else on_ready starts the worker; an open that failed already said why (once)
        if not self.ingest_on_start and self.conn is None and not upgrade and not self.open_error:
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
        if not self.ingesting and not self.demo:
            self.check_cleanup()  # (an ingest's worker does it before it reads)

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
        from .settings import load_settings, settings_path

        settings, problems = load_settings(settings_path())
        self.browser.use_settings(settings)
        for problem in problems:
            self.notify(problem, title="Settings not read", severity="warning", timeout=8)

    def on_resize(self, event: events.Resize) -> None:
        self.browser.apply_layout(event.size.width)

    # ------------------------------------------------------------------ search

    def key_shown(self, binding_id: str) -> str:
        """The key that runs the binding `binding_id` now (after the user's keymap), as shown."""
        for active in self.active_bindings.values():
            if active.binding.id == binding_id:
                return self.get_key_display(active.binding)
        return ""

    def action_search(self) -> None:
        """Open search (the same screen each time: the last query stays, selected)."""
        from .search import SearchScreen

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

    def on_message_view_similar_requested(self, event: MessageView.SimilarRequested) -> None:
        """`L` in the viewer: search opens on the turns of other sessions most like this one."""
        self.action_search()
        screen = self.search_screen
        if screen is not None and self.screen is screen:
            # a screen pushed just now is composed on the next refresh
            self.call_after_refresh(screen.show_similar, event.entry_id, event.label)

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
        from .search import SearchScreen

        self.browser.search_return = False
        if isinstance(self.screen, SearchScreen):
            self.pop_screen()
        self.refresh_bindings()

    def on_open_session(self, event: OpenSession) -> None:
        # opened from elsewhere (the stats, the palette): Esc no longer leads back to an old search
        self.browser.search_return = False
        self.browser.jump_to_session(event.session_id)

    # ------------------------------------------------------------------ stats

    def action_stats(self) -> None:
        """`S`: the stats screen (totals by period, project, model, agent or session)."""
        from .stats import StatsScreen

        if self.conn is None:
            self.notify("No database yet", timeout=2)
            return
        if self.screen is self.browser:
            self.push_screen(StatsScreen(self.conn))

    def on_open_project(self, event: OpenProject) -> None:
        self.browser.search_return = False
        self.browser.show_project(event.path)

    # ------------------------------------------------------------------ fork

    def action_fork(self) -> None:
        """`f`: the fork picker for the message under the cursor, or for a session's latest turn."""
        if self.browser.version_shown is not None and self.browser.focused_pane == "messages":
            self.notify(
                "This is an earlier version, read from the records the archive kept: press v until the "
                "session is as it is now to fork from it",
                timeout=4,
            )
            return
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
        from .fork import ForkPicker

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

    def action_export(self) -> None:
        """`E`: the open session as one self-contained HTML page, in the folder threadloom runs in."""
        session_id, db_path = self.browser.open_session_id, self.db_path
        if session_id is None or db_path is None:
            return
        if self.browser.version_shown is not None:
            self.notify("An earlier version is shown: the export writes the session as it is now", timeout=3)
        workers.start(self, workers.EXPORT, partial(workers.export, db_path, session_id, Path.cwd()))

    def action_signals(self) -> None:
        """`W` (what went wrong): the open session's signals; Enter on a piece of evidence shows that message."""
        from .messages import MessageView
        from .signals import SignalsScreen

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

    # ------------------------------------------------------------------ memory

    def _memory_target(self) -> object:
        """What t, n and b act on: the message under the viewer's cursor (its pane focused), else
        the session under the tree's cursor, else the open session."""
        from .memory import MemoryTarget
        from .messages import MessageView

        browser = self.browser
        if browser.focused_pane == "messages":
            view = browser.query_one(MessageView)
            row = view.current_row()
            if view.session_id is not None:
                return MemoryTarget(
                    view.session_id, row.seq if row else None, self._title_of(view.session_id)
                )
        target = browser.fork_target()
        session_id = target[0] if target is not None else browser.open_session_id
        return MemoryTarget(session_id, None, self._title_of(session_id)) if session_id else None

    def _title_of(self, session_id: str) -> str:
        from ..core.read.query import display_title, get_session

        found = get_session(self.conn, session_id) if self.conn is not None else None
        return display_title(found) if found is not None else ""

    def _ask_mark(self, kind: str, *, whole_session: bool = False) -> None:
        from ..core.insight import memory
        from ..core.store.memory_tables import MemoryRefused
        from .memory import MarkScreen, MemoryTarget

        target = self._memory_target()
        if not isinstance(target, MemoryTarget) or self.conn is None:
            self.notify("Put the cursor on a session (or a message) first", timeout=3)
            return
        if whole_session:
            target = MemoryTarget(target.session_id, None, target.title)
        try:
            present = [
                m.value
                for m in memory.marks(self.conn, kind=kind, target=memory.parse_target(self.conn, target.ref))
            ]
        except (LookupError, MemoryRefused):
            present = []

        def keep(text: str | None) -> None:
            if not text:
                return
            values = [v for v in (p.strip() for p in text.split(",")) if v] if kind == "tag" else [text]
            self.write_mark(kind, target.ref, values)

        self.push_screen(MarkScreen(kind, target, present), keep)

    def action_tag(self) -> None:
        """`t`: tag the session (or, in the viewer, the message) under the cursor."""
        self._ask_mark("tag")

    def action_note(self) -> None:
        """`n`: a note on the session under the cursor (the viewer's own n steps through a find)."""
        self._ask_mark("note", whole_session=True)

    def action_bookmark(self) -> None:
        """`b`: bookmark the session (or, in the viewer, the message) under the cursor, or take it off."""
        from .memory import MemoryTarget

        target = self._memory_target()
        if not isinstance(target, MemoryTarget):
            self.notify("Put the cursor on a session (or a message) first", timeout=3)
            return
        self.write_mark("bookmark", target.ref, [])

    def action_bookmarks(self) -> None:
        """`B`: the bookmarks; Enter opens one at its message."""
        from .memory import BookmarksScreen
        from .messages import MessageView

        if self.conn is None:
            return

        def open_it(chosen: tuple[str, int | None] | None) -> None:
            if chosen is None:
                return
            session_id, seq = chosen
            self.browser.jump_to_session(session_id)
            if seq is not None:
                view = self.browser.query_one(MessageView)
                self.call_after_refresh(
                    lambda: view.go_to_seq(seq) if view.session_id == session_id else None
                )

        self.push_screen(BookmarksScreen(self.conn), open_it)

    def action_sync(self) -> None:
        """`U`: sync with the hub; the first time, ask what leaves this machine (tui.sync)."""
        from ..core.ingest import sync
        from .sync import SyncChoice, SyncScreen

        if self.conn is None:
            return
        url, sharing = sync.configured(self.conn)
        if url is not None and sharing is not None:
            self.start_sync(None, [])
            return

        def chosen(choice: SyncChoice | None) -> None:
            if choice is not None:
                self.start_sync(choice.url, choice.rules)

        self.push_screen(SyncScreen(url, sync.project_choices(self.conn)), chosen)

    def action_memory(self) -> None:
        """`M`: the memory screen (entries by scope with their history, tags, notes)."""
        from .memory import MemoryScreen

        if self.conn is not None:
            self.push_screen(MemoryScreen(self.conn))

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
        if action in MEMORY_ACTIONS:
            return self.screen is self.browser and self.conn is not None
        if action == "sync":  # not the demo's archive, which lives in a temporary folder
            return (
                self.screen is self.browser
                and self.conn is not None
                and self.temp_dir is None
                and not self.read_only
            )
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

    def action_back(self) -> None:  # type: ignore[override]  # replaces Textual's own (async) back action
        """Esc (or Backspace) in a subagent opened from its Task call: back to that call."""
        self.browser.go_back()

    def action_jump(self) -> None:
        from textual.command import CommandPalette

        from .commands import RecentSessionsProvider

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
        if self.conn is not None and not self.read_only and self.temp_dir is None:
            yield SystemCommand(
                "Sync with the hub",
                "Push and pull (the first time: choose the projects shared) (key U)",
                self.action_sync,
            )
        yield SystemCommand("Help: keys of the focused pane", "F1 or ?", self.action_help)
        # Textual's own "Keys" panel would be a second, different help beside ours
        yield from (command for command in super().get_system_commands(screen) if command.title != "Keys")


def _palette_provider(name: str) -> type[Provider]:
    """Imported when the palette first opens: the command machinery costs start-up time."""
    from . import commands

    return getattr(commands, name)


def run_app(
    *,
    db_path: Path | None = None,
    sources: Iterable[Path] = (),
    demo: bool = False,
    ingest: bool = True,
    open_session: str | None = None,
) -> int:
    """Entry point for `threadloom` without a subcommand (or `open SESSION`, `open_session`: the
    session shown at start); returns the process exit code."""
    app = ThreadloomApp(db_path=db_path, sources=sources, demo=demo, ingest=ingest, open_session=open_session)
    try:
        app.run()
    finally:
        if app.temp_dir is not None:
            shutil.rmtree(app.temp_dir, ignore_errors=True)
    return app.return_code or 0
