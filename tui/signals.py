"""The signals of the open session (`W`): each signal, then the records it points at; Enter on one
closes the list and shows that message in the viewer."""

from __future__ import annotations

import sqlite3

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..core.base.text import printable
from ..core.insight import signals

SEVERITY_STYLE = {"high": "bold #ff8787", "medium": "#d7af5f", "low": "dim"}


class SignalList(OptionList):
    """The signals and their evidence, one line each, cut with an ellipsis to the list's own width.
    Textual wraps an option's text whatever its `no_wrap`, so a row a few cells too wide put its
    last word and ellipsis on a line of their own; each row is cut again when the width changes."""

    # the keys every other list of the app moves by (j and k did nothing here)
    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False, id="signals.up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="signals.down"),
        Binding("home,g", "first", "First", show=False, id="signals.first"),
        Binding("end,G", "last", "Last", show=False, id="signals.last"),
    ]

    def __init__(self, *content: Option | None, id: str | None = None) -> None:
        super().__init__(*content, id=id, markup=False)
        self._whole = [option.prompt for option in self.options]  # each row uncut
        self._drawn_width: int | None = None

    def row_width(self) -> int:
        """The cells an option has: the list's content width less the options' padding."""
        padding = self.get_component_styles("option-list--option").padding.width
        return self.scrollable_content_region.width - padding

    def on_resize(self) -> None:
        self._fit_rows()

    def watch_show_vertical_scrollbar(self) -> None:
        """A scrollbar came or went: the rows have a cell more or less."""
        self._fit_rows()

    def _fit_rows(self) -> None:
        width = self.row_width()
        if width <= 0 or width == self._drawn_width:
            return
        self._drawn_width = width
        for index, whole in enumerate(self._whole):
            if isinstance(whole, Text):
                self.replace_option_prompt_at_index(index, fit_line(whole, width))
        self.refresh(layout=True)  # rows that wrapped before take one line now: the list is shorter


def fit_line(line: Text, width: int) -> Text:
    """`line` cut to `width` cells, its last one an ellipsis when it is cut (a wide character counts two)."""
    cut = line.copy()
    cut.truncate(width, overflow="ellipsis")
    return cut


class SignalsScreen(ModalScreen[int | None]):
    """Dismissed with the seq of the chosen evidence, or None."""

    BINDINGS = [Binding("escape,q", "dismiss_none", "Close", id="signals.close")]

    def __init__(self, conn: sqlite3.Connection, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id
        self.found = signals.session_signals(conn, session_id)
        self.excerpts = signals.excerpts(conn, session_id, self.found) if self.found else {}

    def compose(self) -> ComposeResult:
        options: list[Option | None] = []
        for n, found in enumerate(self.found):
            if n:
                options.append(None)  # a separator between two signals
            head = Text(no_wrap=True, overflow="ellipsis")
            head.append(found.name, style="bold")
            head.append(f"  {found.severity}", style=SEVERITY_STYLE.get(found.severity, ""))
            head.append(f"  {printable(found.detail)}")
            options.append(Option(head, disabled=True))
            for i, item in enumerate(found.evidence):
                row = Text(no_wrap=True, overflow="ellipsis")
                row.append(f"  #{item.seq}" if item.seq is not None else "  ?", style="#87afd7")
                if item.tool:
                    row.append(f"  {item.tool}", style="#af87d7")
                excerpt = self.excerpts.get((item.entry_id, item.tool_call_id), "")
                row.append(f"  {printable(excerpt)}")
                options.append(Option(row, id=f"{n}:{i}", disabled=item.seq is None))
        if not self.found:
            options.append(Option(Text("No signals in this session.", style="dim"), disabled=True))
        listing = SignalList(*options, id="signals-list")
        listing.border_title = f"Signals · {len(self.found)}"
        listing.border_subtitle = "Enter shows the message · Esc closes" if self.found else "Esc closes"
        yield listing

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        listing.focus()
        listing.action_first()  # the first piece of evidence (headers cannot be highlighted)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        signal_index, item_index = (int(part) for part in (event.option.id or "0:0").split(":"))
        self.dismiss(self.found[signal_index].evidence[item_index].seq)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
