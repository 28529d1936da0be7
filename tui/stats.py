"""The stats screen: cost (or tokens) per day as a sparkline, and a table of the totals by day,
week, month, project, model, agent or session below it; Enter narrows the browser to a row.

Everything is read from the sums the ledger keeps (`core.insight.stats.report`): opening it groups those
rows, it never scans the messages."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Sparkline, Static

from ..core.base.text import NO_MODEL, count_of, human_tokens, one_line_name, printable
from ..core.insight import stats
from ..core.insight.stats import StatsRow
from ..core.read.query import money, short_ids
from .events import OpenProject, OpenSession

TITLES = {
    "day": "Day",
    "week": "Week of",
    "month": "Month",
    "project": "Project",
    "model": "Model",
    "agent": "Agent",
    "session": "Session",
}
# the number columns, each its name, its value and its style in one place; the cost comes third, so
# a narrow terminal, where the table scrolls sideways, shows it with the counts (at 80 columns it was
# cut in the middle: "$11.4" for $11.49)
COLUMNS: tuple[tuple[str, Callable[[StatsRow], str], Callable[[StatsRow], str]], ...] = (
    ("sessions", lambda r: f"{r.sessions:,}", lambda r: ""),
    ("msgs", lambda r: f"{r.messages:,}", lambda r: ""),
    ("cost", lambda r: r.cost_text, lambda r: "bold #d7af5f"),
    ("input", lambda r: human_tokens(r.input_tokens), lambda r: ""),
    ("output", lambda r: human_tokens(r.output_tokens), lambda r: ""),
    ("cache w", lambda r: human_tokens(r.cache_creation_tokens), lambda r: "dim"),
    ("cache r", lambda r: human_tokens(r.cache_read_tokens), lambda r: "dim"),
    ("tools", lambda r: f"{r.tool_calls:,}", lambda r: ""),
    ("failed", lambda r: f"{r.failed_tool_calls:,}", lambda r: "#d75f5f" if r.failed_tool_calls else "dim"),
    ("+lines", lambda r: f"+{r.lines_added:,}", lambda r: "#87d787"),
    ("-lines", lambda r: f"−{r.lines_removed:,}", lambda r: "#d75f5f"),
)
FIRST_ROWS = 50  # drawn at once; the rest are added after the first paint (measuring a cell costs)
# then this many a refresh: 18,575 sessions added at once froze the screen after its first paint
# (a key waited 5.4 s); a slice a refresh answers one within 1.7 s, the table full at 6.4 s
LATER_ROWS = 1000
LABEL_WIDTH = 44  # a session's title is cut here, so the numbers stay on screen
NUMBERS_WIDTH = 100  # the eleven number columns with their padding, the borders and the scrollbar
SPARK_DAYS = 90  # the sparkline's span: the last days with activity, up to this many


@dataclass(slots=True)
class Narrowing:
    """What the table is limited to (a period chosen with Enter, an agent), for its caption."""

    since: int | None = None
    until: int | None = None
    agent: str | None = None
    what: str = ""


class StatsScreen(Screen[None]):
    """Totals of the whole archive, grouped by the key pressed."""

    DEFAULT_CSS = """
    StatsScreen { layout: vertical; }
    #stats-title { height: auto; max-height: 2; padding: 0 1; text-style: bold; }  /* wraps on a narrow screen */
    #stats-spark { height: 5; margin: 0 1; }
    #stats-spark-axis { height: 1; padding: 0 1; color: $text-muted; }
    #stats-table { height: 1fr; border: round $accent; border-title-color: $text; }
    """

    BINDINGS = [
        Binding("d", "group('day')", "Day", id="stats.day"),
        Binding("w", "group('week')", "Week", id="stats.week"),
        Binding("m", "group('month')", "Month", id="stats.month"),
        Binding("p", "group('project')", "Project", id="stats.project"),
        Binding("o", "group('model')", "Model", id="stats.model"),
        Binding("a", "group('agent')", "Agent", id="stats.agent"),
        Binding("s", "group('session')", "Session", id="stats.session"),
        Binding(
            "enter",
            "open_row",
            "Open",
            id="stats.open",
            tooltip="A project or session: show it in the browser; a period or agent: its sessions or projects",
        ),
        Binding("escape,q,S", "close", "Close", id="stats.close"),
    ]

    def __init__(self, conn: sqlite3.Connection, by: str = "day") -> None:
        super().__init__(id="stats")
        self.conn = conn
        self.by = by
        self.narrowing = Narrowing()
        self.rows: list[StatsRow] = []
        self.days: list[StatsRow] = []  # the whole archive's days: the sparkline's, and the first table's
        self._shown = 0  # which `show` the rows being added belong to
        self._short_ids: dict[str, str] = {}  # session id → as `threadloom sessions` prints it

    def compose(self) -> ComposeResult:
        yield Static(id="stats-title")
        yield Sparkline([], id="stats-spark")
        yield Static(id="stats-spark-axis")
        yield DataTable(id="stats-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        self._draw_spark()
        self.show(self.by)
        table.focus()

    def reload(self, conn: sqlite3.Connection) -> None:
        """The archive changed (an ingest ended, a session grew) or is read through another
        connection (a first load's ended): read it again, as grouped and narrowed, on the same row."""
        self.conn = conn
        self._short_ids = {}  # new sessions may lengthen the prefixes that tell them apart
        table = self.query_one(DataTable)
        row = table.cursor_row
        self._draw_spark()
        self.show(self.by)
        if 0 < row < table.row_count:
            table.move_cursor(row=row)

    # ------------------------------------------------------------------ reading

    def _draw_spark(self) -> None:
        """Cost per local day (tokens when no cost is known) over the days up to the last that
        cost something: a day with a session and nothing spent since would leave a flat line."""
        self.days = stats.report(self.conn, "day")
        days = [r for r in self.days if r.period != stats.UNDATED]
        spark = self.query_one(Sparkline)
        axis = self.query_one("#stats-spark-axis", Static)
        priced = any(r.cost_usd for r in days)
        counted = [r for r in days if (r.cost_usd if priced else r.total_tokens)]
        if not counted:
            spark.data = []
            axis.update("")
            return
        last = date.fromisoformat(counted[-1].period)
        first = max(date.fromisoformat(days[0].period), last - timedelta(days=SPARK_DAYS - 1))
        by_day = {r.period: r for r in days}
        values = []
        for n in range((last - first).days + 1):
            row = by_day.get((first + timedelta(days=n)).isoformat())
            if row is None:
                values.append(0.0)
            else:
                values.append((row.cost_usd or 0.0) if priced else float(row.total_tokens))
        spark.data = values
        what = "cost" if priced else "tokens"
        peak = max(values)
        peak_text = money(peak) if priced else human_tokens(int(peak))  # "$0.0042", never "$0.00"
        axis.update(
            Text.assemble(
                (first.isoformat(), ""),
                (f"  {what} per day, highest {peak_text}  ", "italic"),
                (last.isoformat(), ""),
            )
        )

    def show(self, by: str) -> None:
        """Fill the table grouped `by`, within the current narrowing."""
        self.by = by
        n = self.narrowing
        if by == "day" and not n.what and self.days:
            self.rows = list(self.days)
        else:
            self.rows = stats.report(self.conn, by, since=n.since, until=n.until, agent=n.agent)
        if by == "session" and not self._short_ids:
            self._short_ids = short_ids(self.conn)
        if by in stats.TIME_GROUPINGS:  # the latest period first, under the cursor; undated last
            dated = [r for r in self.rows if r.period != stats.UNDATED]
            self.rows = dated[::-1] + [r for r in self.rows if r.period == stats.UNDATED]
        whole = stats.report(self.conn, "total", since=n.since, until=n.until, agent=n.agent)
        table = self.query_one(DataTable)
        table.clear(columns=True)  # the columns fit the new labels, not the widest ever shown
        table.add_column(TITLES[by], key="key")
        for name, _, _ in COLUMNS:
            table.add_column(Text(name, justify="right"), key=name)
        self._shown += 1
        self._add_rows(self._shown, 0, FIRST_ROWS)
        # what it is narrowed to (a project, a model) is the log's: plain text, never markup
        table.border_title = Text(f"By {by}" + (f" · {printable(n.what)}" if n.what else ""))
        table.border_subtitle = (
            "d w m: periods · p o a s: project, model, agent, session · Enter opens · Esc "
            + ("widens" if n.what else "closes")
        )
        title = self.query_one("#stats-title", Static)
        if whole:
            t = whole[0]
            title.update(
                f"{count_of(t.sessions, 'session')} · {count_of(t.messages, 'message')} · {human_tokens(t.total_tokens)} tokens · "
                f"{t.cost_text or 'no cost known'} · {t.tool_calls:,} tool calls ({t.failed_tool_calls:,} failed) · "
                f"+{t.lines_added:,} −{t.lines_removed:,} lines"
            )
        else:
            title.update(Text("Nothing archived yet" if not n.what else f"Nothing in {printable(n.what)}"))

    def _add_rows(self, shown: int, start: int, count: int) -> None:
        """Rows `start` to `start + count` of the table, then (after they are drawn) the rest, a
        slice a refresh, so a table of a thousand days opens as fast as one of fifty and one of
        20,000 sessions answers keys while it fills."""
        if shown != self._shown:
            return  # another grouping was chosen meanwhile
        table = self.query_one(DataTable)
        for row in self.rows[start : start + count]:
            table.add_row(
                # one_line_name: a cell draws its first line only ("new" for a folder "new\nline")
                Text(_cut(one_line_name(self._label(row)), self._label_width())),
                *_cells(row),
                key=row.key,
            )
        if start + count < len(self.rows):  # the rest a slice at a time: keys are answered between
            self.call_after_refresh(self._add_rows, shown, start + count, LATER_ROWS)

    def _label_width(self) -> int:
        """The first column's: what the numbers leave of the screen, so the last stays on it."""
        return max(12, min(LABEL_WIDTH, self.app.size.width - NUMBERS_WIDTH))

    def _label(self, row: StatsRow) -> str:
        if self.by == "session":  # its title first (what a narrow column keeps), then its id as
            # `threadloom sessions` prints it, which `show` takes back
            return f"{row.label or '(untitled)'}  {self._short_ids.get(row.key, row.key)}"
        if self.by == "model":
            return row.label or NO_MODEL
        return row.label or "(none)"

    # ------------------------------------------------------------------ keys

    def action_group(self, by: str) -> None:
        if by in stats.TIME_GROUPINGS:
            self.narrowing = Narrowing()  # the periods of the whole archive again
        self.show(by)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_row()

    def action_open_row(self) -> None:
        table = self.query_one(DataTable)
        if not self.rows or table.cursor_row is None or table.cursor_row >= len(self.rows):
            return
        row = self.rows[table.cursor_row]
        if self.by in ("project", "session"):
            self.dismiss()  # back to the browser, which the message narrows
            self.app.post_message(OpenProject(row.key) if self.by == "project" else OpenSession(row.key))
        elif self.by in stats.TIME_GROUPINGS:
            if row.period == stats.UNDATED:
                self.notify("Those sessions have no date to narrow to: p or s lists them with the rest")
                return
            since, until = _period_bounds(self.by, row.period)
            self.narrowing = Narrowing(since, until, None, f"{TITLES[self.by].lower()} {row.period}")
            self.show("session")
        elif self.by == "agent":
            self.narrowing = Narrowing(agent=row.key, what=row.key)
            self.show("project")

    def action_close(self) -> None:
        """Esc: back from a period or agent chosen with Enter to the whole archive, else close."""
        if self.narrowing.what:
            self.narrowing = Narrowing()
            self.show(self.by)
        else:
            self.dismiss()


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _cells(row: StatsRow) -> list[Text]:
    return [Text(value(row), style=style(row), justify="right") for _, value, style in COLUMNS]


def _period_bounds(by: str, period: str) -> tuple[int, int]:
    """A day, week (named by its Monday) or month as local unix ms, end excluded."""
    if by == "month":
        first = date.fromisoformat(f"{period}-01")
        after = (first + timedelta(days=32)).replace(day=1)
    else:
        first = date.fromisoformat(period)
        after = first + timedelta(days=7 if by == "week" else 1)
    return stats.parse_day(first.isoformat()), stats.parse_day(after.isoformat())
