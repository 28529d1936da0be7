"""The subagents one call started, when it started several at once (Kimi Code's `AgentSwarm`):
Enter on the call lists them, each named as the session tree names it (its task: a swarm's item);
Enter on one opens it in the viewer, and Esc there comes back to the call."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..core.base.text import count_of
from ..core.read import browse
from .panes import session_label
from .render import plain_title

ROW_WIDTH = 100  # a row's cells until the list knows its own width


class SubagentList(OptionList):
    """One row a subagent, as the session tree draws it, drawn again to the list's width."""

    BINDINGS = [
        Binding(
            "enter",
            "select",
            "Open",
            id="subagents.open",
            tooltip="Open the subagent in the viewer (Esc there comes back to the call)",
        ),
        Binding("up,k", "cursor_up", "Up", show=False, id="subagents.up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="subagents.down"),
        Binding("home,g", "first", "First", show=False, id="subagents.first"),
        Binding("end,G", "last", "Last", show=False, id="subagents.last"),
        Binding("pageup", "page_up", "Page up", show=False, id="subagents.page-up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="subagents.page-down"),
    ]

    def __init__(
        self, sessions: list[browse.SessionSummary], now: Callable[[], float] | None, id: str | None = None
    ) -> None:
        self.sessions, self.now = sessions, now
        rows = [Option(self.row(s, ROW_WIDTH), id=s.id) for s in sessions]
        super().__init__(*rows, id=id, markup=False)
        self._drawn_width: int | None = None

    def row(self, s: browse.SessionSummary, width: int) -> Text:
        return session_label(s, width, self.now() if self.now else None)

    def on_resize(self) -> None:
        self._fit_rows()

    def watch_show_vertical_scrollbar(self) -> None:
        """A scrollbar came or went: the rows have a cell more or less."""
        self._fit_rows()

    def _fit_rows(self) -> None:
        padding = self.get_component_styles("option-list--option").padding.width
        width = self.scrollable_content_region.width - padding
        if width <= 0 or width == self._drawn_width:
            return
        self._drawn_width = width
        for index, s in enumerate(self.sessions):
            self.replace_option_prompt_at_index(index, self.row(s, width))


class SubagentsScreen(ModalScreen[str | None]):
    """Dismissed with the id of the subagent chosen, or None."""

    BINDINGS = [
        Binding("escape,q", "dismiss_none", "Close", id="subagents.close"),
        Binding(
            "f1,question_mark",
            "help",
            "Keys",
            show=False,
            id="subagents.help",
            tooltip="The keys of this list",
        ),
    ]

    def __init__(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        call_id: str,
        title: str,
        now: Callable[[], float] | None = None,
    ) -> None:
        super().__init__()
        self.sessions = browse.call_subagents(conn, session_id, call_id)
        self.title_text, self.now = title, now

    def compose(self) -> ComposeResult:
        listing = SubagentList(self.sessions, self.now, id="subagents-list")
        # the call's tool and description are the log's: plain text, never markup
        listing.border_title = (
            plain_title(self.title_text, 70) + f" · {count_of(len(self.sessions), 'subagent')}"
        )
        listing.border_subtitle = "Enter opens · Esc closes"
        yield listing

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        listing.focus()
        listing.action_first()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        from .screens import HelpScreen, key_rows

        own, around = key_rows(self, self.query_one(OptionList))
        self.app.push_screen(HelpScreen("Subagents", own, around, everywhere_title="Everywhere in the list"))
