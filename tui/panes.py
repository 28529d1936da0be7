"""The two list panes: projects (an OptionList) and the session tree (a lazily expanded Tree).

Both draw only the rows on screen (PERF.md: OptionList 10k in 0.26 s, Tree 10k in 0.32 s);
children of a session are read when its node is first expanded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.css.scalar import Unit
from textual.message import Message
from textual.widgets import Input, OptionList, Tree
from textual.widgets.option_list import Option
from textual.widgets.tree import TreeNode

from ..core.actions.hidden import MARK
from ..core.base.text import count_of, flat, human_tokens, short_when, shorter_when
from ..core.read import browse
from ..core.read.browse import Branch, ProjectRow, Segment, SessionSummary
from ..core.read.query import SORT_ORDERS, SessionView, agents_of, display_title, money
from .render import short_model

STATUS_MARK = {
    "completed": ("✓", "green"),
    "failed": ("✗", "red"),
    "rejected": ("⊘", "yellow"),
    "interrupted": ("⏹", "yellow"),
    "pending": ("…", "dim"),
}


# the session list's columns, each padded to its width so that rows line up: last activity,
# messages, tokens, model (a list where no session has a date has no date column)
DATE_WIDTH, MESSAGES_WIDTH, TOKENS_WIDTH, MODEL_WIDTH = 12, 10, 9, 10
TITLE_ROOM = 28  # a title keeps this much before a column gives way
TITLE_ROOM_ALONE = 24  # a row with less room than this for a title keeps one fact, not a column
EXTRA_TITLE_ROOM = 12  # a row's own facts (a subagent's type, "fork") give way before the title has less

PROMPT_LINES = 4  # a project's rows in the list: name, counts, path and a blank line


class ProjectList(OptionList):
    """Projects, most recently active first: name, counts and age, then the real path."""

    BINDINGS = [
        Binding("down,j", "cursor_down", "Down", show=False, id="projects.down"),
        Binding("up,k", "cursor_up", "Up", show=False, id="projects.up"),
        Binding("home,g", "first", "First", show=False, id="projects.first"),
        Binding("end,G", "last", "Last", show=False, id="projects.last"),
        Binding("pagedown", "page_down", "Page down", show=False, id="projects.page-down"),
        Binding("pageup", "page_up", "Page up", show=False, id="projects.page-up"),
        Binding(
            "enter,right,l", "select", "Open", id="projects.open", tooltip="Show the sessions of this project"
        ),
        Binding(
            "h",
            "hide",
            "Hide",
            show=False,
            id="projects.hide",
            tooltip="Hide this project from the list (not from the archive); on a hidden one, show it again",
        ),
        Binding(
            "H",
            "toggle_hidden",
            "Show hidden",
            show=False,
            id="projects.show-hidden",
            tooltip="Show or leave out the hidden projects and sessions (marked ⊘)",
        ),
        Binding("left", "scroll_left", "Scroll left", show=False, id="projects.scroll-left"),
        Binding("ctrl+pageup", "page_left", "Page left", show=False, id="projects.page-left"),
        Binding("ctrl+pagedown", "page_right", "Page right", show=False, id="projects.page-right"),
    ]

    class HideAsked(Message):
        """h: the project under the cursor hidden, or shown again (`hidden` False) when it was."""

        def __init__(self, project: ProjectRow, hidden: bool) -> None:
            super().__init__()
            self.project = project
            self.hidden = hidden

    class ShowHiddenAsked(Message):
        """H: list the hidden projects and sessions too, or leave them out again."""

    def __init__(self, *, now: Callable[[], float], id: str | None = None) -> None:
        super().__init__(id=id)
        self.now = now
        self.projects: list[ProjectRow] = []
        self.hidden: frozenset[str] = frozenset()  # the paths of the hidden projects listed (marked)
        self.hidden_listed = False  # H: hidden projects are listed (marked), not left out
        self._width = 26

    def set_projects(
        self,
        projects: list[ProjectRow],
        hidden: frozenset[str] = frozenset(),
        *,
        hidden_listed: bool = False,
        keep: str | None = None,
    ) -> None:
        """Replace the rows, keeping the highlighted project (or the one at `keep`) if it is still
        there; `hidden`: the paths of those listed though hidden (marked), `hidden_listed`: whether
        hidden ones are."""
        if keep is None and self.current is not None:
            keep = self.current.path
        self.projects = projects
        self.hidden = hidden
        self.hidden_listed = hidden_listed
        self._width = self._prompt_width()
        self.clear_options()
        self.add_options([Option(self._prompt(p), id=p.path) for p in projects])
        paths = [p.path for p in projects]
        if projects:
            self.highlighted = paths.index(keep) if keep in paths else 0
        self.border_title = f"Projects ({len(projects)})"

    def _prompt_width(self) -> int:
        width = self.scrollable_content_region.width
        region = self.scrollable_content_region
        if width and not self.show_vertical_scrollbar and PROMPT_LINES * len(self.projects) > region.height:
            # the rows about to be added overflow the pane: its scrollbar appears after they are
            # drawn at this width, and every row would wrap (no resize follows to mend it)
            width -= self.styles.scrollbar_size_vertical
        declared = self.styles.width
        if not width and declared is not None and declared.unit == Unit.CELLS:
            # not laid out yet (the first load): the width the stylesheet gives, less the scrollbar
            # when the rows cannot fit the terminal, so the first frame is drawn at its final width
            # rather than redrawn once that is known (a guess that is off is mended in on_resize)
            width = int(declared.value) - self.styles.gutter.width
            if PROMPT_LINES * len(self.projects) > self.app.size.height - 3:  # footer and borders
                width -= self.styles.scrollbar_size_vertical
        return max(16, (width or 28) - 2)

    def on_resize(self) -> None:
        if self.projects and self._prompt_width() != self._width:
            self.set_projects(self.projects, self.hidden, hidden_listed=self.hidden_listed)

    def action_hide(self) -> None:
        """h: the project hidden (or shown again) in the list at once, not when the screen has
        heard: a second h pressed before then showed again the project the first had hidden."""
        current = self.current
        if current is None:
            return
        path, hidden = current.path, current.path not in self.hidden
        if hidden and not self.hidden_listed:  # left out: the cursor on the project after it
            rest = [p for p in self.projects if p.path != path]
            after = rest[min(self.highlighted or 0, len(rest) - 1)].path if rest else None
            self.set_projects(rest, self.hidden, keep=after)
        else:  # marked, or its mark taken off
            marked = self.hidden | {path} if hidden else self.hidden - {path}
            self.set_projects(self.projects, marked, hidden_listed=self.hidden_listed)
        self.post_message(self.HideAsked(current, hidden))

    def action_toggle_hidden(self) -> None:
        self.post_message(self.ShowHiddenAsked())

    @property
    def current(self) -> ProjectRow | None:
        if self.highlighted is None or self.highlighted >= len(self.projects):
            return None
        return self.projects[self.highlighted]

    def _prompt(self, p: ProjectRow) -> Text:
        width = self._width
        age = short_when(p.last_activity, self.now())
        name = flat(p.name)  # a folder's name is anyone's text: drawn as text
        if p.path in self.hidden:
            name = f"{MARK} {name}"
        if len(name) + len(age) + 2 > width:
            age = shorter_when(age)  # "12 Jun" (this year), "Jun 2025" before the name gives way
        first = Text(_fit(name, width - len(age) - 2), style="bold")
        first.append(" " * max(2, width - first.cell_len - len(age)))
        first.append(age, style="dim")
        second = Text(f"{p.session_count} session{'s' if p.session_count != 1 else ''}", style="#87d787")
        # the project's totals (its subagents' too), then its agents, as far as they fit
        cost = next((c for c in _cost_texts(p) if second.cell_len + 3 + len(c) <= width), "")
        totals = [(cost, "#d7af5f"), (f"{human_tokens(p.tokens)} tok" if p.tokens else "", "dim")]
        for part, style in totals:
            if part and second.cell_len + 3 + len(part) <= width:
                second.append(f" · {part}", style=style)
        agents = f" · {', '.join(p.agents)}"
        room = width - second.cell_len
        if len(agents) <= room or room >= 12:  # cut, but never to a letter or two
            second.append(_fit(agents, room), style="#5f87af")
        third = Text(_fit(flat(_home(p.path)), width, left=True), style="dim")
        return Text("\n").join([first, second, third, Text("")])


def _cost_texts(p: ProjectRow) -> list[str]:
    """The project's cost as written, then shorter (whole dollars, "+?") for a narrow pane: the
    cost is the figure a project row is read for, so it gives way last."""
    full = p.cost_text
    if not full or p.cost_usd is None:
        return [full]
    short = f"${p.cost_usd:,.0f}" if p.cost_usd >= 10 else money(p.cost_usd)
    return [full, short + ("+?" if p.unpriced_messages else "")]


def _fit(text: str, width: int, *, left: bool = False) -> str:
    """Cut to `width` cells with an ellipsis (at the start for paths, whose end matters)."""
    if len(text) <= width:
        return text
    return "…" + text[-(width - 1) :] if left else text[: width - 1] + "…"


def _home(path: str) -> str:
    import os

    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home != "/" and path.startswith(home + "/") else path


@dataclass(slots=True)
class NodeRef:
    """What a tree node stands for; `seqs` set for branches, `start_seq` for segments."""

    kind: str  # session | branch | segment | loading | note (the filtered list's "No match")
    session: SessionSummary | None = None
    branch: Branch | None = None
    segment: Segment | None = None
    loaded: bool = False


class SessionTree(Tree[NodeRef]):
    """Sessions of a project; below each: branches, compaction segments and subagents (nested)."""

    BINDINGS = [
        Binding("down,j", "cursor_down", "Down", show=False, id="sessions.down"),
        Binding("up,k", "cursor_up", "Up", show=False, id="sessions.up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="sessions.page-down"),
        Binding("pageup", "page_up", "Page up", show=False, id="sessions.page-up"),
        Binding("home,g", "scroll_home", "First", show=False, id="sessions.first"),
        Binding("end,G", "scroll_end", "Last", show=False, id="sessions.last"),
        Binding("enter", "select_cursor", "Open", id="sessions.open", tooltip="Read this session or branch"),
        Binding(
            "right,l",
            "expand",
            "Expand",
            show=False,
            id="sessions.expand",
            tooltip="Show branches, compaction segments and subagents",
        ),
        Binding("left", "collapse", "Collapse", show=False, id="sessions.collapse"),
        Binding(
            "h",
            "hide",
            "Hide",
            show=False,
            id="sessions.hide",
            tooltip="Hide this session from the list (not from the archive); on a hidden one, show it again",
        ),
        Binding(
            "H",
            "toggle_hidden",
            "Show hidden",
            show=False,
            id="sessions.show-hidden",
            tooltip="Show or leave out the hidden sessions and projects (marked ⊘)",
        ),
        Binding("space", "toggle_node", "Expand/collapse", show=False, id="sessions.toggle"),
        Binding(
            "ctrl+f",
            "filter",
            "Filter",
            id="sessions.filter",
            tooltip="Filter the list as you type: every word in the title, id, git branch or first prompt",
        ),
        Binding(
            "escape",
            "clear_filter",
            "Clear filter",
            show=False,
            id="sessions.clear-filter",
            tooltip="Show every session again (the typed filter is cleared)",
        ),
        Binding(
            "s",
            "cycle_sort",
            "Sort",
            show=False,
            id="sessions.sort",
            tooltip="Sort by recent activity, oldest first, most messages, most tokens or longest",
        ),
        Binding(
            "a",
            "cycle_agent",
            "Agent",
            show=False,
            id="sessions.agent",
            tooltip="Only one agent's sessions: each agent of this project in turn, then all",
        ),
        Binding(
            "full_stop",
            "toggle_short",
            "Hide short",
            show=False,
            id="sessions.hide-short",
            tooltip="Hide or show sessions of fewer than two messages (remembered)",
        ),
        Binding(
            "y", "copy_id", "Copy id", show=False, id="sessions.copy-id", tooltip="Copy the session's full id"
        ),
        Binding(
            "Y",
            "copy_path",
            "Copy path",
            show=False,
            id="sessions.copy-path",
            tooltip="Copy the path of the session's file",
        ),
        Binding("w", "toggle_warmup", "Warmups", id="sessions.warmup", tooltip="Show or hide Warmup agents"),
        Binding("shift+space", "toggle_expand_all", "Expand all below", show=False, id="sessions.expand-all"),
        Binding(
            "shift+up",
            "cursor_previous_sibling",
            "Previous sibling",
            show=False,
            id="sessions.previous-sibling",
        ),
        Binding("shift+down", "cursor_next_sibling", "Next sibling", show=False, id="sessions.next-sibling"),
        Binding("shift+left", "cursor_parent", "Parent", show=False, id="sessions.parent"),
        Binding(
            "shift+right",
            "cursor_parent_next_sibling",
            "Parent's next sibling",
            show=False,
            id="sessions.parent-next",
        ),
        Binding("ctrl+pageup", "page_left", "Page left", show=False, id="sessions.page-left"),
        Binding("ctrl+pagedown", "page_right", "Page right", show=False, id="sessions.page-right"),
    ]

    class FilterRequested(Message):
        """Ctrl+F: the screen opens the filter box over the list."""

    class ViewCleared(Message):
        """Esc in the list: the typed filter was cleared (the screen hides its box)."""

    class HideAsked(Message):
        """h: the session under the cursor hidden, or shown again (`hidden` False) when it was."""

        def __init__(self, session: SessionSummary, hidden: bool) -> None:
            super().__init__()
            self.session = session
            self.hidden = hidden

    class ShortSessionsToggled(Message):
        """`.`: sessions of fewer than two messages were hidden (or shown); the screen remembers it."""

        def __init__(self, hidden: bool) -> None:
            super().__init__()
            self.hidden = hidden

    def __init__(self, *, now: Callable[[], float], id: str | None = None) -> None:
        super().__init__("sessions", id=id)
        self.show_root = False
        self.auto_expand = False
        self.guide_depth = 3
        self.now = now
        self.conn: sqlite3.Connection | None = None
        self.project: str | None = None
        self.include_warmup = False
        self.all_sessions: list[SessionSummary] = []  # the project's, as read
        self.sessions: list[SessionSummary] = []  # those listed: `view` applied to `all_sessions`
        self.dates_listed = True  # some listed session has a date: undated rows keep its column, blank
        self.view = SessionView()
        self._adding = False  # `_fill` is adding rows: invalidate once after them
        self._fallback = 0  # the row the cursor goes to when its session is no longer listed
        self._width_for: tuple[object, bool] | None = None  # the size `_width` was read at
        self._width = 60

    # ------------------------------------------------------------------ filling

    def show_project(
        self, conn: sqlite3.Connection | None, project: str | None, *, keep_state: bool = False
    ) -> bool:
        """Fill the tree with a project's sessions (none without a project or a connection, as
        after a failed first load); returns False when nothing changed."""
        self.conn = conn
        sessions = (
            browse.project_sessions(conn, project, include_warmup=self.include_warmup)
            if conn is not None and project is not None
            else []
        )
        same_project = project == self.project
        if same_project and keep_state and _signature(sessions) == _signature(self.all_sessions):
            return False
        expanded = self._expanded_ids() if same_project else set()
        cursor = self._cursor_id() if same_project else None
        self.project, self.all_sessions = project, sessions
        if self.view.agent is not None and self.view.agent not in agents_of(sessions):
            self.view.agent = None  # another project, without that agent: all of its sessions
        self._fill(expanded, cursor)
        return True

    def _fill(self, expanded: set[str], cursor: str | None, *, changed: bool = True) -> None:
        """List the project's sessions as the view has them (filtered, sorted). `changed`: the
        project's sessions were read again; else a view that lists the same rows (a letter typed
        that leaves out nothing more) only retitles the pane."""
        shown = self.view.apply(self.all_sessions)
        if not changed and [s.id for s in shown] == [s.id for s in self.sessions] and self.root.children:
            self.border_title = self.title_text()
            return
        self.sessions = shown
        self.dates_listed = any(last_activity(s) for s in shown)  # else no row has a date column
        self.clear()
        self._adding = True  # one invalidation for the lot, not one per row (see `_invalidate`)
        try:
            for session in self.sessions:
                self._add_session(self.root, session)
        finally:
            self._adding = False
            self._invalidate()
        if not self.sessions and self.all_sessions:
            narrowed = self.view.narrows or not self.view.hidden
            # each fits the narrowest pane
            note = Text(
                "No match: Esc clears" if narrowed else "All hidden: H shows them", style="dim italic"
            )
            self.root.add_leaf(note, NodeRef("note"))
        self.border_title = self.title_text()
        self._restore(expanded, cursor)

    def title_text(self) -> str:
        """'Sessions (12 of 40) · most tokens · codex': how many are listed of how many, then the
        order and the agent when they are not the defaults."""
        hidden = sum(1 for s in self.all_sessions if s.id in self.view.hidden)
        listable = (
            self.all_sessions
            if self.view.show_hidden
            else [s for s in self.all_sessions if s.id not in self.view.hidden]
        )
        shown, total = len(self.sessions), len(listable)
        text = f"Sessions ({shown} of {total})" if self.view.narrows else f"Sessions ({total})"
        if self.view.order != "recent":
            text += f" · {ORDER_NAMES[self.view.order]}"
        if self.view.agent is not None:
            text += f" · {self.view.agent}"
        if hidden:
            text += f" · {hidden} hidden{' (shown)' if self.view.show_hidden else ''}"
        return text

    def set_view(self, **changes: object) -> None:
        """Change how the list is shown (text, order, agent, hide_short), keeping the cursor on its
        session where that is still listed, and what was expanded."""
        marked_before = self.view.hidden
        for name, value in changes.items():
            setattr(self.view, name, value)
        # where the cursor was among the rows: it stays there when its session is left out (hidden)
        top = self.cursor_node
        while top is not None and top.parent is not None and top.parent is not self.root:
            top = top.parent
        self._fallback = self.root.children.index(top) if top is not None and top in self.root.children else 0
        try:
            self._fill(self._expanded_ids(), self._cursor_id(), changed=False)
        finally:
            self._fallback = 0
        if self.view.hidden != marked_before:
            # rows listed before and after keep their drawn lines: their ⊘ mark is drawn anew
            self._invalidate()

    def _invalidate(self) -> None:
        """Textual's Tree drops its line cache and schedules a layout for every node added: 4,000
        sessions listed (a project opened, a letter typed into the filter) took a second that way.
        While `_fill` adds its rows this waits, and `_fill` invalidates once after them."""
        if not getattr(self, "_adding", False):  # Tree's own __init__ invalidates before ours runs
            super()._invalidate()

    def process_label(self, label: str | Text) -> Text:
        """A session's label is its title on one line (`core.read.browse` flattens it): kept as it is,
        without the copy Textual's split into lines makes of every label."""
        if isinstance(label, Text) and "\n" not in label.plain:
            return label
        return super().process_label(label)

    def _add_session(self, parent: TreeNode[NodeRef], session: SessionSummary) -> TreeNode[NodeRef]:
        node = parent.add(
            self._label(session), NodeRef("session", session), allow_expand=session.has_children
        )
        if session.has_children:
            node.add_leaf(Text("loading…", style="dim italic"), NodeRef("loading"))
        return node

    def _label(self, s: SessionSummary) -> Text:
        return Text(display_title(s))

    def _row_width(self, node: TreeNode[NodeRef]) -> int:
        depth, parent = 0, node.parent
        while parent is not None and parent is not self.root:
            depth, parent = depth + 1, parent.parent
        return max(24, self._pane_width() - depth * self.guide_depth - 3)

    def _pane_width(self) -> int:
        """The rows' room, read once a size: the Tree asks every row's width as it lays them out
        (2,957 asks, 57 ms, for a project of 984 sessions), and the region is looked up each time."""
        key = (self.outer_size, self.show_vertical_scrollbar)
        if self._width_for == key:
            return self._width
        width = self.scrollable_content_region.width
        if width:  # laid out: kept for this size (not before, when the pane is nowhere yet)
            self._width_for, self._width = key, width
        return width or 60

    def get_label_width(self, node: TreeNode[NodeRef]) -> int:
        """Session rows are as wide as the pane: the Tree asks this of every row to size itself, and
        rendering 600 labels for it was a third of the first frame."""
        ref = node.data
        if ref is None or ref.session is None or ref.kind == "loading":
            return super().get_label_width(node)
        return self._row_width(node) + 2  # the expand icon

    def render_label(self, node: TreeNode[NodeRef], base_style: Style, style: Style) -> Text:
        """Session rows are fitted to the pane: the title gives way, the facts stay visible."""
        ref = node.data
        if ref is None or ref.session is None or ref.kind == "loading":
            return super().render_label(node, base_style, style)
        width = self._row_width(node)
        if ref.branch is not None:
            b = ref.branch
            head = Text(f"↳ branch {b.number} ", style="bold #5fafaf")
            head.append(b.label or "(no prompt)")
            extras = [("latest", "#87d787")] if b.active else []
            label = self._fit_dated(head, extras, b.started_at, width)
        elif ref.segment is not None:
            g = ref.segment
            head = Text(f"✂ segment {g.number} ", style="bold #87afaf")
            head.append(f"messages {g.start_seq + 1:,}–{g.end_seq + 1:,}")
            label = self._fit_dated(head, [], g.started_at, width)
        else:
            label = session_label(
                ref.session,
                width,
                self.now(),
                hidden=ref.session.id in self.view.hidden,
                dates=self.dates_listed,
                kept=self._columns_kept(),
            )
        label.stylize(style)
        icon = (
            (self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE) if node.allow_expand else "  "
        )
        return Text.assemble((icon, base_style + Style(bold=True)), label)

    def _columns_kept(self) -> int:
        """The columns a top-level row has room for: every row keeps those, however deep, so that
        they line up (a subagent's row, narrower by its indent, kept fewer, each one moved right)."""
        return columns_kept(max(24, self._pane_width() - 3), self.dates_listed)

    def _fit_dated(self, head: Text, extras: list[tuple[str, str]], when: int | None, width: int) -> Text:
        """A branch's or segment's row: its date in the sessions' date column, the others blank."""
        date = (short_when(when, self.now()), "dim")
        if not self.dates_listed:  # no date column: said after the row's own facts
            return fit_row(head, [*extras, date], blank_columns(False), width, self._columns_kept())
        date = (date[0].ljust(DATE_WIDTH), "dim")
        return fit_row(head, extras, [date, *blank_columns(False)], width, self._columns_kept())

    def load_children(self, node: TreeNode[NodeRef]) -> None:
        """Read a session node's branches, segments and subagents (once)."""
        ref = node.data
        if ref is None or ref.kind != "session" or ref.loaded or self.conn is None or ref.session is None:
            return
        ref.loaded = True
        node.remove_children()
        session = ref.session
        for branch in browse.branches(self.conn, session.id):
            node.add_leaf(f"branch {branch.number}", NodeRef("branch", session, branch=branch))
        for segment in browse.compaction_segments(self.conn, session.id, session.message_count):
            node.add_leaf(f"segment {segment.number}", NodeRef("segment", session, segment=segment))
        for child in browse.child_sessions(self.conn, session.id, include_warmup=self.include_warmup):
            if not self.view.hides(child):
                self._add_session(node, child)

    def facts(self, node: TreeNode[NodeRef] | None, room: int | None = None) -> str:
        """The highlighted session's facts, for the pane's subtitle when rows are too narrow; in
        `room` columns, whole facts only: the model gives way first, then the date (its row shows
        it), then the tokens."""
        if node is None or node.data is None or node.data.session is None:
            return ""
        s = node.data.session
        when, tokens, model = (
            short_when(last_activity(s), self.now()),
            f"{s.tokens_text} tok",
            short_model(s.model),
        )
        parts = [p for p in (when, count_of(s.message_count, "msg"), tokens, s.cost_text, model) if p]
        for part in (model, when, tokens):
            if room is None or len(" · ".join(parts)) <= room:
                break
            if part in parts:
                parts.remove(part)
        return " · ".join(parts)

    @property
    def facts_room(self) -> int | None:
        """The columns of the pane's subtitle: its width but the corners, a line and a space each
        side (None before it is laid out)."""
        room = self.outer_size.width - 6
        return room if room > 0 else None

    def show_facts(self, node: TreeNode[NodeRef] | None) -> None:
        """`node`'s facts under the pane, fitted to it: a border cuts what is too long where it
        ends, and a cost of $0.0069 read "$0.006…"."""
        self.border_subtitle = Text(self.facts(node, self.facts_room))  # the log's: not markup

    def on_resize(self) -> None:
        self.show_facts(self.cursor_node)

    def _on_tree_node_expanded(self, event: Tree.NodeExpanded[NodeRef]) -> None:
        self.load_children(event.node)

    # ------------------------------------------------------------------ state

    def _expanded_ids(self) -> set[str]:
        out = set()
        stack = list(self.root.children)
        while stack:
            node = stack.pop()
            if node.is_expanded and node.data and node.data.kind == "session" and node.data.session:
                out.add(node.data.session.id)
                stack.extend(node.children)
        return out

    def _cursor_id(self) -> str | None:
        node = self.cursor_node
        if node is None or node.data is None or node.data.session is None:
            return None
        return node.data.session.id

    def _restore(self, expanded: set[str], cursor: str | None) -> None:
        stack = list(self.root.children)
        target = None
        while stack:
            node = stack.pop(0)
            ref = node.data
            if ref is None or ref.session is None or ref.kind != "session":
                continue
            if ref.session.id == cursor:
                target = node
            if ref.session.id in expanded:
                self.load_children(node)
                node.expand()
                stack.extend(node.children)
        if target is None and self.root.children:
            target = self.root.children[min(self._fallback, len(self.root.children) - 1)]
        if target is None:
            return
        # now, so that a key pressed next moves from there: Textual numbers the new rows lazily, and
        # a node without a number would send the cursor to the top (`w` lost the session it was on,
        # and a key pressed before the next refresh was undone by a deferred move); once the rows
        # are laid out it is scrolled into view
        if self.last_line >= 0:  # reading it numbers the rows
            self.move_cursor(target)
        self.call_after_refresh(self.scroll_to_node, target, False)

    def move_cursor(self, node: TreeNode[NodeRef] | None, animate: bool = False) -> None:
        super().move_cursor(node, animate)
        self.show_facts(node)

    def reveal(self, chain: list[str]) -> TreeNode[NodeRef] | None:
        """Expand the path to a (sub)session, move the cursor onto it and return its node."""
        nodes = list(self.root.children)
        found: TreeNode[NodeRef] | None = None
        for sid in chain:
            found = next(
                (
                    n
                    for n in nodes
                    if n.data and n.data.session and n.data.kind == "session" and n.data.session.id == sid
                ),
                None,
            )
            if found is None:
                return None
            if sid != chain[-1]:
                self.load_children(found)
                found.expand()
                nodes = list(found.children)
        if found is not None:
            self.move_cursor(found)
            self.scroll_to_node(found, animate=False)
        return found

    def action_expand(self) -> None:
        node = self.cursor_node
        if node is not None and node.allow_expand:
            self.load_children(node)
            node.expand()

    def action_collapse(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)

    # ------------------------------------------------------------------ the view: filter, order, agent

    def action_filter(self) -> None:
        self.post_message(self.FilterRequested())

    def action_clear_filter(self) -> None:
        self.set_view(text="")
        self.post_message(self.ViewCleared())

    def action_cycle_sort(self) -> None:
        order = SORT_ORDERS[(SORT_ORDERS.index(self.view.order) + 1) % len(SORT_ORDERS)]
        self.set_view(order=order)
        self.notify(f"Sorted by {ORDER_NAMES[order]}", timeout=2)

    def action_cycle_agent(self) -> None:
        choices: list[str | None] = [*agents_of(self.all_sessions), None]
        current = choices.index(self.view.agent) if self.view.agent in choices else len(choices) - 1
        agent = choices[(current + 1) % len(choices)]
        self.set_view(agent=agent)
        self.notify(f"{agent} sessions only" if agent else "Sessions of every agent", timeout=2)

    def action_toggle_short(self) -> None:
        self.set_view(hide_short=not self.view.hide_short)
        self.post_message(self.ShortSessionsToggled(self.view.hide_short))
        self.notify(
            "Sessions of fewer than two messages hidden" if self.view.hide_short else "Every session shown",
            timeout=2,
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":  # else Esc is the app's (back, cancel the ingest)
            return bool(self.view.text)
        return True

    # ------------------------------------------------------------------ hiding

    def action_hide(self) -> None:
        node = self.cursor_node
        ref = node.data if node is not None else None
        if ref is None or ref.session is None or ref.kind != "session":
            self.notify("h hides a session (or, in the projects, a project)", timeout=2)
            return
        # shown so at once, not when the screen has heard: a second h pressed before then acted on
        # the row it was pressed on, and showed again the session the first had just hidden
        session_id = ref.session.id
        hidden = session_id not in self.view.hidden
        self.set_view(hidden=self.view.hidden | {session_id} if hidden else self.view.hidden - {session_id})
        self.post_message(self.HideAsked(ref.session, hidden))

    def action_toggle_hidden(self) -> None:
        self.post_message(ProjectList.ShowHiddenAsked())

    # ------------------------------------------------------------------ copy

    def action_copy_id(self) -> None:
        session = self._cursor_session()
        if session is not None:
            self._copy(session.id, "the session id")

    def action_copy_path(self) -> None:
        session = self._cursor_session()
        if session is None:
            return
        if not session.file_path:
            self.notify("No file is recorded for this session", severity="warning", timeout=3)
            return
        self._copy(session.file_path, "the session's file path")

    def _cursor_session(self) -> SessionSummary | None:
        node = self.cursor_node
        return node.data.session if node is not None and node.data is not None else None

    def _copy(self, text: str, what: str) -> None:
        """The system clipboard first, else the terminal's (OSC 52); the toast says which, and what."""
        from ..core.base import clipboard

        how = clipboard.copy(text)
        if how is None:
            self.app.copy_to_clipboard(text)
            how = "terminal's clipboard (OSC 52)"
        self.notify(f"Copied {what} to the {how}: {text}", title="Copied", timeout=4)

    def action_toggle_warmup(self) -> None:
        self.include_warmup = not self.include_warmup
        if self.conn is not None:
            self.show_project(self.conn, self.project)
        self.notify("Warmup agents shown" if self.include_warmup else "Warmup agents hidden", timeout=2)


ORDER_NAMES = {
    "recent": "recent activity",
    "oldest": "oldest first",
    "messages": "most messages",
    "tokens": "most tokens",
    "duration": "longest",
}


class FilterInput(Input):
    """The filter box over the sessions list: narrows it as you type; Enter or ↓ goes to the
    list, Esc clears the filter and closes the box."""

    BINDINGS = [
        Binding("escape", "close", "Clear filter", id="sessions.filter-close", tooltip="Clear and close"),
        Binding("down,enter", "to_list", "To the list", show=False, id="sessions.filter-done"),
    ]

    class Closed(Message):
        """Esc: the filter is cleared and the box hidden."""

    class Done(Message):
        """Enter or ↓: the list takes the keys, the filter stays."""

    def action_close(self) -> None:
        self.post_message(self.Closed())

    def action_to_list(self) -> None:
        self.post_message(self.Done())


def last_activity(s: SessionSummary) -> int | None:
    """When the session was last written to: what the tree sorts by, so what its rows show."""
    return s.last_activity


def columns_kept(width: int, dates: bool = True) -> int:
    """How many of the list's columns (date, messages, tokens, model) a top-level row of `width`
    has room for, each one given way from the right while the title would have less than
    TITLE_ROOM; 0 when not even one leaves TITLE_ROOM_ALONE (the row says one fact, unpadded)."""
    widths = [*([DATE_WIDTH] if dates else []), MESSAGES_WIDTH, TOKENS_WIDTH, MODEL_WIDTH]
    kept = len(widths)
    while kept > 1 and width - sum(w + 2 for w in widths[:kept]) < TITLE_ROOM:
        kept -= 1
    return 0 if width - sum(w + 2 for w in widths[:kept]) < TITLE_ROOM_ALONE else kept


def blank_columns(dates: bool) -> list[tuple[str, str]]:
    """The columns a row with nothing to say in them keeps blank (a branch's messages, tokens and
    model), the date's too when `dates`."""
    widths = [*([DATE_WIDTH] if dates else []), MESSAGES_WIDTH, TOKENS_WIDTH, MODEL_WIDTH]
    return [(" " * w, "") for w in widths]


def session_label(
    s: SessionSummary,
    width: int,
    now: float | None = None,
    *,
    hidden: bool = False,
    dates: bool = True,
    kept: int | None = None,
) -> Text:
    """Title (or a subagent's description, type and status), then last activity, messages, tokens
    and model, each padded to a column of its own so that the rows line up; ⊘ first when the
    user hid it (listed while hidden ones are shown). `dates`: some row of the list has a date,
    so an undated one keeps the column blank, else none has the column. `kept`: the columns the
    list's rows keep (`columns_kept`), those a top-level row of `width` has room for when not said."""
    head = Text(no_wrap=True, overflow="ellipsis")
    facts: list[tuple[str, str]] = []
    if hidden:
        head.append(f"{MARK} ", style="dim")
    if s.machine:  # another machine's, pulled from the sync hub
        head.append(f"@{s.machine} ", style="#5f87af")
    if (
        s.signal_count
    ):  # what went wrong in it (core.insight.signals), before the title so it always shows: `S` lists them
        head.append(f"⚠{s.signal_count} ", style="#d7af5f")
    if s.kind == "fork":  # a fork threadloom (or the agent) made: its own session, from its source
        head.append("⑂ ", style="bold #5fafaf")
        head.append(display_title(s), style="bold")
        facts.append(("fork", "#5fafaf"))
    elif s.is_subagent:
        head.append("⚙ ", style="#d787d7")
        head.append(display_title(s), style="bold")
        mark, mark_style = STATUS_MARK.get(s.task_status or "", ("", ""))
        kind = " ".join(x for x in (s.agent_type or s.kind, mark) if x)
        facts.append((kind, mark_style if s.task_status in ("failed", "rejected") else "#d787d7"))
    else:
        head.append(display_title(s), style="bold")
    if s.is_warmup:
        facts.insert(0, ("warmup", "dim italic"))
    columns = [(short_when(last_activity(s), now).ljust(DATE_WIDTH), "dim")] if dates else []
    columns += [
        (count_of(s.message_count, "msg").rjust(MESSAGES_WIDTH), "dim"),
        (f"{s.tokens_text} tok".rjust(TOKENS_WIDTH), "dim"),
        (flat(short_model(s.model)).ljust(MODEL_WIDTH), "#af87d7"),
    ]
    extras = [f for f in facts if f[0]]
    return fit_row(
        head, extras, columns, width, columns_kept(width, dates) if kept is None else kept, dated=dates
    )


def fit_row(
    head: Text,
    extras: list[tuple[str, str]],
    columns: list[tuple[str, str]],
    width: int,
    kept: int,
    *,
    dated: bool = True,
) -> Text:
    """A row of the list: the first `kept` of its `columns` (padded to their widths, ending where
    every row ends) so that they line up with every other row's, whatever its depth or kind; its
    own `extras` (a subagent's type, "fork", "latest") before them while the title keeps
    EXTRA_TITLE_ROOM, and `head` cut to what is left. With no room for columns (`kept` 0), the one
    fact `fit` keeps (`dated`: the first column is the date, which comes first; then what the row is)."""
    if kept == 0:
        lead = columns[:1] if dated else []
        return fit(head, [*lead, *extras, *columns[len(lead) :]], width)
    facts = columns[:kept]
    room = width - sum(len(f[0]) + 2 for f in facts)
    shown = []
    for extra in extras:
        if room - len(extra[0]) - 2 >= EXTRA_TITLE_ROOM:
            shown.append(extra)
            room -= len(extra[0]) + 2
    return fit(head, [*shown, *facts], width, keep=True)


def fit(head: Text, facts: list[tuple[str, str]], width: int, *, keep: bool = False) -> Text:
    """`head` cut to leave room for as many `facts` (right-aligned) as a row of `width` allows: a
    blank one (no date) keeps its column, in line with the rows around it, unless it is left alone.
    `keep`: the facts are those the row keeps (`fit_row` chose them), the head gives way to them."""
    said = [f for f in facts if f[0].strip()]
    while not keep and len(facts) > 1 and width - sum(len(f[0]) + 2 for f in facts) < TITLE_ROOM:
        facts = facts[:-1]
    if len(facts) == 1 and not facts[0][0].strip() and said:
        facts = said[:1]  # alone and blank: the first fact that says something
    if not keep and facts and width - sum(len(f[0]) + 2 for f in facts) < TITLE_ROOM_ALONE:
        text, style = facts[0][0].strip(), facts[0][1]  # alone: its column's padding is no use
        if text[:2].isdigit():  # a date: "12 Jun 14:05" → "12 Jun", "12 Jun 2025" → "Jun 2025"
            text = shorter_when(text.strip())
        elif len(text) > (room := max(8, width - 26)):  # a subagent's type: cut, and said to be
            text = text[: room - 1] + "…"
        facts = [(text, style)]
    tail = Text(no_wrap=True)
    for fact, fact_style in facts:
        tail.append("  ")
        tail.append(fact, style=fact_style)
    room = max(8, width - tail.cell_len)
    if head.cell_len > room:
        head.truncate(room - 1, overflow="crop")
        head.append("…")
    else:
        head.pad_right(room - head.cell_len)
    return Text.assemble(head, tail)


def _signature(sessions: list[SessionSummary]) -> list[tuple]:
    """What a refresh compares: a session that grew, got its title or its token total changes it."""
    return [
        (s.id, s.message_count, s.title, s.tokens, s.child_count, s.task_status, s.signal_count)
        for s in sessions
    ]
