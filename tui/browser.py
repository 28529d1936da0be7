"""The browsing screen: projects → sessions → messages, with the ingest's progress under them.

It owns the panes and what they show: the current project and session, the way back from a
subagent (Esc), the preview of what the tree's cursor rests on, the empty state and the layout
classes that give way to the focused pane on narrow terminals. The app gives it a connection
(`conn`) and tells it about the ingest; what the user asks of other screens (the fork picker) goes
back up as a message from `threadloom.tui.events`, or as the answer to the app's question.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.css.scalar import Unit
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Label, OptionList, ProgressBar, Static, Tree

from ..core.actions import restore
from ..core.actions.hidden import MARK, PROJECT, SESSION, Hidden, read_hidden
from ..core.base.text import count_of, short_when
from ..core.read import archive, browse
from ..core.read.query import display_title, get_session
from .archive_state import ArchiveState
from .events import (
    BackToSearch,
    ExportSession,
    HideChanged,
    MarkChosen,
    OpenDemo,
    OpenForkPicker,
    SyncChosen,
)
from .footer import KeyFooter
from .messages import MessageView
from .panes import FilterInput, NodeRef, ProjectList, SessionTree
from .render import plain_title, short_model
from .screens import HelpScreen, OutputScreen, RawJsonScreen, key_rows
from .settings import Settings, save_settings, settings_path

if TYPE_CHECKING:
    from ..core.ingest.pipeline import Progress
    from ..core.insight.changes import SessionChangeCall
    from ..core.read.browse import SessionSummary
    from ..core.read.search import Hit
    from .memory import MemoryTarget

NARROW = 110
WIDE = 150
PANE_IDS = ("projects", "sessions", "messages")
PANE_NAMES = {"projects": "Projects", "sessions": "Sessions", "messages": "Messages"}
# the sessions pane's other parts: its box and the filter bar in it
PANE_OF = {"session-filter": "sessions", "filter-bar": "sessions", "sessions-box": "sessions"}
WIDTH_STEP = 4  # cells a pane grows or shrinks by with ] and [
MIN_WIDTH = {"projects": 16, "sessions": 24, "messages": 30}
PREVIEW_SECONDS = 0.12  # what the tree's cursor rests on opens after this pause


def layout_classes(width: int, focused: str) -> dict[str, bool]:
    """The screen's classes for a terminal width and the focused pane (app.tcss reads them)."""
    classes = {"-narrow": width < NARROW, "-medium": NARROW <= width < WIDE, "-wide": width >= WIDE}
    # the focused pane chooses what is shown (FOCUS_CLASSES): a class no rule reads is not set, as
    # each change restyles and redraws every widget of the screen (a Tab between the projects and
    # the sessions at 140 columns: 74 ms, against 47 at 160)
    read = FOCUS_CLASSES["-narrow" if width < NARROW else "-medium" if width < WIDE else "-wide"]
    classes.update({f"-focus-{pane}": pane in read and focused == pane for pane in PANE_IDS})
    return classes


# the focused panes app.tcss reads at each width: on a narrow screen the projects take it whole and
# the messages hide the sessions (the sessions are what it shows otherwise); on a medium one the
# messages take the projects' room; a wide one shows all three whatever is focused
FOCUS_CLASSES = {"-narrow": ("projects", "messages"), "-medium": ("messages",), "-wide": ()}


MEMORY_ACTIONS = frozenset({"tag", "note", "note_message", "bookmark", "bookmarks", "memory"})


class BrowserScreen(Screen[None]):
    """Projects, their sessions as a tree, and the messages of the one open."""

    # Its keys are bound here, not on the app: on search (where letters are typed), the stats and
    # the dialogs they do not exist. Their ids keep the `app.` of the keymaps written for them.
    BINDINGS = [
        Binding("ctrl+c,super+c", "screen.copy_text", "Copy selection", show=False, id="app.copy-selection"),
        Binding(
            "left_square_bracket",
            "resize_pane(-1)",
            "Narrower",
            show=False,
            id="app.pane-narrower",
            tooltip="Narrow the focused pane (remembered)",
        ),
        Binding(
            "right_square_bracket",
            "resize_pane(1)",
            "Wider",
            show=False,
            id="app.pane-wider",
            tooltip="Widen the focused pane (remembered)",
        ),
        Binding("1", "focus_pane('projects')", "Projects", show=False, id="app.focus-projects"),
        Binding("2", "focus_pane('sessions')", "Sessions", show=False, id="app.focus-sessions"),
        Binding("3", "focus_pane('messages')", "Messages", show=False, id="app.focus-messages"),
        # the footer shows these in this order after the pane's own keys and cuts what does not fit:
        # what threadloom is for first, the keys every TUI has last
        # search is the app's (one screen kept from one search to the next): opened at once, so
        # what is typed right after the key goes to its query
        Binding(
            "slash",
            "app.search",
            "Search",
            id="app.search",
            tooltip="Search every conversation of every agent",
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
        Binding("q", "app.quit", "Quit", id="app.quit"),
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
        Binding("d", "open_demo", "Open demo", id="app.demo"),
    ]
    AUTO_FOCUS = ""  # chosen here: the projects pane, or nothing on the empty state

    def __init__(
        self,
        *,
        archive_state: ArchiveState,
        now: Callable[[], float],
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        # the app's, which it alone changes: what its keys may do now, where the logs were looked for
        self.archive_state = archive_state
        self.now = now
        self.conn: sqlite3.Connection | None = None  # set by the app, which opens and closes it
        self.rewrites: list[archive.Version] = []  # the open session's earlier versions (`v`)
        self.version_shown: int | None = None  # the one shown, by its index in `rewrites`
        self._version_conn: sqlite3.Connection | None = None  # its database in memory
        self.search_return = False  # Esc goes back to the search results this was opened from
        # Esc from a subagent opened from a Task call: the sessions (and messages) it came from
        self.trail: list[tuple[str, int]] = []
        self.composed = asyncio.Event()  # the app waits for the panes before it fills them
        self._open_ref: NodeRef | None = None  # what the message view shows
        self._preview_timer: Timer | None = None
        self._status = "Reading agent logs"
        self._last_pane_refresh = 0.0
        self.settings = Settings()  # the app gives it what it read at start (`use_settings`)
        self.hidden = Hidden()  # what the user hid from the lists, as the archive has it
        # hidden (True) or shown again (False) but not written yet: (kind, key) → hidden
        self.hiding: dict[tuple[str, str], bool] = {}
        self.show_hidden = False  # H: the hidden projects and sessions are listed too, marked

    def _after_refresh(self, callback: Callable[..., object], *args: object) -> None:
        """Run `callback` after the next refresh, through the app's queue: this screen's own would
        hand it on at once, and drop it while the app is still starting (it fills the panes then)."""
        self.app.call_after_refresh(callback, *args)

    def compose(self) -> ComposeResult:
        with Horizontal(id="panes"):
            yield ProjectList(now=self.now, id="projects")
            with Vertical(id="sessions-box"):
                with Horizontal(id="filter-bar"):
                    yield Label("filter", id="filter-label")
                    yield FilterInput(placeholder="title, id, branch, prompt", id="session-filter")
                yield SessionTree(now=self.now, id="sessions")
            yield MessageView(id="messages")
        yield Static(id="empty")
        with Horizontal(id="ingest-bar"):
            yield Label("", id="ingest-label")
            yield ProgressBar(id="ingest-progress", show_eta=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one(ProjectList).border_title = "Projects"
        self.query_one(SessionTree).border_title = "Sessions"
        self.query_one(MessageView).border_title = "Messages"
        self.composed.set()

    # ------------------------------------------------------------------ layout

    def apply_layout(self, width: int) -> None:
        # in one batch: each class changed alone restyles every widget of the screen again (a
        # focus change swaps two of them)
        self.update_classes(layout_classes(width, self.focused_pane))
        self._apply_widths(width)

    def _apply_widths(self, width: int) -> None:
        """The widths the user chose with [ and ] (the stylesheet's where none was chosen), each cut
        to leave the panes beside it their least. On a narrow terminal with the projects pane
        focused the sessions pane fills what is left, as the stylesheet has it."""
        if not self.composed.is_set():
            return  # a resize before the panes are there
        chosen_projects, chosen_sessions = self.settings.projects_width, self.settings.sessions_width
        projects, box = self.query_one(ProjectList), self.query_one("#sessions-box")
        if chosen_projects:
            room = width - MIN_WIDTH["sessions"] - MIN_WIDTH["messages"]
            projects.styles.width = max(MIN_WIDTH["projects"], min(chosen_projects, room))
        fill = self.has_class("-narrow") and self.has_class("-focus-projects")
        if chosen_sessions and not fill:
            beside = projects.outer_size.width if projects.display and not self.has_class("-narrow") else 0
            box.styles.width = max(
                MIN_WIDTH["sessions"], min(chosen_sessions, width - beside - MIN_WIDTH["messages"])
            )
        elif chosen_sessions:
            box.styles.width = None

    def action_resize_pane(self, step: int) -> None:
        """[ and ]: the focused pane narrower or wider by a few cells (the message pane by giving
        the sessions pane's room to it, or taking it); remembered in the settings file."""
        pane = self.focused_pane
        if pane == "messages":
            pane, step = "sessions", -step
            if not self.query_one("#sessions-box").display:
                self.notify("The message pane has the whole width here", timeout=2)
                return
        widget = self.query_one(ProjectList) if pane == "projects" else self.query_one("#sessions-box")
        # the width the last press set, if any (its layout may not have run yet when keys come
        # quickly), else the one the pane is drawn at
        declared = widget.styles.inline.width
        current = (
            int(declared.value)
            if declared is not None and declared.unit == Unit.CELLS
            else widget.outer_size.width
        )
        wanted = max(MIN_WIDTH[pane], current + step * WIDTH_STEP)
        if pane == "projects":
            self.settings.projects_width = wanted
        else:
            self.settings.sessions_width = wanted
        self.apply_layout(self.app.size.width)
        self._remember()

    def use_settings(self, settings: Settings) -> None:
        """What was remembered: the list's hidden short sessions, the panes' widths."""
        self.settings = settings
        self.query_one(SessionTree).view.hide_short = settings.hide_short_sessions

    def _remember(self) -> None:
        problem = save_settings(settings_path(), self.settings)
        if problem is not None:
            self.notify(problem, title="Settings not saved", severity="warning", timeout=6)

    @on(SessionTree.ShortSessionsToggled)
    def _short_sessions_toggled(self, event: SessionTree.ShortSessionsToggled) -> None:
        self.settings.hide_short_sessions = event.hidden
        self._remember()

    # ------------------------------------------------------------------ hiding

    def now_hidden(self) -> Hidden:
        """What is hidden: the archive's, with what was hidden or shown since and is being written."""
        sessions, projects = set(self.hidden.sessions), set(self.hidden.projects)
        for (kind, key), hidden in self.hiding.items():
            chosen = sessions if kind == SESSION else projects
            if hidden:
                chosen.add(key)
            else:
                chosen.discard(key)
        return Hidden(frozenset(sessions), frozenset(projects))

    def _hide(self, kind: str, key: str, name: str, now: bool | None = None) -> None:
        """h: hide it from the lists (or show it again, when it was; `now` says which when the
        pane knew), at once; the app writes it."""
        if now is None:
            hidden = self.now_hidden()
            now = key not in (hidden.sessions if kind == SESSION else hidden.projects)
        self.hiding[(kind, key)] = now
        self.post_message(HideChanged(kind, key, now))
        self._show_hidden_now()
        what = "session" if kind == SESSION else "project"
        if now:
            self.notify(
                f"Hidden: {name} (H lists hidden {what}s, h there shows it again)", title="Hide", timeout=4
            )
        else:
            self.notify(f"In the list again: {name}", title="Hide", timeout=3)

    def hide_written(self, done: tuple[str, str] | None) -> None:
        """The app wrote what was hidden (`done`) or failed to (None: nothing is taken as written)."""
        if done is None:
            self.hiding.clear()
        elif self.conn is not None:
            self.hiding.pop(done, None)
            self.hidden = read_hidden(self.conn)

    def _show_hidden_now(self) -> None:
        """The lists as `now_hidden` has them: projects re-listed, the tree's view changed."""
        if self.conn is None:
            return
        hidden = self.now_hidden()
        projects = [
            p for p in browse.list_projects(self.conn) if self.show_hidden or p.path not in hidden.projects
        ]
        project_list = self.query_one(ProjectList)
        at = project_list.highlighted or 0
        before = project_list.current.path if project_list.current else None
        project_list.set_projects(projects, hidden.projects, hidden_listed=self.show_hidden)
        if before is not None and before not in {p.path for p in projects} and projects:
            project_list.highlighted = min(at, len(projects) - 1)  # the next project, not the first
        tree = self.query_one(SessionTree)
        current = project_list.current
        if (current.path if current else None) != tree.project:
            tree.view.hidden, tree.view.show_hidden = hidden.sessions, self.show_hidden
            tree.show_project(self.conn, current.path if current else None)
            # the message pane follows: it kept the hidden project's conversation beside the next one's list
            self._after_refresh(self._project_shown)
        else:
            tree.set_view(hidden=hidden.sessions, show_hidden=self.show_hidden)
        tree.show_facts(tree.cursor_node)

    @on(ProjectList.HideAsked)
    def _hide_project(self, event: ProjectList.HideAsked) -> None:
        self._hide(PROJECT, event.project.path, event.project.name, event.hidden)

    @on(SessionTree.HideAsked)
    def _hide_session(self, event: SessionTree.HideAsked) -> None:
        self._hide(SESSION, event.session.id, display_title(event.session), event.hidden)

    @on(ProjectList.ShowHiddenAsked)
    def toggle_hidden(self) -> None:
        """H: the hidden projects and sessions listed too (marked ⊘), or left out again."""
        self.show_hidden = not self.show_hidden
        self._show_hidden_now()
        hidden = self.now_hidden()
        count = len(hidden.sessions) + len(hidden.projects)
        if self.show_hidden:
            self.notify(
                f"Hidden sessions and projects listed, marked {MARK} ({count})"
                if count
                else "Nothing is hidden",
                timeout=3,
            )
        else:
            self.notify("Hidden sessions and projects left out", timeout=2)

    # ------------------------------------------------------------------ the filter box

    @on(SessionTree.FilterRequested)
    def _open_filter(self) -> None:
        box = self.query_one(FilterInput)
        box.value = self.query_one(SessionTree).view.text
        self.add_class("-filtering")
        box.focus()

    @on(Input.Changed, "#session-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        tree = self.query_one(SessionTree)
        if event.value != tree.view.text:
            tree.set_view(text=event.value)
            tree.show_facts(tree.cursor_node)
            self._after_refresh(self._follow_list)

    @on(FilterInput.Done)
    def _filter_done(self) -> None:
        if not self.query_one(FilterInput).value.strip():
            self.remove_class("-filtering")  # nothing typed: the box goes
        self.query_one(SessionTree).focus()

    @on(FilterInput.Closed)
    def _filter_closed(self) -> None:
        tree = self.query_one(SessionTree)
        tree.set_view(text="")
        self.remove_class("-filtering")
        tree.focus()
        self._after_refresh(self._follow_list)

    def _follow_list(self) -> None:
        """The filter changed what is listed while the box had the keys: the message pane follows
        the list's cursor after the preview's pause, as when moving through the list (it kept a
        session the filter had left out)."""
        node = self.query_one(SessionTree).cursor_node
        ref = node.data if node is not None else None
        if ref is None or ref.session is None:
            return  # (open_ref itself does nothing for what is already shown)
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_SECONDS, lambda: self.open_ref(ref))

    @on(SessionTree.ViewCleared)
    def _view_cleared(self) -> None:
        """Esc in the list with a filter typed: the box goes with it."""
        self.query_one(FilterInput).value = ""
        self.remove_class("-filtering")

    @property
    def focused_pane(self) -> str:
        """The pane with this screen's focus (a dialog on top of it has the app's)."""
        widget: Widget | None = self.focused
        while widget is not None:
            if widget.id in PANE_IDS:
                return widget.id or "projects"
            if widget.id in PANE_OF:
                return PANE_OF[widget.id]
            widget = widget.parent if isinstance(widget.parent, Widget) else None
        return "projects"

    def on_descendant_focus(self) -> None:
        self.apply_layout(self.app.size.width)

    def focus_pane(self, pane: str) -> None:
        widget = self.query_one(f"#{pane}")
        hidden = not widget.display or (pane == "sessions" and not self.query_one("#sessions-box").display)
        widget.focus()
        if hidden:  # the layout that shows it, now rather than after the focus event
            self.apply_layout(self.app.size.width)

    def cycle(self, step: int) -> None:
        current = PANE_IDS.index(self.focused_pane)
        self.query_one(f"#{PANE_IDS[(current + step) % len(PANE_IDS)]}").focus()

    @property
    def is_empty(self) -> bool:
        return self.has_class("-empty")

    # ------------------------------------------------------------------ panes

    def refresh_panes(self, *, keep_state: bool = True) -> None:
        """Re-read projects and the current project's sessions (kept expanded where they were)."""
        if self.conn is None:
            return
        self.hidden = read_hidden(self.conn)
        hidden = self.now_hidden()
        projects = [
            p for p in browse.list_projects(self.conn) if self.show_hidden or p.path not in hidden.projects
        ]
        project_list = self.query_one(ProjectList)
        project_list.set_projects(projects, hidden.projects, hidden_listed=self.show_hidden)
        current = project_list.current
        tree = self.query_one(SessionTree)
        view_changed = (tree.view.hidden, tree.view.show_hidden) != (hidden.sessions, self.show_hidden)
        tree.view.hidden, tree.view.show_hidden = hidden.sessions, self.show_hidden
        listed = tree.show_project(self.conn, current.path if current else None, keep_state=keep_state)
        if view_changed and not listed:  # hidden or shown again elsewhere (`threadloom hide`)
            tree.set_view()
        tree.show_facts(tree.cursor_node)
        view = self.query_one(MessageView)
        if view.session_id is None and tree.root.children:
            self._after_refresh(self._open_first)  # after the tree has put its cursor
        self._last_pane_refresh = time.monotonic()
        self._show_empty(not projects and not self.archive_state.ingesting)
        if projects and self.focused is None and self.is_current:
            project_list.focus()  # the demo, or a first load, that started with nothing to focus

    def focus_first_pane(self) -> None:
        """At start: the projects pane has the keys, unless there is nothing to browse."""
        if not self.is_empty:
            self.query_one(ProjectList).focus()

    def _open_first(self) -> None:
        """Nothing open yet: show the newest session, so the first screen is never blank."""
        tree = self.query_one(SessionTree)
        if self.query_one(MessageView).session_id is None and tree.cursor_node is not None:
            self.open_ref(tree.cursor_node.data)

    def _show_empty(self, empty: bool) -> None:
        was_empty = self.is_empty
        self.set_class(empty, "-empty")
        self.app.refresh_bindings()
        if empty:
            self.query_one("#empty", Static).update(self._empty_text())
            self.app.set_focus(None)
        elif was_empty:
            self.query_one(ProjectList).focus()

    def _empty_text(self) -> Group:
        from ..core.adapters import all_adapters

        looked = self.archive_state
        # the places logs are kept, as `threadloom sources` lists them: not the folders of the
        # files sessions keep beside their logs (file history, todos, prompt logs), also read
        beside = {str(r) for a in all_adapters() for r in a.side_roots()}
        roots = (
            [root for root in looked.roots if root not in beside]
            if looked.roots is not None
            else [str(r) for a in all_adapters() for r in a.default_roots()]
            + [str(s) for s in looked.sources]
        )
        text = Text()
        text.append("No agent sessions yet\n\n", style="bold")
        # what to do first: the places looked in come after (forty of them, on a first run, pushed
        # this past the bottom of a 24-row terminal, where it could not be scrolled to)
        text.append("Press ", style="")
        text.append("d", style="bold reverse")
        text.append(" to open the demo archive, or ")
        text.append("q", style="bold reverse")
        text.append(" to quit.\n\n")
        text.append("Logs somewhere else (a backup, another machine's ~/.claude)? Add the folder:\n\n")
        text.append("  threadloom --source ~/path/to/claude/projects\n\n", style="bold #87d787")
        text.append("Folders given with --source are remembered and rescanned on every start.\n\n")
        given = {str(s) for s in looked.sources}
        shown = [root for root in roots if root in given or Path(root).exists()]
        absent = len(roots) - len(shown)
        text.append("threadloom looked for agent logs in:")
        places = [
            Text.assemble(
                (f"{root}  ", "#d7af5f"), (f"({'found' if Path(root).exists() else 'not present'})", "dim")
            )
            for root in shown
        ]
        if absent:
            places.append(
                Text(
                    f"{'and ' if shown else ''}{absent} place{'s' if absent != 1 else ''} where the agents keep "
                    "their logs, none on this machine (`threadloom sources` lists them)",
                    style="dim",
                )
            )
        # each place indented as a whole: a long one wraps under itself, not under the heading
        return Group(text, *(Padding(place, (0, 0, 0, 2)) for place in places))

    def use_connection(
        self, conn: sqlite3.Connection | None, *, replacing: sqlite3.Connection | None = None
    ) -> None:
        """Read through `conn` from now on; the message view leaves `replacing` (closed next) too."""
        self.conn = conn
        view = self.query_one(MessageView)
        if replacing is not None and view.conn is replacing:
            view.conn = conn

    def forget_load(self) -> None:
        """A first load failed and is started afresh by the next launch: show none of it, and let
        go of its connection (the app closes it)."""
        self.query_one(MessageView).clear()
        self.query_one(ProjectList).set_projects([])
        tree = self.query_one(SessionTree)
        tree.show_project(self.conn, None)
        tree.conn = None
        self.use_connection(None)

    @on(OptionList.OptionHighlighted, "#projects")
    def _project_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        tree = self.query_one(SessionTree)
        if self.conn is None or event.option.id is None or event.option.id == tree.project:
            # already listed by whoever highlighted it (a jump, a refresh): read once, not again to
            # see that nothing changed, 0.14-0.5 s in a project of a thousand sessions
            return
        if tree.show_project(self.conn, event.option.id, keep_state=True):
            self._after_refresh(self._project_shown)

    def _project_shown(self) -> None:
        """Another project's sessions are listed: the tree's facts line and the message pane follow
        (after the preview's pause), so the pane never shows a conversation of a project that is
        no longer listed beside it."""
        tree = self.query_one(SessionTree)
        tree.show_facts(tree.cursor_node)
        open_project = (
            self._open_ref.session.project_path if self._open_ref and self._open_ref.session else None
        )
        if self._open_ref is not None and (open_project or None) == (tree.project or None):
            return
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_SECONDS, self._preview_project)

    def _preview_project(self) -> None:
        tree = self.query_one(SessionTree)
        node = tree.cursor_node
        if node is not None and node.data is not None and node.data.session is not None:
            self.open_ref(node.data)
        else:
            self._open_ref = None
            self.query_one(MessageView).clear("No sessions in this project.")

    @on(OptionList.OptionSelected, "#projects")
    def _project_selected(self) -> None:
        self.query_one(SessionTree).focus()

    @on(Tree.NodeHighlighted, "#sessions")
    def _session_highlighted(self, event: Tree.NodeHighlighted[NodeRef]) -> None:
        # open what the cursor rests on after a short pause, so holding an arrow key stays cheap
        if self._preview_timer is not None:
            self._preview_timer.stop()
        ref = event.node.data
        tree = self.query_one(SessionTree)
        tree.show_facts(event.node)
        if tree.has_focus:  # the user is moving through the tree, not a jump revealing a node
            self._preview_timer = self.set_timer(PREVIEW_SECONDS, lambda: self.open_ref(ref))

    @on(Tree.NodeSelected, "#sessions")
    def _session_selected(self, event: Tree.NodeSelected[NodeRef]) -> None:
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self.open_ref(event.node.data)
        if event.node.data is not None and event.node.data.kind != "loading":
            self.query_one(MessageView).focus()

    # ------------------------------------------------------------------ what is open

    @property
    def open_key(self) -> tuple | None:
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

    @property
    def whole_session_open(self) -> str | None:
        """The id of the session shown whole (not a branch or segment of it, nor an earlier version):
        the one followed live."""
        key = self.open_key
        return key[1] if key is not None and key[0] == "session" and self.version_shown is None else None

    def open_ref(self, ref: NodeRef | None, *, keep_trail: bool = False) -> None:
        """Show a session, a branch or a compaction segment in the message view. `keep_trail`:
        opened by following a subagent or going back, so Esc's way back stays."""
        if ref is None or ref.session is None or self.conn is None or ref.kind == "loading":
            return
        session = ref.session
        previous, self._open_ref = self.open_key, ref
        if self.open_key == previous and self.version_shown is None:
            return
        self._leave_version()
        if not keep_trail and self.trail:  # opened some other way: no way back from it
            self.trail.clear()
            self.app.refresh_bindings()
        view = self.query_one(MessageView)
        title = display_title(session)
        count = session.message_count
        if ref.kind == "branch" and ref.branch is not None:
            seqs = browse.branch_seqs(self.conn, session.id, ref.branch.turn_ids)
            view.show(self.conn, session.id, seqs)
            count = len(seqs)
            facts = f"branch {ref.branch.number} · {count_of(count, 'message')}"
        elif ref.kind == "segment" and ref.segment is not None:
            # the footer names the segment the cursor is in (this one, until the cursor leaves it)
            view.show(self.conn, session.id, range(session.message_count), at=ref.segment.start_seq)
            facts = count_of(count, "message")
        else:
            rewinds = browse.rewind_seqs(self.conn, session.id) if session.branch_count else set()
            view.show(self.conn, session.id, range(session.message_count), rewinds=rewinds)
            self.rewrites = archive.session_rewrites(self.conn, session.id)
            view.set_facts(subtitle(session, count, len(rewinds), self.rewrites))
            view.border_title = plain_title(title, 70)
            return
        view.border_title = plain_title(title, 70)
        view.set_facts(facts + tokens_and_model(session))

    # ------------------------------------------------------------------ earlier versions

    @on(MessageView.EarlierVersionRequested)
    def show_earlier_version(self) -> None:
        """`v`: the open session as it read before its last rewrite, then before the one before,
        …, then as it is again. An earlier version is read from the records the archive kept into a
        database of its own (core.actions.restore.as_of_archive): browsed, not forked from."""
        ref = self._open_ref
        if ref is None or ref.session is None or ref.kind != "session" or self.conn is None:
            return
        if not self.rewrites:
            self.notify("This session's files were never rewritten: there is no earlier version", timeout=3)
            return
        index = len(self.rewrites) - 1 if self.version_shown is None else self.version_shown - 1
        if index < 0:  # past the oldest: the session as it is
            self._leave_version()
            self._open_ref = None  # so that open_ref shows it again
            self.open_ref(ref, keep_trail=True)
            return
        version = self.rewrites[index]
        then = restore.as_of_archive(self.conn, ref.session.id, version.superseded_at - 1)
        old = get_session(then, ref.session.id)
        if old is None:
            then.close()
            self.notify("Nothing of this session was in its files before that rewrite", timeout=3)
            return
        self._leave_version()
        self.version_shown, self._version_conn = index, then
        view = self.query_one(MessageView)
        view.show(then, old.id, range(old.message_count))
        further = "earlier" if index > 0 else "as it is now"
        view.set_facts(
            f"as it read before {short_when(version.superseded_at)} · {count_of(old.message_count, 'message')}"
            f" · v: {further}"
        )

    def _leave_version(self) -> None:
        """Back from an earlier version: its database in memory is let go."""
        if self._version_conn is not None:
            self._version_conn.close()
        self.version_shown, self._version_conn = None, None

    @property
    def open_session_id(self) -> str | None:
        """The session the message viewer shows (None before one is opened)."""
        return self.query_one(MessageView).session_id

    def show_project(self, path: str) -> None:
        """A project asked for from outside the browser (the stats): highlighted, its sessions
        listed and the session tree given the keys; Esc no longer leads back to an old search."""
        self.forget_search()
        projects = self.query_one(ProjectList)
        paths = [p.path for p in projects.projects]
        if path not in paths:
            self.notify(f"No project {path or '(no project)'}", severity="warning")
            return
        projects.highlighted = paths.index(path)
        self.query_one(SessionTree).focus()

    def jump_to_session(self, session_id: str, *, keep_trail: bool = False) -> None:
        """Reveal a session or subagent in the tree (switching project if needed) and read it."""
        if self.conn is None:
            return
        node = browse.get_node(self.conn, session_id, include_warmup=True)
        if node is None:
            self.notify(f"No session {session_id}", severity="warning")
            return
        projects = self.query_one(ProjectList)
        tree = self.query_one(SessionTree)
        chain = browse.session_path(self.conn, session_id)
        # a subagent is listed under its main session's project, wherever it worked (a worktree)
        main = node if chain[0] == session_id else browse.get_node(self.conn, chain[0], include_warmup=True)
        path = (main or node).project_path or ""
        if projects.current is None or projects.current.path != path:
            paths = [p.path for p in projects.projects]
            if path in paths:
                projects.highlighted = paths.index(path)
            tree.show_project(self.conn, path)
        if self._preview_timer is not None:
            self._preview_timer.stop()
        if node.is_warmup and not tree.include_warmup:
            tree.include_warmup = True
            tree.show_project(self.conn, path)
        tree_node = tree.reveal(chain)
        if tree_node is None and (tree.view.text or tree.view.agent):
            # the list's filter left it out: a session asked for by name is shown in the list too
            tree.set_view(text="", agent=None)
            self._view_cleared()
            tree_node = tree.reveal(chain)
        hidden = self.now_hidden()
        if (
            tree_node is None
            and not self.show_hidden
            and (set(chain) & hidden.sessions or path in hidden.projects)
        ):
            # hidden from the lists: asked for by name, it is listed with the hidden ones (marked)
            self.show_hidden = True
            self._show_hidden_now()
            if path in {p.path for p in projects.projects}:
                projects.highlighted = [p.path for p in projects.projects].index(path)
                tree.show_project(self.conn, path)
            tree_node = tree.reveal(chain)
        if tree_node is not None:
            self._after_refresh(tree.move_cursor, tree_node)
        ref = tree_node.data if tree_node is not None else NodeRef("session", node)
        self._open_ref = None
        self.open_ref(ref, keep_trail=keep_trail)
        self.query_one(MessageView).focus()

    def forget_search(self) -> None:
        """Esc no longer leads back to search results: search was opened again, closed or gone back to."""
        self.search_return = False

    def show_session(self, session_id: str, *, way_back: bool = False) -> None:
        """A session asked for from outside the browser (the palette, the stats, `threadloom open`):
        revealed in its tree and read; Esc no longer leads back to an old search. `way_back`: a
        subagent opened so goes back on Esc to the session and message it was asked for from."""
        self.forget_search()
        if way_back and self.conn is not None and self.open_session_id not in (None, session_id):
            node = browse.get_node(self.conn, session_id, include_warmup=True)
            if node is not None and node.is_subagent:
                self.open_subagent(session_id)
                return
        self.jump_to_session(session_id)

    def open_hit(self, hit: Hit) -> None:
        """A search hit: its session in the message viewer, at the hit, marked; Esc goes back."""
        self.search_return = True
        self.jump_to_session(hit.session_id)
        if hit.seq is not None:
            view = self.query_one(MessageView)
            seq = hit.seq
            self._after_refresh(lambda: view.go_to_seq(seq) if view.session_id == hit.session_id else None)

    def session_grew(self, session_id: str) -> None:
        """The live session's file was read further: the view shows what came (if still open)."""
        views = self.query(MessageView)
        if self.conn is None or not views:  # none: the app is quitting, its screen taken down
            return
        view = views.first()
        if self.whole_session_open != session_id or view.session_id != session_id:
            return
        node = browse.get_node(self.conn, session_id, include_warmup=True)
        if node is None:
            return
        if node.branch_count:  # the agent may have been rewound meanwhile: mark the new branch
            view.rewinds = browse.rewind_seqs(self.conn, session_id)
        view.withdrawn = browse.withdrawn_seqs(self.conn, session_id)  # or undone: marked as withdrawn
        rewrites = archive.session_rewrites(self.conn, session_id)
        if rewrites == self.rewrites and view.extend(range(node.message_count)):
            view.set_facts(subtitle(node, node.message_count, len(view.rewinds), rewrites))
            return
        # not a continuation of what is shown (its file was rewritten, cut short): shown afresh,
        # the reader left at the message it was on
        row = view.current_row()
        view.show(
            self.conn, session_id, range(node.message_count), at=row.seq if row else 0, rewinds=view.rewinds
        )
        self.rewrites = rewrites
        view.set_facts(subtitle(node, node.message_count, len(view.rewinds), rewrites))

    # ------------------------------------------------------------------ subagents and back

    @on(MessageView.SubagentRequested)
    def _open_subagent(self, event: MessageView.SubagentRequested) -> None:
        self.open_subagent(event.session_id)

    def open_subagent(self, session_id: str) -> None:
        """The subagent opened in the viewer; Esc comes back to the call under the cursor now."""
        view = self.query_one(MessageView)
        row = view.current_row()
        if view.session_id is not None:
            self.trail.append((view.session_id, row.seq if row is not None else 0))
        self._follow_trail(session_id)

    @on(MessageView.SubagentsRequested)
    def _choose_subagent(self, event: MessageView.SubagentsRequested) -> None:
        """Enter on a call that started several subagents: the list of them; the one chosen opens
        (if the viewer is still on that call's session)."""
        from .subagents import SubagentsScreen

        if self.conn is None:
            return
        view = self.query_one(MessageView)

        def chosen(session_id: str | None) -> None:
            if session_id is not None and view.session_id == event.session_id:
                self.open_subagent(session_id)

        screen = SubagentsScreen(self.conn, event.session_id, event.call_id, event.title, self.now)
        self.app.push_screen(screen, chosen)

    def go_back(self) -> None:
        """Esc (or Backspace) in a subagent opened from its Task call: back to that call."""
        if not self.trail:
            return
        session_id, seq = self.trail.pop()
        self._follow_trail(session_id)
        view = self.query_one(MessageView)
        self._after_refresh(
            lambda: view.go_to_seq(seq, mark=False) if view.session_id == session_id else None
        )

    def _follow_trail(self, session_id: str) -> None:
        self.jump_to_session(session_id, keep_trail=True)
        self.app.refresh_bindings()

    @on(MessageView.RawRequested)
    def _show_raw(self, event: MessageView.RawRequested) -> None:
        conn = self.query_one(MessageView).conn or self.conn  # an earlier version's own database
        if conn is None:
            return
        raw = browse.raw_entry(conn, event.entry_id)
        if raw is None:
            self.notify("This record is no longer in the database", severity="warning")
            return
        self.app.push_screen(RawJsonScreen(raw, f"Raw record · entry {event.entry_id}"))

    @on(MessageView.OutputRequested)
    def _show_output(self, event: MessageView.OutputRequested) -> None:
        whole = event.output
        kept = "" if whole.complete else " (part of it: the rest was not in the archive)"
        what = "plan" if whole.kind == "plan" else f"{event.tool} output"
        title = plain_title(f"{what} · {whole.named}", 200)  # names from a log: plain text
        self.app.push_screen(OutputScreen(whole.text, title, f"{len(whole.data):,} bytes{kept}"))

    # ------------------------------------------------------------------ files changed

    @on(MessageView.FilesChangedRequested)
    def show_changes(self) -> None:
        """The files the open session and its subagents changed; the call chosen there, under the
        cursor, opened."""
        from .changes import ChangesScreen

        view = self.query_one(MessageView)
        session_id = view.session_id
        if self.conn is None or session_id is None:
            return

        def chosen(call: SessionChangeCall | None) -> None:
            if call is not None:
                self.go_to_change(session_id, call)

        # a border title reads back as markup: its plain text is the session's title
        title = Content.from_markup(view.border_title).plain if view.border_title else ""
        self.app.push_screen(ChangesScreen(self.conn, session_id, title), chosen)

    def go_to_change(self, session_id: str, call: SessionChangeCall) -> None:
        """The message viewer's cursor on the call that changed a file, opened on its diff; the
        whole session is opened first when the branch shown does not hold it, and a subagent's
        call in the subagent's conversation (Esc goes back to where `c` was pressed)."""
        from ..core.read.find import Place

        if call.seq is None or call.entry_id is None:
            self.notify("That call's message is not in the conversation", severity="warning", timeout=3)
            return
        # an Aider reply's edits are in its text, not a tool call
        aider = call.call_id.startswith("entry-")
        place = Place(call.seq, call.entry_id, "text" if aider else "tool", None if aider else call.call_id)
        view = self.query_one(MessageView)
        if view.session_id != session_id:
            return
        target = call.session_id or session_id
        view.focus()
        if target == session_id and view.navigator.open_place(place):
            return
        if target != session_id:  # a subagent's call: the way back is kept, as from its Task call
            row = view.current_row()
            self.trail.append((session_id, row.seq if row is not None else 0))
        self.jump_to_session(target, keep_trail=target != session_id)
        self.app.refresh_bindings()
        self._after_refresh(lambda: view.navigator.open_place(place) if view.session_id == target else None)

    # ------------------------------------------------------------------ the browser's keys

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Its keys that apply now: Esc's ways back when there is one, fork once the archive is
        more than a first load's reader, memory and sync on an archive that can keep them, …"""
        if action == "back":
            return bool(self.trail)
        if action == "back_to_search":
            return self.search_return
        if action == "fork":  # not during a first load: forking ingests the fork, after the load
            return self.focused_pane in ("messages", "sessions") and self.archive_state.can_fork
        if action == "export":
            return self.open_session_id is not None
        if action == "signals":
            return self.open_session_id is not None and self.archive_state.conn is not None
        if action in MEMORY_ACTIONS:
            return self.archive_state.conn is not None
        if action == "sync":  # not the demo's archive, which lives in a temporary folder
            return self.archive_state.can_sync
        if action == "open_demo":
            return self.is_empty
        return True

    def action_focus_pane(self, pane: str) -> None:
        self.focus_pane(pane)

    def action_back_to_search(self) -> None:
        self.forget_search()
        self.post_message(BackToSearch())

    def action_back(self) -> None:
        """Esc (or Backspace) in a subagent opened from its Task call: back to that call."""
        self.go_back()

    def action_open_demo(self) -> None:
        self.post_message(OpenDemo())

    def action_jump(self) -> None:
        from textual.command import CommandPalette

        from .commands import RecentSessionsProvider

        self.app.push_screen(
            CommandPalette(providers=[RecentSessionsProvider], placeholder="Jump to session…")
        )

    def action_help(self) -> None:
        self.show_help()

    def action_fork(self) -> None:
        """`f`: the fork picker for the message under the cursor, or for a session's latest turn."""
        if self.version_shown is not None and self.focused_pane == "messages":
            self.notify(
                "This is an earlier version, read from the records the archive kept: press v until the "
                "session is as it is now to fork from it",
                timeout=4,
            )
            return
        target = self.fork_target()
        if target is None:
            self.notify("Open a session, then press f on a message to fork from it", timeout=3)
            return
        session_id, entry_id, turn_id = target
        self.post_message(OpenForkPicker(session_id, entry_id, turn_id=turn_id))

    def action_export(self) -> None:
        """`E`: the open session as one self-contained HTML page, in the folder threadloom runs in."""
        session_id = self.open_session_id
        if session_id is None:
            return
        if self.version_shown is not None:
            self.notify("An earlier version is shown: the export writes the session as it is now", timeout=3)
        self.post_message(ExportSession(session_id))

    def action_stats(self) -> None:
        """`S`: the stats screen (totals by period, project, model, agent or session)."""
        from .stats import StatsScreen

        conn = self.archive_state.conn
        if conn is None:
            self.notify("No database yet", timeout=2)
            return
        if self.app.screen is self:  # (the palette runs it over any screen)
            self.app.push_screen(StatsScreen(conn))

    def action_signals(self) -> None:
        """`W` (what went wrong): the open session's signals; Enter on a piece of evidence shows
        that message."""
        from .signals import SignalsScreen

        session_id, conn = self.open_session_id, self.archive_state.conn
        if session_id is None or conn is None:
            return

        def show(seq: int | None) -> None:
            """The chosen message in the viewer, marked, as a search hit opens (without its way back)."""
            if seq is not None:
                self._open_at(session_id, seq)

        self.app.push_screen(SignalsScreen(conn, session_id), show)

    def _open_at(self, session_id: str, seq: int) -> None:
        """A session shown with the cursor on message `seq`, marked."""
        self.jump_to_session(session_id)
        view = self.query_one(MessageView)
        self._after_refresh(lambda: view.go_to_seq(seq) if view.session_id == session_id else None)

    # ------------------------------------------------------------------ memory: tags, notes, bookmarks

    def _memory_target(self) -> MemoryTarget | None:
        """What t, n and b act on: the message under the viewer's cursor (its pane focused), else
        the session under the tree's cursor, else the open session."""
        from .memory import MemoryTarget

        if self.focused_pane == "messages":
            view = self.query_one(MessageView)
            row = view.current_row()
            if view.session_id is not None:
                return MemoryTarget(
                    view.session_id, row.seq if row else None, self._title_of(view.session_id)
                )
        target = self.fork_target()
        session_id = target[0] if target is not None else self.open_session_id
        return MemoryTarget(session_id, None, self._title_of(session_id)) if session_id else None

    def _title_of(self, session_id: str) -> str:
        found = (
            get_session(self.archive_state.conn, session_id) if self.archive_state.conn is not None else None
        )
        return display_title(found) if found is not None else ""

    def _ask_mark(self, kind: str, *, whole_session: bool = False) -> None:
        from ..core.insight import memory
        from ..core.store.memory_tables import MemoryRefused
        from .memory import MarkScreen, MemoryTarget

        target, conn = self._memory_target(), self.archive_state.conn
        if target is None or conn is None:
            self.notify("Put the cursor on a session (or a message) first", timeout=3)
            return
        if whole_session:
            target = MemoryTarget(target.session_id, None, target.title)
        try:
            present = [
                m.value for m in memory.marks(conn, kind=kind, target=memory.parse_target(conn, target.ref))
            ]
        except (LookupError, MemoryRefused):
            present = []
        ref = target.ref

        def keep(text: str | None) -> None:
            if not text:
                return
            values = [v for v in (p.strip() for p in text.split(",")) if v] if kind == "tag" else [text]
            self.post_message(MarkChosen(kind, ref, values))

        self.app.push_screen(MarkScreen(kind, target, present), keep)

    def action_tag(self) -> None:
        """`t`: tag the session (or, in the viewer, the message) under the cursor."""
        self._ask_mark("tag")

    def action_note(self) -> None:
        """`n`: a note on the session under the cursor (the viewer's own n steps through a find)."""
        self._ask_mark("note", whole_session=True)

    def marks_written(self) -> None:
        """A tag, note or bookmark was written: a message's tags are drawn in its header."""
        self.query_one(MessageView).reload_tags()

    def action_note_message(self) -> None:
        """`a` in the viewer (where n is the next match): a note on the message under the cursor."""
        self._ask_mark("note")

    def action_bookmark(self) -> None:
        """`b`: bookmark the session (or, in the viewer, the message) under the cursor, or take it off."""
        target = self._memory_target()
        if target is None:
            self.notify("Put the cursor on a session (or a message) first", timeout=3)
            return
        self.post_message(MarkChosen("bookmark", target.ref, []))

    def action_bookmarks(self) -> None:
        """`B`: the bookmarks; Enter opens one at its message."""
        from .memory import BookmarksScreen

        if self.archive_state.conn is None:
            return

        def open_it(chosen: tuple[str, int | None] | None) -> None:
            if chosen is None:
                return
            session_id, seq = chosen
            if seq is None:
                self.jump_to_session(session_id)
            else:
                self._open_at(session_id, seq)

        self.app.push_screen(BookmarksScreen(self.archive_state.conn), open_it)

    def action_memory(self) -> None:
        """`M`: the memory screen (entries by scope with their history, tags, notes)."""
        from .memory import MemoryScreen

        if self.archive_state.conn is not None:
            self.app.push_screen(MemoryScreen(self.archive_state.conn))

    def action_sync(self) -> None:
        """`U`: sync with the hub; the first time, ask what leaves this machine (tui.sync)."""
        from ..core.ingest import sync
        from .sync import SyncChoice, SyncScreen

        conn = self.archive_state.conn
        if conn is None:
            return
        url, sharing = sync.configured(conn)
        if url is not None and sharing is not None:
            self.post_message(SyncChosen(None, []))
            return

        def chosen(choice: SyncChoice | None) -> None:
            if choice is not None:
                self.post_message(SyncChosen(choice.url, choice.rules))

        self.app.push_screen(SyncScreen(url, sync.project_choices(conn)), chosen)

    # ------------------------------------------------------------------ fork, help, palette

    def fork_target(self) -> tuple[str, int | None, str | None] | None:
        """What `f` forks from: (session, entry, turn) of the message under the cursor, or a
        session's latest turn in the tree; None when neither pane has one."""
        pane = self.focused_pane
        if pane == "messages":
            view = self.query_one(MessageView)
            row = view.current_row()
            if view.session_id is not None:
                return view.session_id, row.entry_id if row else None, row.turn_id if row else None
        elif pane == "sessions":
            node = self.query_one(SessionTree).cursor_node
            ref = node.data if node is not None else None
            if ref is not None and ref.session is not None and ref.kind != "loading":
                leaf = ref.branch.leaf_turn_id if ref.branch is not None else None
                return ref.session.id, None, leaf
        return None

    def show_help(self) -> None:
        """The keys of the focused pane, then those that work everywhere (after user remaps)."""
        pane = self.focused_pane
        pane_keys, global_keys = key_rows(self, self.query_one(f"#{pane}"), (self.app, self))
        self.app.push_screen(HelpScreen(PANE_NAMES[pane], pane_keys, global_keys))

    def palette_commands(self, ingest: Iterable[SystemCommand]) -> Iterator[SystemCommand]:
        """The palette's commands that apply now: the focused pane's, jump and stats, the app's
        `ingest` ones, then the open session's signals and sync (as the keys' `check_action`)."""
        yield from self._pane_commands()
        yield SystemCommand("Jump to session", "By title, id or project (key p)", self.action_jump)
        conn = self.archive_state.conn
        if conn is not None:
            yield SystemCommand(
                "Stats: tokens and cost",
                "By day, week, month, project, model, agent or session (key S)",
                self.action_stats,
            )
        yield from ingest
        if self.open_session_id is not None and conn is not None:
            yield SystemCommand(
                "Signals of the session",
                "Retry loops, refused calls, dead ends, … (key W)",
                self.action_signals,
            )
        if self.archive_state.can_sync:
            yield SystemCommand(
                "Sync with the hub",
                "Push and pull (the first time: choose the projects shared) (key U)",
                self.action_sync,
            )

    def _pane_commands(self) -> Iterator[SystemCommand]:
        """The palette's commands for the focused pane."""
        pane = self.focused_pane
        view = self.query_one(MessageView)
        if pane == "messages" and view.session_id:
            yield SystemCommand(
                "Messages: expand or collapse all tool calls", "Key e", view.action_toggle_all
            )
            yield SystemCommand("Messages: show the raw JSON of this message", "Key r", view.action_raw)
            yield SystemCommand("Messages: copy the text under the cursor", "Key y", view.action_copy)
            yield SystemCommand("Messages: go to the last message", "Key G", view.action_last)
            yield SystemCommand("Messages: find in this session", "Key Ctrl+F", view.action_find)
            yield SystemCommand("Messages: next failed tool call", "Key !", view.action_next_failure)
            yield SystemCommand("Messages: files this session changed", "Key c", view.action_files_changed)
            if self.archive_state.conn is not None:
                yield SystemCommand("Messages: tag this message", "Key t", self.action_tag)
                yield SystemCommand("Messages: note this message", "Key a", self.action_note_message)
        if pane in ("projects", "sessions"):
            verb = "leave out" if self.show_hidden else "list"
            yield SystemCommand(
                f"{PANE_NAMES[pane]}: {verb} the hidden sessions and projects", "Key H", self.toggle_hidden
            )
        if pane == "projects" and self.query_one(ProjectList).current is not None:
            projects = self.query_one(ProjectList)
            yield SystemCommand(
                "Projects: hide this project (or show it again)", "Key h", projects.action_hide
            )
        if pane == "sessions":
            tree = self.query_one(SessionTree)
            yield SystemCommand("Sessions: hide this session (or show it again)", "Key h", tree.action_hide)
            verb = "hide" if tree.include_warmup else "show"
            yield SystemCommand(f"Sessions: {verb} Warmup agents", "Key w", tree.action_toggle_warmup)
            yield SystemCommand(
                "Sessions: filter by title, id, branch or prompt", "Key Ctrl+F", tree.action_filter
            )
            yield SystemCommand("Sessions: next sort order", "Key s", tree.action_cycle_sort)
            yield SystemCommand("Sessions: next agent", "Key a", tree.action_cycle_agent)
            verb = "show" if tree.view.hide_short else "hide"
            yield SystemCommand(
                f"Sessions: {verb} sessions of fewer than two messages", "Key .", tree.action_toggle_short
            )
            if tree.cursor_node is not None and tree.cursor_node.data and tree.cursor_node.data.session:
                yield SystemCommand("Sessions: copy the session id", "Key y", tree.action_copy_id)
                yield SystemCommand("Sessions: copy the session's file path", "Key Y", tree.action_copy_path)

    # ------------------------------------------------------------------ the ingest bar

    def ingest_started(self, status: str) -> None:
        # the bar's own display, not a class of the screen: each change of one restyles every
        # widget on the screen, twice an ingest (and a watch starts one for each new file)
        self.query_one("#ingest-bar").display = True
        self._show_empty(False)
        self._status = status
        self.query_one("#ingest-label", Label).update(f"{status}…")
        self.query_one(ProgressBar).update(total=None, progress=0)

    def ingest_ended(self) -> None:
        self.query_one("#ingest-bar").display = False

    def show_status(self, text: str) -> None:
        self._status = text
        self.query_one("#ingest-label", Label).update(f"{text}…")

    def ingest_progressed(self, p: Progress, *, load_reader: bool) -> None:
        """How far the ingest is; while it reads files, the panes show what is in so far."""
        if not self.query(ProgressBar):  # none: the app is quitting, its screen taken down
            return
        self._show_progress(p)
        if not p.phase.after_files:
            self._refresh_while_loading(load_reader=load_reader)

    def _show_progress(self, p: Progress) -> None:
        """The bar and its label: files and bytes, or how much of the search index is built."""
        from ..core.ingest.pipeline import Phase

        bar = self.query_one(ProgressBar)
        label = self.query_one("#ingest-label", Label)
        if p.phase.after_files:
            bar.update(total=max(1, p.phase_total), progress=p.phase_done)
            share = f"{p.phase_done / max(1, p.phase_total):.0%}"
            label.update(
                f"Indexing for search: {share} · browse meanwhile · Esc pauses"
                if p.phase is Phase.INDEXING
                else f"Embedding turns for search by meaning: {share} · browse meanwhile"
                if p.phase is Phase.EMBEDDING
                else f"Finding signals in every session: {share}",
                layout=False,  # its size is fixed: no layout of the whole screen 20 times a second
            )
            return
        bar.update(total=max(1, p.bytes_total), progress=p.bytes_done)
        label.update(
            f"{self._status}: {p.files_done:,}/{p.files_total:,} files · "
            f"{p.bytes_done / 1e6:,.1f}/{p.bytes_total / 1e6:,.1f} MB · Esc cancels",
            layout=False,
        )

    def _refresh_while_loading(self, *, load_reader: bool) -> None:
        """During an ingest, re-read the panes: every 3 s once a first load shows something (a
        refresh takes the GIL and the database from the load), else more often."""
        shown = bool(self.query_one(ProjectList).projects)
        interval = (3.0 if shown else 0.25) if load_reader else 0.7
        if time.monotonic() - self._last_pane_refresh > interval:
            self.refresh_panes()


def subtitle(
    session: SessionSummary, count: int, rewinds: int, rewrites: list[archive.Version] | None = None
) -> str:
    """The message view's subtitle for a whole session: size, branches, tokens, model, and when its
    files were rewritten (what the rewrite took out is kept: `threadloom restore --as-of`)."""
    text = count_of(count, "message")
    if rewinds:
        text += f" · {rewinds + 1} branches"
    if rewrites:
        removed = sum(v.removed for v in rewrites)
        text += (
            f" · rewritten {short_when(rewrites[-1].superseded_at)}: {count_of(removed, 'record')} kept aside"
        )
    return text + tokens_and_model(session)


def tokens_and_model(session: SessionSummary) -> str:
    """' · 215k tokens · $0.69 · opus-4-1' (what is unknown is left out, no separator hanging)."""
    parts = (f"{session.tokens_text} tokens", session.cost_text, short_model(session.model))
    return "".join(f" · {part}" for part in parts if part)
