"""The files a session changed, its subagents' edits counted in: one row per file with the lines
its calls added and removed; Enter lists the calls that changed a file (and which subagent made
each), and Enter on a call goes to it in the message viewer (in the subagent's conversation).

Everything is read from what the ledger keeps (`core.insight.changes`), never from the messages. Paths
come from the logs: they are escaped before they are drawn."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from ..core.base.text import clock, count_of, flat, one_line_name, printable
from ..core.insight.changes import ChangedFile, SessionChangeCall, changed_files, tree_change_calls
from .panes import _home

ADDED = "green"
REMOVED = "red"
SUBAGENT = "#d787d7"
BY_WIDTH = 28  # a subagent's title in the calls' list


def _by(call: SessionChangeCall) -> Text:
    """Who made the call: the session itself, or the subagent (⚙ and its title, cut)."""
    if not call.by:
        return Text("this session", style="dim")
    name = flat(call.by)
    return Text("⚙ " + (name if len(name) <= BY_WIDTH else name[: BY_WIDTH - 1] + "…"), style=SUBAGENT)


def lines_cell(count: int, sign: str, style: str) -> Text:
    return Text(f"{sign}{count:,}", style=style if count else "dim", justify="right")


def fill(
    table: DataTable, headers: tuple[str, ...], rows: Sequence[tuple[Text, ...]], keys: list[str]
) -> None:
    """The table emptied and filled again, each column as wide as its widest cell (numbers to
    the right): a table cleared and refilled does not measure its new cells itself."""
    table.clear(columns=True)
    for n, header in enumerate(headers):
        width = max([len(header), *(row[n].cell_len for row in rows)])
        label = Text(header, justify="left" if n == 0 or header in ("When", "By") else "right")
        table.add_column(label, width=width, key=f"c{n}")
    for key, row in zip(keys, rows, strict=True):
        table.add_row(*row, key=key)


class ChangesTable(DataTable):
    """The list's table, its keys named so F1 lists them and a keymap can remap them; → opens and
    ← goes back, as in the session tree."""

    BINDINGS = [
        Binding(
            "enter,right,l",
            "select_cursor",
            "Open",
            show=False,
            id="changes.open",
            tooltip="A file: the calls that changed it; a call: go to it in the session, opened",
        ),
        Binding(
            "left,h",
            "screen.back",
            "Back",
            show=False,
            id="changes.left",
            tooltip="Back to the files, else close",
        ),
        Binding("up,k", "cursor_up", "Up", show=False, id="changes.up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="changes.down"),
        Binding("pageup", "page_up", "Page up", show=False, id="changes.page-up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="changes.page-down"),
        Binding("home,g,ctrl+home", "scroll_top", "First", show=False, id="changes.first"),
        Binding("end,G,ctrl+end", "scroll_bottom", "Last", show=False, id="changes.last"),
        Binding("ctrl+pageup", "page_left", "Page left", show=False, id="changes.page-left"),
        Binding("ctrl+pagedown", "page_right", "Page right", show=False, id="changes.page-right"),
    ]


class ChangesScreen(ModalScreen[SessionChangeCall | None]):
    """A session's changed files (its subagents' too), then one file's calls; dismissed with the
    call to go to."""

    BINDINGS = [
        Binding("s", "sort", "Sort", id="changes.sort", tooltip="Most changed first, or by path"),
        Binding(
            "escape,backspace",
            "back",
            "Back",
            id="changes.back",
            tooltip="Back to the files, else close",
        ),
        Binding("q,c", "dismiss(None)", "Close", id="changes.close"),
        Binding(
            "f1,question_mark", "help", "Keys", show=False, id="changes.help", tooltip="The keys of this list"
        ),
        Binding(
            "ctrl+c,super+c", "screen.copy_text", "Copy selection", show=False, id="changes.copy-selection"
        ),
        Binding("tab", "app.focus_next", "Next", show=False, id="changes.focus-next"),
        Binding("shift+tab", "app.focus_previous", "Previous", show=False, id="changes.focus-previous"),
    ]

    def __init__(self, conn: sqlite3.Connection, session_id: str, title: str = "") -> None:
        super().__init__(id="changes")
        self.files = changed_files(tree_change_calls(conn, session_id))
        self.title_text = title
        self.by_path = False
        self.file: ChangedFile | None = None  # the file whose calls are listed, None: the files

    def compose(self) -> ComposeResult:
        with Vertical(id="changes-box") as box:
            box.border_title = Text(  # the session's title is the log's: never markup
                "Files changed" + (f" · {printable(self.title_text)}" if self.title_text else "")
            )
            box.border_subtitle = "Enter opens · s sorts · Esc back"
            yield Static(id="changes-heading")
            yield ChangesTable(id="changes-table", cursor_type="row", zebra_stripes=True)
            yield Static(id="changes-total")

    def on_mount(self) -> None:
        self.show_files()
        self.query_one(DataTable).focus()

    @property
    def shown_files(self) -> list[ChangedFile]:
        """The files in the order the table lists them."""
        return sorted(self.files, key=lambda f: f.path) if self.by_path else self.files

    def show_files(self, at: str | None = None) -> None:
        """The file list, with the cursor on the file `at` (when given)."""
        self.file = None
        table = self.query_one(DataTable)
        files = self.shown_files
        rows = [
            (
                # a line break in a path drew only the part before it: another file's name
                Text(one_line_name(_home(f.path))),
                lines_cell(f.added, "+", ADDED),
                lines_cell(f.removed, "−", REMOVED),
                Text(str(len(f.calls)), justify="right"),
            )
            for f in files
        ]
        fill(table, ("File", "+", "−", "calls"), rows, [f.path for f in files])
        if at is not None:
            table.move_cursor(row=[f.path for f in files].index(at))
        self._heading("Sorted by path" if self.by_path else "Most changed first")
        calls = {(c.session_id, c.call_id) for f in files for c in f.calls}
        total = Text(count_of(len(files), "file") + " · ")
        total.append(f"+{sum(f.added for f in files):,}", style=ADDED)
        total.append(" ")
        total.append(f"−{sum(f.removed for f in files):,}", style=REMOVED)
        total.append(" · " + count_of(len(calls), "call"))
        theirs = {(c.session_id, c.call_id): c for f in files for c in f.calls if c.by}
        if theirs:
            agents = len({sid for sid, _ in theirs})
            total.append(
                f" ({count_of(len(theirs), 'call')} by {count_of(agents, 'subagent')}: "
                f"+{sum(c.lines_added for c in theirs.values()):,} "
                f"−{sum(c.lines_removed for c in theirs.values()):,})",
                style=SUBAGENT,
            )
        if not files:  # said alone: no empty table, and no keys for rows there are none of
            total = Text("No file changes recorded in this session or its subagents")
            self._heading("")
            self.query_one("#changes-box").border_subtitle = "Esc closes"
        table.display = bool(files)
        self.query_one("#changes-total", Static).update(total)

    def show_calls(self, f: ChangedFile) -> None:
        """The calls that changed file `f`, in the order they ran."""
        self.file = f
        table = self.query_one(DataTable)
        rows = [
            (
                Text(printable(call.tool_name)),
                Text(clock(call.timestamp), style="dim"),
                lines_cell(call.lines_added, "+", ADDED),
                lines_cell(call.lines_removed, "−", REMOVED),
                _by(call),
            )
            for call in f.calls
        ]
        fill(table, ("Tool", "When", "+", "−", "By"), rows, [str(n) for n in range(len(rows))])
        self._heading(f"Calls that changed {one_line_name(_home(f.path))}")
        total = Text(count_of(len(f.calls), "call") + " · ")
        total.append(f"+{f.added:,}", style=ADDED).append(" ").append(f"−{f.removed:,}", style=REMOVED)
        total.append(" · Enter goes to the call", style="dim")
        self.query_one("#changes-total", Static).update(total)

    def _heading(self, text: str) -> None:
        self.query_one("#changes-heading", Static).update(Text(text, style="bold"))

    @on(DataTable.RowSelected)
    def _open(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if self.file is None:
            files = self.shown_files
            if 0 <= event.cursor_row < len(files):
                self.show_calls(files[event.cursor_row])
        elif 0 <= event.cursor_row < len(self.file.calls):
            self.dismiss(self.file.calls[event.cursor_row])

    def action_sort(self) -> None:
        if self.file is not None:
            return
        table = self.query_one(DataTable)
        files = self.shown_files
        at = files[table.cursor_row].path if 0 <= table.cursor_row < len(files) else None
        self.by_path = not self.by_path
        self.show_files(at)

    def action_help(self) -> None:
        from .screens import HelpScreen, key_rows

        table, around = key_rows(self, self.query_one(DataTable))
        self.app.push_screen(
            HelpScreen("Files changed", table, around, everywhere_title="Everywhere in the list")
        )

    def action_back(self) -> None:
        if self.file is None:
            self.dismiss(None)
        else:
            self.show_files(self.file.path)
