"""The search screen: every conversation of every agent, results as the user types.

Each keystroke restarts a short timer; when it fires, a thread worker (exclusive group, so a newer
query cancels the older one) opens its own read-only connection and runs `core.read.search.search`.
A newer query also interrupts the older one's SQLite statement, and a result that is no longer the
latest is dropped. Enter opens the hit in the browsing screen's message viewer; the app keeps this
screen installed, so Esc there comes back here with the query and the selection as they were.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ..core.base.text import SEARCH_HELP, count_of, flat, human_when, it_or_them
from ..core.read.query import UNTITLED
from ..core.read.search import Hit, SearchResult
from . import workers
from .events import OpenForkPicker, SearchClosed, SearchHitChosen
from .footer import KeyFooter
from .panes import fit
from .render import ROLE_STYLE

DEBOUNCE = 0.15
LIMIT = 100
HINT = (
    'F1 filters and keys · F2 words / meaning / both · "a phrase" · agent: project: role: tool: session: '
    "file: cmd: error: in:tools in:main after: before:"
)
MODE_NAMES = {"hybrid": "words + meaning", "words": "words only", "meaning": "meaning only"}
AGENT_STYLE = "#5f87af"
PROJECT_STYLE = "#87d787"
MATCH_STYLE = "bold #1c1c1c on #d7af5f"


class Searched(Message):
    """A worker's result, for the query it was started with (`serial` tells stale ones apart)."""

    def __init__(
        self, serial: int, query: str, result: SearchResult | None, seconds: float, error: str = ""
    ) -> None:
        super().__init__()
        self.serial, self.query, self.result, self.seconds, self.error = serial, query, result, seconds, error


class ResultsList(OptionList):
    """The hits, three lines each; typing a letter here goes back to the query."""

    BINDINGS = [
        Binding("down,j", "cursor_down", "Down", show=False, id="search.results-down"),
        Binding("up,k", "cursor_up", "Up", show=False, id="search.results-up"),
        Binding("home,g", "first", "First", show=False, id="search.results-first"),
        Binding("end,G", "last", "Last", show=False, id="search.results-last"),
        Binding("pagedown", "page_down", "Page down", show=False, id="search.results-page-down"),
        Binding("pageup", "page_up", "Page up", show=False, id="search.results-page-up"),
        Binding("left", "scroll_left", "Scroll left", show=False, id="search.results-scroll-left"),
        Binding("right", "scroll_right", "Scroll right", show=False, id="search.results-scroll-right"),
        Binding("ctrl+pageup", "page_left", "Page left", show=False, id="search.results-page-left"),
        Binding("ctrl+pagedown", "page_right", "Page right", show=False, id="search.results-page-right"),
        Binding("enter", "select", "Open", show=False, id="search.results-open"),
        Binding("space", "screen.toggle_turn", "Pick", show=False, id="search.results-pick"),
    ]

    def on_key(self, event: events.Key) -> None:
        """A printable key no binding wants is typed into the query (and focus moves there)."""
        if not event.is_printable or not event.character:
            return
        screen = self.screen
        if any(
            event.key in bindings.key_to_bindings
            for node, bindings in screen._modal_binding_chain
            if node is self or node is screen
        ):
            return  # j, k, f… as bound here (after the user's keymap)
        event.stop()
        event.prevent_default()
        query = screen.query_one("#search-input", Input)
        query.focus()
        if event.key != "slash":
            query.insert_text_at_cursor(event.character)


class SearchScreen(Screen[None]):
    """Search every session; Enter opens a hit, `f` forks from it, Esc closes."""

    AUTO_FOCUS = "#search-input"
    BINDINGS = [
        Binding("escape", "close", "Close", id="search.close"),
        Binding(
            "enter",
            "open",
            "Open",
            id="search.open",
            priority=True,
            tooltip="Open the session at this message",
        ),
        Binding("down", "move(1)", "Next", show=False, id="search.down"),
        Binding("up", "move(-1)", "Previous", show=False, id="search.up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="search.page-down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="search.page-up"),
        Binding(
            "f,ctrl+f",
            "fork",
            "Fork",
            id="search.fork",
            tooltip="Fork or resume from this hit (f in the results, Ctrl+F while typing)",
        ),
        Binding("f1", "filters", "Filters", id="search.help", tooltip="The filters and keys of search"),
        Binding(
            "ctrl+t",
            "toggle_turn",
            "Pick turn",
            id="search.pick",
            tooltip="Pick the hit's turn for a new session's context (space in the results)",
        ),
        Binding(
            "ctrl+n",
            "new_with_context",
            "New session",
            id="search.new-session",
            tooltip="Start a new session with the picked turns (or this hit's) as its context",
        ),
        Binding(
            "f2",
            "cycle_mode",
            "Mode",
            id="search.mode",
            tooltip="Search by words and meaning (default), words only, or meaning only",
        ),
        Binding(
            "ctrl+c,super+c", "screen.copy_text", "Copy selection", show=False, id="search.copy-selection"
        ),
    ]

    def __init__(self, db_path: Path, *, now: Callable[[], float], key: str = "/") -> None:
        super().__init__(id="search")
        self.db_path = db_path
        self.now = now
        self.key = key or "/"  # the key that opened search, shown as the query's prompt
        self.hits: list[Hit] = []
        self.result: SearchResult | None = None
        self.result_query = ""  # the query the list shows
        self.last_seconds = 0.0  # worker time of the shown result: connect + search
        self.latency = 0.0  # last key press of the query → its results on screen
        self.show_filters = False
        self.mode = "hybrid"  # core.insight.recall.MODES
        self.picked: dict[str, Hit] = {}  # turn id → the hit it was picked from, in the order picked
        self.similar_to: int | None = None  # the entry whose similar turns are listed (not a query)
        self.similar_label = ""
        self._query_serial = 0
        self._shown_serial = 0
        self._query_typed_at = 0.0
        self._debounce: Timer | None = None
        self._conns_lock = threading.Lock()
        self._query_conns: set[sqlite3.Connection] = set()

    def compose(self) -> ComposeResult:
        with Vertical(id="search-box") as box:
            box.border_title = "Search every conversation"
            with Horizontal(id="search-bar"):
                yield Static(Text(self.key), id="search-prompt")
                yield Input(
                    placeholder='words, "a phrase", filters such as agent:codex role:user after:7d',
                    id="search-input",
                )
            yield Static(id="search-status")
            yield ResultsList(id="search-results")
            with VerticalScroll(id="search-help-box", can_focus=False):  # a short terminal scrolls it
                yield Static(id="search-help")
        yield Static(Text(HINT, style="dim"), id="search-hint")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._show_status()
        self._update_help()

    # ------------------------------------------------------------------ typing → worker

    @on(Input.Changed, "#search-input")
    def _query_changed(self, event: Input.Changed) -> None:
        self.similar_to = None
        self._query_serial += 1
        self._query_typed_at = time.perf_counter()
        if self._debounce is not None:
            self._debounce.stop()
        self._interrupt()
        if not event.value.strip():
            self.workers.cancel_group(self, workers.SEARCH.group)
            self._shown_serial = self._query_serial
            self._set_results("", None, 0.0)
            return
        serial, query = self._query_serial, event.value
        self._debounce = self.set_timer(DEBOUNCE, lambda: self._search(serial, query, self.now()))

    def _interrupt(self) -> None:
        """Stop the SQLite statement of an older query, if one is still running."""
        with self._conns_lock:
            for conn in self._query_conns:
                conn.interrupt()

    def _search(self, serial: int, query: str, now: float) -> None:
        """`query` searched in a worker (a newer query replaces it, its statement interrupted)."""
        from ..core.insight.recall import search_recall

        started = time.perf_counter()

        def run(conn: sqlite3.Connection) -> Searched:
            with self._conns_lock:  # a newer query interrupts this one's statement
                self._query_conns.add(conn)
            try:
                result = search_recall(conn, query, mode=self.mode, limit=LIMIT, now=now)
            finally:
                with self._conns_lock:
                    self._query_conns.discard(conn)
            return Searched(serial, query, result, time.perf_counter() - started)

        workers.read(
            self,
            workers.SEARCH,
            self.db_path,
            run,
            lambda why: Searched(serial, query, None, 0.0, f"search failed: {why}"),
        )

    @property
    def settled(self) -> bool:
        """The list shows the result of what is typed now (nothing pending)."""
        return self._shown_serial == self._query_serial

    def on_searched(self, event: Searched) -> None:
        if event.serial != self._query_serial:
            return  # typed on since: a newer result is coming
        self._shown_serial = event.serial
        if event.result is None:
            self._set_results(event.query, None, 0.0, error=event.error)
            return
        self._set_results(event.query, event.result, event.seconds)
        self.latency = time.perf_counter() - self._query_typed_at

    # ------------------------------------------------------------------ showing

    def _set_results(
        self, query: str, result: SearchResult | None, seconds: float, *, error: str = ""
    ) -> None:
        self.result, self.result_query, self.last_seconds = result, query, seconds
        self.hits = result.hits if result else []
        results = self.query_one(ResultsList)
        # box border and padding, list padding, scrollbar, option padding (and one to spare)
        width = max(40, (self.size.width or self.app.size.width) - 10)
        facts = [self._facts(hit) for hit in self.hits]
        columns = [max((len(row[n][0]) for row in facts), default=0) for n in range(4)]
        results.set_options(
            [
                Option(self._prompt(hit, width, _in_columns(row, columns)), id=str(i))
                for i, (hit, row) in enumerate(zip(self.hits, facts, strict=True))
            ]
        )
        if self.hits:
            results.highlighted = 0
        self._show_status(error)
        self._update_help()

    def _show_status(self, error: str = "") -> None:
        status = Text()
        result = self.result
        if error:
            status.append(error, style="bold #d75f5f")
        elif result is None:
            status.append("Type to search every session of every agent.", style="dim")
        else:
            status.append(f"{result.count_label} hits", style="bold")
            if self.similar_to is not None:
                status.append(f" · {self.result_query}", style="#87afaf")
            else:
                status.append(f" · {MODE_NAMES.get(self.mode, self.mode)}", style="#87afaf")
            if self.picked:
                status.append(
                    f" · {count_of(len(self.picked), 'turn')} picked: Ctrl+N starts a session with"
                    f" {it_or_them(len(self.picked))}",
                    style="#87d787",
                )
            status.append(f" · {self.last_seconds * 1000:,.0f} ms", style="dim")
            expanded = [
                f"{word} → {', '.join(terms)}"
                for word, terms in result.terms.items()
                if terms and terms != [word] and " " not in word
            ]
            if expanded:
                status.append(" · " + "; ".join(expanded), style="#87afaf")
            for problem in result.problems:
                status.append(" · ")
                status.append(problem, style="#d7af5f")
        self.query_one("#search-status", Static).update(status)

    def freeze_timing(self, seconds: float) -> None:
        """Show a fixed search time (screenshots and snapshots must not change from run to run)."""
        self.last_seconds = seconds
        self._show_status()

    def _update_help(self) -> None:
        help_box = self.query_one("#search-help", Static)
        show = self.show_filters or (self.result is None and not self.result_query)
        help_box.display = self.query_one("#search-help-box").display = show
        self.query_one(ResultsList).display = not show
        if show:
            parts: list[RenderableType] = [
                Text("Filters", style="bold"),
                _pairs(_help_pairs(self._filters_help())),
                Text("\nKeys", style="bold"),
                _pairs(self._key_pairs()),
            ]
            if self.show_filters:
                parts.append(Text("\nF1 shows the results again", style="dim"))
            help_box.update(Group(*parts))

    def _filters_help(self) -> str:
        """SEARCH_HELP as this screen switches modes: by its key (F2), not the CLI's `--mode`."""
        keys = [
            self.app.get_key_display(active.binding.with_key(key))
            for key, active in self.active_bindings.items()
            if active.binding.id == "search.mode"
        ]
        return SEARCH_HELP.replace("(--mode words:", f"({keys[0] if keys else 'F2'} to words only:")

    def _key_pairs(self) -> list[tuple[str, str]]:
        """The keys of this screen as they are bound now (after a keymap file)."""
        seen: dict[str, list[str]] = {}
        descriptions: dict[str, str] = {}
        for key, active in self.active_bindings.items():
            binding = active.binding
            if not (binding.id or "").startswith("search."):
                continue
            seen.setdefault(binding.id or "", []).append(self.app.get_key_display(binding.with_key(key)))
            descriptions[binding.id or ""] = binding.tooltip or binding.description
        return [(", ".join(keys), descriptions[bid]) for bid, keys in seen.items()]

    def _facts(self, hit: Hit) -> list[tuple[str, str]]:
        """How the hit was found (blank: by its words), where (blank: its text), its role and age."""
        return [
            (
                "" if hit.why == "words" else "by meaning" if hit.why == "meaning" else "words + meaning",
                "italic #5fafaf",
            ),
            ("" if hit.field == "content" else "in " + hit.field.replace("_text", "s"), "italic #af87d7"),
            (hit.role or "", ROLE_STYLE.get(hit.role or "", "dim").replace("bold ", "")),
            (human_when(hit.timestamp, self.now()), "dim"),
        ]

    def _prompt(self, hit: Hit, width: int, facts: list[tuple[str, str]]) -> Text:
        """agent · project · session title, `facts` on the right; the snippet below, matches marked."""
        head = Text(no_wrap=True, overflow="ellipsis")
        if self.picked and hit.turn_id in self.picked:
            head.append("● ", style="bold #87d787")
        head.append(hit.agent, style=AGENT_STYLE)
        head.append(" · ")
        head.append(flat(hit.project) or "?", style=PROJECT_STYLE)
        head.append(" · ")
        head.append(flat(hit.session_title) or UNTITLED, style="bold")
        if hit.main_session_id:
            head.append(" · ")
            head.append(f"{hit.relation} of " + (flat(hit.main_title) or hit.main_session_id), style="dim")
        first = fit(head, facts, width)
        snippet = Text(hit.snippet)
        for start, end in hit.highlights:
            snippet.stylize(MATCH_STYLE, start, end)
        lines = snippet.wrap(self.app.console, width - 2, no_wrap=False)
        body = Text("\n").join(Text("  ") + line for line in list(lines)[:2])
        if len(lines) > 2:
            body.append("…", style="dim")
        return Text("\n").join([first, body, Text("")])

    def on_resize(self) -> None:
        if self.result is not None:
            highlighted = self.query_one(ResultsList).highlighted
            self._set_results(self.result_query, self.result, self.last_seconds)
            if highlighted is not None and highlighted < len(self.hits):
                self.query_one(ResultsList).highlighted = highlighted

    # ------------------------------------------------------------------ actions

    def current_hit(self) -> Hit | None:
        index = self.query_one(ResultsList).highlighted
        if index is None or index >= len(self.hits) or not self.query_one(ResultsList).display:
            return None
        return self.hits[index]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open", "fork", "toggle_turn"):
            return True if self.hits else None
        if action == "new_with_context":
            return True if self.hits or self.picked else None
        return True

    def action_move(self, step: int) -> None:
        help_box = self.query_one("#search-help-box")
        if help_box.display:  # no hits on show: the keys scroll the help (a short terminal cuts it)
            help_box.scroll_relative(y=step, animate=False)
            return
        results = self.query_one(ResultsList)
        if step > 0:
            results.action_cursor_down()
        else:
            results.action_cursor_up()

    def action_page(self, step: int) -> None:
        help_box = self.query_one("#search-help-box")
        if help_box.display:
            help_box.scroll_relative(y=step * max(1, help_box.size.height - 1), animate=False)
            return
        results = self.query_one(ResultsList)
        if step > 0:
            results.action_page_down()
        else:
            results.action_page_up()

    @on(OptionList.OptionSelected, "#search-results")
    def _clicked(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        hit = self.current_hit()
        if hit is not None:
            self.post_message(SearchHitChosen(hit))

    def action_fork(self) -> None:
        hit = self.current_hit()
        if hit is not None:
            self.post_message(OpenForkPicker(hit.session_id, hit.entry_id, seq=hit.seq))

    def _turn_of(self, hit: Hit) -> str | None:
        from ..core.insight.recall import NotEmbedded, turn_of_ref

        if hit.turn_id is not None:
            return hit.turn_id
        conn = getattr(self.app, "conn", None)
        if conn is None:
            return None
        try:
            return turn_of_ref(conn, str(hit.entry_id))
        except NotEmbedded:
            return None

    def action_toggle_turn(self) -> None:
        """Pick (or put back) the highlighted hit's turn for a new session's context."""
        hit = self.current_hit()
        if hit is None:
            return
        turn = self._turn_of(hit)
        if turn is None:
            self.notify("This hit is in no turn (a summary, a record of no conversation)", timeout=3)
            return
        hit.turn_id = turn
        if turn in self.picked:
            del self.picked[turn]
        else:
            self.picked[turn] = hit
        results = self.query_one(ResultsList)
        highlighted = results.highlighted
        self._set_results(self.result_query, self.result, self.last_seconds)
        if highlighted is not None and highlighted < len(self.hits):
            results.highlighted = highlighted
        self.refresh_bindings()

    def action_new_with_context(self) -> None:
        """The picked turns (else the highlighted hit's) as the context of a new session."""
        from .context import ContextScreen

        turns = list(self.picked)
        if not turns:
            hit = self.current_hit()
            turn = self._turn_of(hit) if hit is not None else None
            if turn is None:
                self.notify("Pick turns first (space in the results, Ctrl+T while typing)", timeout=3)
                return
            turns = [turn]
        query = self.result_query if self.similar_to is None else ""
        self.app.push_screen(ContextScreen(self.db_path, turns, query or "the turns picked in threadloom"))

    def show_similar(self, entry_id: int, label: str) -> None:
        """The turns of other sessions most like the turn of `entry_id` (the viewer's `L`)."""
        self.similar_to = entry_id
        self.similar_label = label
        query = self.query_one("#search-input", Input)
        with query.prevent(Input.Changed):
            query.value = ""
        self._query_serial += 1
        self._similar(self._query_serial, entry_id)

    def _similar(self, serial: int, entry_id: int) -> None:
        """The turns like the one of `entry_id`, read in a worker (in search's group: either
        replaces the other)."""
        from ..core.insight.recall import NOTHING_SIMILAR, NotEmbedded, similar

        started = time.perf_counter()
        label = f"turns like {self.similar_label}"

        def run(conn: sqlite3.Connection) -> Searched:
            try:
                hits = similar(conn, str(entry_id), limit=LIMIT)
            except NotEmbedded as exc:  # said as it is: what to run to have the turns embedded
                return Searched(serial, label, None, 0.0, str(exc))
            result = SearchResult(hits, len(hits), False, {}, time.perf_counter() - started)
            if not hits:  # said, as `threadloom similar` says it, rather than a bare "0 of 0"
                result.problems.append(NOTHING_SIMILAR)
            return Searched(serial, label, result, time.perf_counter() - started)

        workers.read(
            self,
            workers.SIMILAR,
            self.db_path,
            run,
            lambda why: Searched(serial, label, None, 0.0, f"similar turns failed: {why}"),
        )

    def action_filters(self) -> None:
        self.show_filters = not self.show_filters
        self._update_help()

    def action_cycle_mode(self) -> None:
        """Words and meaning → words only → meaning only, and the query searched again."""
        from ..core.insight.recall import MODES

        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        query = self.query_one("#search-input", Input).value
        if query.strip():
            self._query_serial += 1
            self._search(self._query_serial, query, self.now())
        else:
            self._show_status()
        self.notify(f"Search: {MODE_NAMES[self.mode]}", timeout=2)

    def action_close(self) -> None:
        if self.show_filters:
            self.show_filters = False
            self._update_help()
            return
        self.post_message(SearchClosed())

    def reopen(self) -> None:
        """`/` again: the last query stays, selected, so typing replaces it."""
        query = self.query_one("#search-input", Input)
        query.focus()
        if query.value:
            query.select_all()


def _help_pairs(help_text: str) -> list[tuple[str, str]]:
    """SEARCH_HELP's columns ("key  what  key  what", split on runs of spaces) as (key, what) pairs;
    an indented line goes on with the description above it (it is no key of its own, whose narrow
    column would wrap it under the keys)."""
    pairs: list[tuple[str, str]] = []
    for line in help_text.splitlines():
        if line[:1].isspace() and pairs:
            key, what = pairs[-1]
            pairs[-1] = (key, f"{what} {line.strip()}")
            continue
        cells = [c for c in re.split(r"\s{2,}", line.strip()) if c]
        pairs += [(cells[i], cells[i + 1] if i + 1 < len(cells) else "") for i in range(0, len(cells), 2)]
    return pairs


def _pairs(rows: list[tuple[str, str]]) -> Table:
    """Two columns that wrap the description, not the key, on narrow terminals."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold #d7af5f", max_width=18)
    table.add_column()
    for key, what in rows:
        table.add_row(key, what)
    return table


def _in_columns(facts: list[tuple[str, str]], widths: list[int]) -> list[tuple[str, str]]:
    """A hit's facts padded to the widths of the listed hits' (the age right-aligned), so that the
    rows line up; a column no hit fills is left out."""
    padded = [(text.ljust(w), style) for (text, style), w in zip(facts[:-1], widths, strict=False)]
    padded.append((facts[-1][0].rjust(widths[-1]), facts[-1][1]))
    return [(text, style) for text, style in padded if text]
