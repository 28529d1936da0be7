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
from collections.abc import Callable, Iterable, Iterator
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
    BackToSearch,
    ExportSession,
    MarkChosen,
    OpenDemo,
    OpenForkPicker,
    OpenProject,
    OpenSession,
    SearchClosed,
    SearchHitChosen,
    SyncChosen,
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


class ThreadloomApp(ArchiveApp):
    """Browse every agent session threadloom has archived.

    Its own keys work on every screen (Tab, the palette, the ingest's); the browser's are bound on
    `BrowserScreen`, which asks for what the app keeps (search, the fork picker, the writers)
    with the messages of `threadloom.tui.events`."""

    browser: BrowserScreen  # the archive's side sees it as an `ArchiveView`

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
        Binding("ctrl+r", "rescan", "Rescan", show=False, id="app.rescan", tooltip="Read new agent logs now"),
        Binding("escape", "cancel_ingest", "Cancel ingest", id="app.cancel-ingest"),
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
        self.browser = BrowserScreen(archive_state=self.archive, now=self.now, id="_default", classes=classes)
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
        if not self.ingest_on_start and self.conn is None and not upgrade and not self.archive.open_error:
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
        if not self.archive.ingesting and not self.demo:
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
        """`/` in the browser: search (the same screen each time: the last query stays, selected)."""
        from .search import SearchScreen

        if self.db_path is None or self.conn is None:
            self.notify("No database yet", timeout=2)
            return
        if isinstance(self.screen, SearchScreen):
            return
        self.browser.forget_search()
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

    def on_back_to_search(self, event: BackToSearch) -> None:
        if self.search_screen is None or self.screen is not self.browser:
            return
        self.push_screen(self.search_screen)
        self.refresh_bindings()

    def on_search_closed(self, event: SearchClosed) -> None:
        from .search import SearchScreen

        self.browser.forget_search()
        if isinstance(self.screen, SearchScreen):
            self.pop_screen()
        self.refresh_bindings()

    def on_open_session(self, event: OpenSession) -> None:
        self.browser.show_session(event.session_id, way_back=event.way_back)  # (from the stats, the palette)

    # ------------------------------------------------------------------ stats

    def on_open_project(self, event: OpenProject) -> None:
        self.browser.show_project(event.path)

    # ------------------------------------------------------------------ fork

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

    def on_export_session(self, event: ExportSession) -> None:
        """`E`: the session as one self-contained HTML page, in the folder threadloom runs in."""
        if self.db_path is not None:
            work = partial(workers.export, self.db_path, event.session_id, Path.cwd())
            workers.start(self, workers.EXPORT, work)

    # ------------------------------------------------------------------ what the browser asks of the archive

    def on_mark_chosen(self, event: MarkChosen) -> None:
        self.write_mark(event.kind, event.ref, event.values)

    def on_sync_chosen(self, event: SyncChosen) -> None:
        self.start_sync(event.url, event.rules)

    def on_open_demo(self, event: OpenDemo) -> None:
        self.open_demo()

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_ingest":
            return self.archive.ingesting
        return True

    async def action_quit(self) -> None:
        """Quit; when the database could not be opened, with exit status 1 and the reason (with its
        fix) printed on the terminal the TUI gives back, so a script or a user sees it failed."""
        if self.archive.open_error:
            self.exit(return_code=1, message=f"threadloom: {self.archive.open_error}")
        else:
            self.exit()

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
        """The palette's help: the keys of the browser's focused pane (not over help itself)."""
        if not isinstance(self.screen, HelpScreen):
            self.browser.show_help()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette lists what applies now: the browser's (the focused pane's first) with the
        ingest's among them, then help."""
        yield from self.browser.palette_commands(self._ingest_commands())
        yield SystemCommand("Help: keys of the focused pane", "F1 or ?", self.action_help)
        # Textual's own "Keys" panel would be a second, different help beside ours
        yield from (command for command in super().get_system_commands(screen) if command.title != "Keys")

    def _ingest_commands(self) -> Iterator[SystemCommand]:
        """Cancel the ingest that runs, or read new logs now (not the demo's: it does not change)."""
        if self.archive.ingesting:
            yield SystemCommand(
                "Ingest: cancel", "Stop after the current file (Esc)", self.action_cancel_ingest
            )
        elif not self.archive.is_demo:
            yield SystemCommand(
                "Ingest: rescan now", "Read new and changed agent logs (Ctrl+R)", self.action_rescan
            )


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
        if app.archive.temp_dir is not None:
            shutil.rmtree(app.archive.temp_dir, ignore_errors=True)
    return app.return_code or 0
