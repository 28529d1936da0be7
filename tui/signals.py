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


class SignalsScreen(ModalScreen[int | None]):
    """Dismissed with the seq of the chosen evidence, or None."""

    DEFAULT_CSS = """
    SignalsScreen {
        align: center middle;
        background: $background 60%;
    }
    #signals-list {
        width: 110;
        max-width: 95%;
        height: auto;
        max-height: 90%;
        border: round $accent;
        background: $surface;
        padding: 0 1;
    }
    """
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
        listing = OptionList(*options, id="signals-list", markup=False)
        listing.border_title = f"Signals · {len(self.found)}"
        listing.border_subtitle = "Enter shows the message · Esc closes"
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
