"""The fork picker: continue any conversation from any message, with the exact command shown and copied.

The list is the branch through the chosen message, turn by turn (`core.fork.fork_points`); the
chosen turn is open on its messages (`core.fork.fork_messages`: the prompt, replies, thinking, each
tool call with its result), the others open with → or Space. Forking at a message keeps it and
everything before it (for Claude Code, its whole API message: the blocks marked ┌ ├ └ fork as one);
forking at a turn keeps the whole turn. For Claude Code and Codex "Fork here" writes a new session,
after a confirmation that says what goes where; the other actions only make a command. A command
that needs the transcript put back where the agent looks asks before doing that. `x` hands the
terminal to the agent and comes back when it ends. Under the list: the files the conversation edited
after the point under the cursor, which a fork does not take back (`core.undo`), and `u` writes the
patch that does. Whatever `core.fork` cannot do is said in the dialog, never as a traceback.

Reading the turns, a turn's messages, the edits after a point, planning and restoring read the whole
session, so they run in thread workers with their own connections: the dialog opens at once and says
what it is doing.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, OptionList, Static
from textual.widgets.option_list import Option
from threadloom.core import browse
from threadloom.core.adapters import ADAPTERS
from threadloom.core.fork import (
    FORK_TITLE_SUFFIX,
    ForkError,
    ForkMessage,
    ForkPlan,
    ForkPoint,
    fork_messages,
    fork_points,
    native_fork_plan,
    plan_fork,
    resume_plan,
)
from threadloom.core.query import SessionSummary, display_title, get_session
from threadloom.core.text import count_of, left_as_is, one_line, printable, short_when
from threadloom.tui.events import AgentRan, ForkWritten
from threadloom.tui.footer import KeyFooter
from threadloom.tui.panes import fit
from threadloom.tui.render import ROLE_STYLE, STATUS, plain_title, short_model, when

if TYPE_CHECKING:
    from threadloom.core.undo import UndoPlan

AROUND = 60  # turns listed on each side of the chosen one (a long session has thousands)
SHORT = 32  # terminal rows below which the picker is laid out tighter (-short)
ERROR_STYLE = "bold #ff5f5f"
OK_STYLE = "#87d787"
WARN_STYLE = "#d7af5f"
CHOSEN_STYLE = "bold #d7af5f"
TOOL_STYLE = "bold #d7af5f"
BRACKET_STYLE = "#5f87af"
KIND_MARK = {  # the mark before a message, and its style
    "prompt": ("› ", ROLE_STYLE["user"]),
    "reply": ("‹ ", ROLE_STYLE["assistant"]),
    "thinking": ("✻ ", "dim"),
    "summary": ("≡ ", "#af87d7"),
    "note": ("· ", "dim"),
    "message": ("› ", ROLE_STYLE["user"]),
    "event": ("· ", "dim"),
}

KIND_NOUN = {"thinking": "thinking block", "event": "record"}
LINE_BREAK = " ⏎ "  # a prompt's line break in the one-line box that edits it


# ---------------------------------------------------------------------- running the agent
# The seam tests replace: `hand_over` gives the terminal away (Textual's suspend), `run_in_shell`
# starts the command in it and waits.


def hand_over(app: App) -> contextlib.AbstractContextManager[None]:
    """The terminal handed to another program for the `with` block (SuspendNotSupported headless)."""
    return app.suspend()


def run_in_shell(command: str) -> int:
    """Run `command` (already quoted by core) with the user's shell, in the foreground; its exit code."""
    shell = os.environ.get("SHELL") or "/bin/sh"
    print(f"threadloom: {command}\n(threadloom comes back when this ends)\n", flush=True)
    code = subprocess.run([shell, "-c", command], check=False).returncode
    if code != 0:  # what went wrong stays on screen until read
        print(
            f"\nthreadloom: the command ended with exit status {code}; press Enter to go back to threadloom.",
            flush=True,
        )
        with contextlib.suppress(EOFError, OSError):
            input()
    return code


# ---------------------------------------------------------------------- the list


@dataclass
class Row:
    """One option of the list: a turn (a fork there keeps the whole turn) or one of its messages."""

    turn: int  # index into ForkPicker.points
    message: ForkMessage | None = None
    bracket: str = ""  # ┌ ├ └ (│ between): the blocks of one API message, which fork as one
    blocks: int = 1  # how many blocks its API message has in this turn


def message_rows(turn: int, messages: list[ForkMessage]) -> list[Row]:
    """The rows of a turn's messages, the blocks of one API message bracketed together."""
    rows = [Row(turn, m) for m in messages]
    spans: dict[str, list[int]] = {}
    for i, m in enumerate(messages):
        if m.message_id:
            spans.setdefault(m.message_id, []).append(i)
    for members in spans.values():
        if len(members) < 2:
            continue
        first, last = members[0], members[-1]
        for i in range(first, last + 1):
            mine = i in members
            rows[i].bracket = "┌" if i == first else "└" if i == last else "├" if mine else "│"
            if mine:
                rows[i].blocks = len(members)
    return rows


class PointList(OptionList):
    """Turns, oldest first, open ones followed by their messages: each option is a place to fork."""

    BINDINGS = [
        Binding("down,j", "cursor_down", "Down", show=False, id="fork.down"),
        Binding("up,k", "cursor_up", "Up", show=False, id="fork.up"),
        Binding("home,g", "first", "First", show=False, id="fork.first"),
        Binding("end,G", "last", "Last", show=False, id="fork.last"),
        Binding("pagedown", "page_down", "Page down", show=False, id="fork.page-down"),
        Binding("pageup", "page_up", "Page up", show=False, id="fork.page-up"),
        Binding("ctrl+pageup", "page_left", "Page left", show=False, id="fork.page-left"),
        Binding("ctrl+pagedown", "page_right", "Page right", show=False, id="fork.page-right"),
        Binding(
            "right,l",
            "screen.expand",
            "Open turn",
            show=False,
            id="fork.expand",
            tooltip="Show the messages of the turn under the cursor",
        ),
        Binding(
            "left,h",
            "screen.collapse",
            "Close turn",
            show=False,
            id="fork.collapse",
            tooltip="Fold the turn under the cursor back to one entry",
        ),
        Binding(
            "space",
            "screen.toggle",
            "Open/close turn",
            show=False,
            id="fork.toggle",
            tooltip="Open or close the turn under the cursor",
        ),
        Binding(
            "enter",
            "select",
            "Fork here",
            show=False,
            id="fork.select",
            tooltip="Fork here: at the message (or the end of the turn) under the cursor",
        ),
    ]


class PointsRead(Message):
    def __init__(
        self,
        points: list[ForkPoint],
        first_turn: int,
        branch_turns: int,
        chosen: int | None,
        messages: dict[str, list[ForkMessage]],
        error: str,
    ) -> None:
        super().__init__()
        self.points, self.first_turn, self.branch_turns, self.chosen = (
            points,
            first_turn,
            branch_turns,
            chosen,
        )
        self.messages, self.error = messages, error


class MessagesRead(Message):
    def __init__(self, turn_id: str, messages: list[ForkMessage], error: str) -> None:
        super().__init__()
        self.turn_id, self.messages, self.error = turn_id, messages, error


class PlanMade(Message):
    def __init__(self, action: str, plan: ForkPlan | None, error: str) -> None:
        super().__init__()
        self.action, self.plan, self.error = action, plan, error


class UndoRead(Message):
    def __init__(self, ref: str, plan: UndoPlan | None, error: str) -> None:
        super().__init__()
        self.ref, self.plan, self.error = ref, plan, error


class Restored(Message):
    def __init__(self, plan: ForkPlan, error: str) -> None:
        super().__init__()
        self.plan, self.error = plan, error


class DialogBox(VerticalScroll):
    """The picker's body: it scrolls on small terminals; left and right step between the buttons."""

    BINDINGS = [
        Binding("up", "scroll_up", "Scroll up", show=False, id="fork.scroll-up"),
        Binding("down", "scroll_down", "Scroll down", show=False, id="fork.scroll-down"),
        Binding("left", "app.focus_previous", "Previous button", show=False, id="fork.previous-button"),
        Binding("right", "app.focus_next", "Next button", show=False, id="fork.next-button"),
        Binding("home", "scroll_home", "Top", show=False, id="fork.scroll-home"),
        Binding("end", "scroll_end", "Bottom", show=False, id="fork.scroll-end"),
        Binding("pageup", "page_up", "Page up", show=False, id="fork.scroll-page-up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="fork.scroll-page-down"),
        Binding("ctrl+pageup", "page_left", "Page left", show=False, id="fork.scroll-page-left"),
        Binding("ctrl+pagedown", "page_right", "Page right", show=False, id="fork.scroll-page-right"),
    ]


class ActionButton(Button):
    """A button of the picker (its Enter has an id like every binding)."""

    BINDINGS = [Binding("enter", "press", "Press", show=False, id="fork.press")]


@dataclass
class Target:
    """Where a fork is cut: the record given to `plan_fork`, and how a user would say it."""

    ref: str
    where: (
        str  # "the end of turn 3", "the chosen reply (and its API message)", "just before the chosen prompt"
    )
    before: bool = False


def _short_title(title: str | None, width: int = 60) -> str:
    """A fork's title to quote in a line: its start cut, its " (fork)" kept."""
    base = (title or "").removesuffix(FORK_TITLE_SUFFIX)
    return one_line(base, width - len(FORK_TITLE_SUFFIX)) + FORK_TITLE_SUFFIX


class ForkPicker(ModalScreen[None]):
    """Pick a message (or a turn) and an action; the command appears below, is copied, and stays selectable."""

    AUTO_FOCUS = "#fork-points"  # the arrows move through the list from the start

    BINDINGS = [
        Binding("escape", "back", "Close", id="fork.close", tooltip="Cancel the current step, or close"),
        Binding(
            "f",
            "fork_here",
            "Fork here",
            id="fork.here",
            tooltip="Write a new session that ends with the message (or turn) under the cursor (asks first)",
        ),
        Binding(
            "b",
            "fork_before",
            "Fork before",
            id="fork.before",
            tooltip="On a prompt: a new session that ends just before it, to send a different one (edit and "
            "resend)",
        ),
        Binding(
            "n",
            "fork_prompt",
            "New prompt",
            id="fork.prompt",
            tooltip="Let the agent fork here itself, continuing with a new prompt",
        ),
        Binding("r", "resume", "Resume", id="fork.resume", tooltip="Resume the whole session"),
        Binding("e", "fork_end", "Fork at end", id="fork.end", tooltip="Fork the whole session at its end"),
        Binding(
            "y",
            "confirm",
            "Yes",
            id="fork.yes",
            tooltip="Yes to the question shown: write the fork, or restore the transcript",
        ),
        Binding(
            "x",
            "run",
            "Run",
            id="fork.run",
            tooltip="Leave threadloom and start the agent with the command; back here when it ends",
        ),
        # off the footer (the Copy again button is beside the command): an 80-column footer has room for the rest
        Binding("c", "copy", "Copy", show=False, id="fork.copy", tooltip="Copy the command again"),
        Binding(
            "u",
            "undo_patch",
            "Undo patch",
            show=False,
            id="fork.undo",
            tooltip="Write the patch that takes the files edited after this point back to their state here",
        ),
        Binding(
            "f1,question_mark", "help", "Keys", show=False, id="fork.help", tooltip="The keys of the picker"
        ),
        Binding("ctrl+c,super+c", "screen.copy_text", "Copy selection", show=False, id="fork.copy-selection"),
        Binding("tab", "app.focus_next", "Next", show=False, id="fork.focus-next"),
        Binding("shift+tab", "app.focus_previous", "Previous", show=False, id="fork.focus-previous"),
    ]

    def __init__(
        self,
        conn: sqlite3.Connection,
        db_path: Path,
        session_id: str,
        *,
        entry_id: int | None = None,
        turn_id: str | None = None,
    ) -> None:
        super().__init__(id="fork-picker")
        self.conn = conn
        self.db_path = db_path
        self.session_id = session_id
        self.entry_id = entry_id  # the message the picker was opened on
        self.turn_id = turn_id
        self.session: SessionSummary | None = get_session(conn, session_id)
        self.agent = self.session.agent if self.session else "?"
        self.adapter = ADAPTERS.get(self.agent)  # what the agent can do: fork before a prompt, natively
        self.points: list[ForkPoint] = []  # the turns listed: the branch, or AROUND the chosen one
        self.first_turn = 0  # the branch position of points[0]
        self.branch_turns = 0
        self.points_read = False
        self.chosen: int | None = None  # the index in `points` of the turn of the user's message
        self.messages: dict[str, list[ForkMessage]] = {}  # the messages of the turns read so far
        self.expanded: set[str] = set()  # turns shown with their messages
        self.rows: list[Row] = []
        self.marked: ForkMessage | None = None  # the user's message, marked ▶
        self.planning = ""  # the action whose plan a worker is making
        self.target: Target | None = None  # where the plan being made or asked about cuts
        self.plan: ForkPlan | None = None  # the command on show
        self.pending: ForkPlan | None = None  # a plan waiting for a yes: its transcript written, or restored
        self.asking = ""  # "write" | "restore": what `pending` waits for
        self.restoring = False
        self.prompt_for = ""  # "native" | "before": what the prompt box is asking for
        self.written: Path | None = None
        self.copied_how = ""
        self.ran = ""  # what happened when the command was run from here
        self.in_tree = False  # the written fork was read back into the archive (its session tree)
        self.undo_wanted: str | None = None  # the fork point (entry id) whose later edits are wanted
        self.undo_reading = False
        self.undo_ref: str | None = None  # the fork point `undo` is about
        self.undo: UndoPlan | None = None  # the files edited after it, and the patch taking them back
        self.undo_said: Text | None = None  # where the last undo patch went, and what it leaves out
        self.error = ""

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with DialogBox(id="fork-box") as box:
            title = display_title(self.session) if self.session else None
            box.border_title = Text("Fork or resume · ") + plain_title(title, 60)
            box.border_subtitle = "F1 keys · Esc closes"
            yield Static(id="fork-about")
            yield PointList(id="fork-points")
            yield Static(id="fork-hint")
            yield Static(id="fork-undo")
            with Horizontal(id="fork-actions"):
                yield ActionButton("Fork here", id="fork-here", variant="primary", compact=True)
                yield ActionButton("Fork before it", id="fork-before", compact=True)
                yield ActionButton("New prompt", id="fork-prompt", compact=True)
                yield ActionButton("Resume", id="fork-resume", compact=True)
                yield ActionButton("Fork at end", id="fork-end", compact=True)
            yield Input(id="fork-prompt-input")
            with Vertical(id="fork-confirm"):
                yield Static(id="fork-confirm-text")
                with Horizontal(id="fork-confirm-buttons"):
                    yield ActionButton("Write the fork", id="fork-yes", variant="warning", compact=True)
                    yield ActionButton("Cancel", id="fork-cancel", compact=True)
            yield Static(id="fork-command")
            with Horizontal(id="fork-run-buttons"):
                yield ActionButton("Run it now", id="fork-run", variant="success", compact=True)
                yield ActionButton("Copy again", id="fork-copy", compact=True)
            yield Static(id="fork-notes")
            yield Static(id="fork-status")
        yield KeyFooter()

    def on_resize(self) -> None:
        from threadloom.tui.browser import NARROW

        self.set_class(self.app.size.width < NARROW, "-narrow")  # the footer's tighter spacing
        # a short terminal: the list gives up rows so that what Fork here keeps, the edits it leaves
        # and the command stay in sight under it (app.tcss)
        self.set_class(self.app.size.height < SHORT, "-short")

    def on_mount(self) -> None:
        self.on_resize()
        self.query_one("#fork-command", Static).border_title = "Command"
        self.query_one("#fork-prompt-input").display = False
        self.query_one("#fork-confirm").display = False
        self.query_one("#fork-about", Static).update(Text("Reading the turns of this branch…", style="dim"))
        self._read_points()
        self._show()

    @work(thread=True, exclusive=True, group="fork-points", exit_on_error=False, description="fork points")
    def _read_points(self) -> None:
        """The branch's turns around the chosen one, and the chosen turn's messages."""
        from threadloom.core.db import LedgerError, connect

        try:
            conn = connect(self.db_path, readonly=True)
        except LedgerError as exc:
            self.post_message(PointsRead([], 0, 0, None, {}, f"Cannot read the turns of this session: {exc}"))
            return
        try:
            points = fork_points(conn, self.session_id, around_entry=self.entry_id)
            ids = [p.turn_id for p in points]
            chosen = ids.index(self.turn_id) if self.turn_id in ids else len(ids) - 1
            first = max(0, chosen - AROUND)
            window = points[first : chosen + AROUND + 1]
            messages = {}
            if points:
                turn = points[chosen].turn_id
                messages[turn] = fork_messages(conn, self.session_id, [turn])
            self.post_message(
                PointsRead(window, first, len(points), chosen - first if points else None, messages, "")
            )
        except sqlite3.Error as exc:
            self.post_message(PointsRead([], 0, 0, None, {}, f"Cannot read the turns of this session: {exc}"))
        finally:
            conn.close()

    def on_points_read(self, event: PointsRead) -> None:
        self.points_read = True
        if event.error:
            self.error = event.error
            self._show()
        self.points, self.first_turn, self.branch_turns = event.points, event.first_turn, event.branch_turns
        self.chosen = event.chosen
        self.messages.update(event.messages)
        self.expanded.update(event.messages)
        if self.chosen is not None:
            self.marked = self._users_message(self.messages.get(self.points[self.chosen].turn_id, []))
        self._fill(keep=None)
        about = Text()
        about.append(self.agent, style="#5f87af")
        if self.session and self.session.project:
            about.append(" · ")
            about.append(self.session.project, style="#87d787")
        count = self.branch_turns
        about.append(f" · {count} turn{'s' if count != 1 else ''} on this branch", style="dim")
        if len(self.points) < count:
            last = self.first_turn + len(self.points)
            about.append(f" (turns {self.first_turn + 1}–{last} listed, around yours)", style="dim")
        about.append(" · → ← open and close a turn", style="dim")
        if not self.points:
            about.append(
                "\nThis session has no turns to fork at; Resume and Fork at end still work.", style="#d7af5f"
            )
        self.query_one("#fork-about", Static).update(about)
        self.refresh_bindings()

    def _users_message(self, messages: list[ForkMessage]) -> ForkMessage | None:
        """The message the picker was opened on: by its record, else the last one listed before it
        (a tool's result is listed with its call), else None (the turn itself is chosen)."""
        if self.entry_id is None or not messages:
            return None
        exact = next((m for m in messages if m.entry_id == self.entry_id), None)
        if exact is not None:
            return exact
        before = [m for m in messages if m.entry_id <= self.entry_id]
        return before[-1] if before else None

    def _fill(self, keep: tuple[str, int | None] | None) -> None:
        """(Re)build the options from the turns and the open ones' messages; the cursor stays on
        `keep` (a turn id and a message's entry id, or None for the turn), else goes to the user's
        message (or its turn)."""
        self.rows = []
        for index, point in enumerate(self.points):
            self.rows.append(Row(index))
            if point.turn_id in self.expanded and point.turn_id in self.messages:
                self.rows += message_rows(index, self.messages[point.turn_id])
        width = self._option_width()
        points = self.query_one(PointList)
        points.set_options([Option(self._prompt(row, width)) for row in self.rows])
        wanted = None
        if keep is not None:
            wanted = next(
                (
                    i
                    for i, r in enumerate(self.rows)
                    if self.points[r.turn].turn_id == keep[0]
                    and (r.message.entry_id if r.message else None) == keep[1]
                ),
                None,
            )
        if wanted is None and self.chosen is not None:
            wanted = next(
                (i for i, r in enumerate(self.rows) if r.message is not None and r.message is self.marked),
                None,
            )
            if wanted is None:
                wanted = next(
                    (i for i, r in enumerate(self.rows) if r.turn == self.chosen and r.message is None), None
                )
        if wanted is not None:
            points.highlighted = wanted
            self.call_after_refresh(points.scroll_to_highlight, top=False)
        self._show_hint()
        self._want_undo()

    def _option_width(self) -> int:
        return max(40, min(110, self.app.size.width - 10) - 6)

    def _prompt(self, row: Row, width: int) -> Text:
        point = self.points[row.turn]
        if row.message is not None:
            return self._message_prompt(row, width)
        opened = point.turn_id in self.expanded
        head = Text(no_wrap=True, overflow="ellipsis")
        mine = row.turn == self.chosen and self.marked is None and self.turn_id is not None
        head.append("▶ " if mine else "  ", style=CHOSEN_STYLE)
        head.append("▾ " if opened else "▸ ", style="dim")
        head.append(f"turn {self.first_turn + row.turn + 1}", style="bold")
        facts = [(short_when(point.timestamp), "dim"), (short_model(point.model), "#af87d7")]
        if point.tool_call_count:
            facts.append(
                (f"{point.tool_call_count} tool call{'s' if point.tool_call_count != 1 else ''}", "dim")
            )
        if mine:
            facts.insert(0, ("your message", CHOSEN_STYLE))
        if opened and point.turn_id not in self.messages:
            facts.insert(0, ("reading…", "dim"))
        first = fit(head, [f for f in facts if f[0]], width)
        if opened:
            return first
        prompt = Text.assemble(("      › ", ROLE_STYLE["user"]), point.prompt or "(no prompt text)")
        reply = Text.assemble(
            ("      ‹ ", ROLE_STYLE["assistant"]), (point.reply or "(no reply text)", "dim")
        )
        for line in (prompt, reply):
            line.no_wrap, line.overflow = True, "ellipsis"
            line.truncate(width, overflow="ellipsis")
        return Text("\n").join([first, prompt, reply])

    def _message_prompt(self, row: Row, width: int) -> Text:
        message = row.message
        assert message is not None
        mine = message is self.marked
        head = Text(no_wrap=True)
        head.append("▶ " if mine else "  ", style=CHOSEN_STYLE)
        head.append("  ")
        head.append(f"{row.bracket} " if row.bracket else "  ", style=BRACKET_STYLE)
        facts = [(when(message.timestamp)[-8:], "dim")]
        if message.kind == "tool call" and message.tool_name:
            head.append(message.tool_name, style=TOOL_STYLE)
            gist = message.label.removeprefix(message.tool_name).removeprefix(":").strip()
            if gist:
                head.append(f"  {gist}")
            facts.insert(0, STATUS.get(message.tool_status or "pending", ("?", "dim")))
        else:
            mark, style = KIND_MARK.get(message.kind, ("· ", "dim"))
            head.append(mark, style=style)
            head.append(message.label, style="dim" if message.kind in ("thinking", "event", "note") else "")
        if mine:
            facts.insert(0, ("your message", CHOSEN_STYLE))
        return fit(head, [f for f in facts if f[0]], width)

    def _show_hint(self) -> None:
        """What Fork here keeps at the row under the cursor, and what else can be done there."""
        hint = Text()
        row = self.current_row()
        if row is not None:
            turn = f"turn {self.first_turn + row.turn + 1}"
            message = row.message
            if message is None:
                hint.append(f"Fork here keeps {turn} whole and everything before it", style="dim")
                opened = self.points[row.turn].turn_id in self.expanded
                hint.append(" · ← closes its messages" if opened else " · → shows its messages", style="dim")
            elif not message.exact:
                hint.append(
                    f"{self.adapter.display_name if self.adapter else self.agent} forks at the end of a turn: Fork here keeps {turn} whole "
                    "and everything before it.",
                    style="#d7af5f",
                )
            elif message.kind == "prompt":
                hint.append("Fork here ends on this prompt, before its answer.", style="dim")
            else:
                what = (
                    f"this {message.tool_name} call and its result"
                    if message.kind == "tool call"
                    else f"this {KIND_NOUN.get(message.kind, message.kind)}"
                )
                hint.append(f"Fork here keeps everything up to and including {what}", style="dim")
                hint.append(".", style="dim")
                if row.blocks > 1:
                    hint.append(
                        f" The {row.blocks} blocks of its API message (┌…└) fork as one, each call with its "
                        "result.",
                        style=BRACKET_STYLE,
                    )
            if message is not None and message.can_fork_before:
                hint.append(
                    " b forks just before it, to send a different prompt (edit and resend).", style="#d7af5f"
                )
        self.query_one("#fork-before", Button).disabled = not (
            row and row.message and row.message.can_fork_before
        )
        self.query_one("#fork-hint", Static).update(hint)
        self.query_one("#fork-hint").display = bool(hint)

    def _show(self) -> None:
        """The command box, the notes and the status line from the current state."""
        command = self.query_one("#fork-command", Static)
        plan = self.plan
        if plan is not None:
            shown = Text(plan.command, style="bold")
            if plan.restore is not None:
                shown.append(
                    "\nfinds nothing until the transcript is restored where the agent looks: y restores it",
                    style="#d7af5f",
                )
            command.update(shown)
        else:
            command.update(
                Text("Choose a message and an action: the command appears here, copied.", style="dim")
            )
        self.query_one("#fork-run-buttons").display = plan is not None
        self.query_one("#fork-run", Button).disabled = plan is None or plan.restore is not None
        notes = Text()
        lines = list(plan.notes) if plan else []
        branch = plan.git_branch if plan else None
        if branch and not any(branch in line for line in lines):
            lines.append(f"Recorded git branch at this point: {branch}.")
        for note in lines:
            notes.append("• ", style="#d7af5f")
            notes.append(note + "\n")
        notes.rstrip()
        self.query_one("#fork-notes", Static).update(notes)
        self.query_one("#fork-notes").display = bool(notes)
        status = Text()
        if self.planning:
            status.append("Working out the command…", style="dim")
        elif self.restoring:
            status.append("Restoring the transcript…", style="dim")
        elif self.error:
            status.append(self.error, style=ERROR_STYLE)
        else:
            if self.written is not None:
                status.append("Wrote ", style=OK_STYLE)
                status.append(str(self.written))
                status.append(
                    " · in the session tree, beside its source\n" if self.in_tree else "\n", style=OK_STYLE
                )
            if self.copied_how:
                status.append(self.copied_how + ("\n" if self.ran else ""), style=OK_STYLE)
            if self.ran:
                status.append(self.ran, style=OK_STYLE)
            if self.undo_said is not None:
                if status:
                    status.append("\n")
                status.append_text(self.undo_said)
        self.query_one("#fork-status", Static).update(status)
        self.query_one("#fork-status").display = bool(status)

    # ------------------------------------------------------------------ the list

    def current_row(self) -> Row | None:
        index = self.query_one(PointList).highlighted
        if index is None or index >= len(self.rows):
            return None
        return self.rows[index]

    def current_point(self) -> ForkPoint | None:
        row = self.current_row()
        return self.points[row.turn] if row is not None else None

    @on(OptionList.OptionHighlighted, "#fork-points")
    def _highlighted(self) -> None:
        self._show_hint()
        self._want_undo()
        self.refresh_bindings()

    def action_expand(self) -> None:
        row = self.current_row()
        if row is None or row.message is not None:
            return
        turn = self.points[row.turn].turn_id
        if turn in self.expanded:
            return
        self.expanded.add(turn)
        if turn not in self.messages:
            self._read_messages(turn)
        self._fill(keep=(turn, None))

    def action_collapse(self) -> None:
        row = self.current_row()
        if row is None:
            return
        turn = self.points[row.turn].turn_id
        if turn in self.expanded:
            self.expanded.discard(turn)
            self._fill(keep=(turn, None))

    def action_toggle(self) -> None:  # type: ignore[override]  # replaces Textual's toggle(attribute) action
        row = self.current_row()
        if row is not None and self.points[row.turn].turn_id in self.expanded:
            self.action_collapse()
        else:
            self.action_expand()

    @work(thread=True, group="fork-messages", exit_on_error=False, description="fork messages")
    def _read_messages(self, turn_id: str) -> None:
        from threadloom.core.db import LedgerError, connect

        try:
            conn = connect(self.db_path, readonly=True)
        except LedgerError as exc:
            self.post_message(MessagesRead(turn_id, [], f"Cannot read the messages of this turn: {exc}"))
            return
        try:
            self.post_message(MessagesRead(turn_id, fork_messages(conn, self.session_id, [turn_id]), ""))
        except sqlite3.Error as exc:
            self.post_message(MessagesRead(turn_id, [], f"Cannot read the messages of this turn: {exc}"))
        finally:
            conn.close()

    def on_messages_read(self, event: MessagesRead) -> None:
        if event.error:
            self.expanded.discard(event.turn_id)
            self._fail(event.error)
        else:
            self.messages[event.turn_id] = event.messages
        row = self.current_row()
        keep = (self.points[row.turn].turn_id, row.message.entry_id if row.message else None) if row else None
        self._fill(keep=keep)

    # ------------------------------------------------------------------ state

    def _turn_ref(self, point: ForkPoint) -> str:
        """The turn's last record, by id (a uuid alone could name a record of another session): a
        fork there keeps the turn and everything before it."""
        if point.cut_entry_id is not None:
            return str(point.cut_entry_id)
        seqs = browse.branch_seqs(self.conn, self.session_id, [point.turn_id])
        rows = browse.message_page(self.conn, self.session_id, seqs[-1], seqs[-1]) if seqs else []
        return str(rows[0].entry_id) if rows else (point.cut_uuid or point.turn_id)

    def _target(self, *, before: bool = False) -> Target | None:
        """Where the row under the cursor cuts a fork."""
        row = self.current_row()
        if row is None:
            return None
        turn = f"turn {self.first_turn + row.turn + 1}"
        message = row.message
        if message is None or (not message.exact and not before):
            return Target(self._turn_ref(self.points[row.turn]), f"the end of {turn}")
        if before:
            return Target(str(message.entry_id), f"just before the prompt of {turn}", before=True)
        what = f"{message.tool_name} call" if message.kind == "tool call" else message.kind
        whole = " (with its whole API message)" if row.blocks > 1 else ""
        return Target(str(message.entry_id), f"the chosen {what} of {turn}{whole}")

    def _busy(self) -> bool:
        return (
            bool(self.planning)
            or self.restoring
            or self.pending is not None
            or self.query_one("#fork-prompt-input").display
        )

    def _fail(self, message: str) -> None:
        self.plan, self.written, self.copied_how, self.ran, self.error = None, None, "", "", message
        self.undo_said = None
        self._show()
        self._reveal("#fork-status")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("fork_here", "fork_prompt", "fork_before", "resume", "fork_end"):
            if action == "fork_before":  # shown on prompts only
                row = self.current_row() if self.points_read else None
                if row is None or row.message is None or not row.message.can_fork_before:
                    return False
            if self._busy():
                return None
            if action in ("fork_here", "fork_prompt") and not self.points:
                return None
        if action == "confirm":
            return self.pending is not None or (
                self.plan is not None and self.plan.restore is not None and not self._busy()
            )
        if action == "copy":
            return True if self.plan is not None and not self._busy() else None
        if action == "undo_patch":
            return True if self._undo_here() is not None and not self._busy() else None
        if action == "run":  # a command that finds nothing until restored is not offered as working
            return True if self.plan is not None and self.plan.restore is None and not self._busy() else None
        return True

    # ------------------------------------------------------------------ actions

    def action_fork_here(self) -> None:
        target = self._target()
        if target is None or self._busy():
            return
        self._plan("fork", target)

    def action_fork_before(self) -> None:
        row = self.current_row()
        if self._busy() or row is None or row.message is None or not row.message.can_fork_before:
            return
        if not (self.adapter and self.adapter.forks_before_prompt):
            self._fail(
                f"Forking before a prompt is for Claude Code and Codex sessions; for {self.agent} fork at the "
                "message before it."
            )
            return
        self._ask_prompt("before")

    def _plan(self, action: str, target: Target | None = None, prompt: str | None = None) -> None:
        self.planning, self.target, self.error = action, target, ""
        self.plan, self.written, self.copied_how, self.ran = (
            None,
            None,
            "",
            "",
        )  # the last command is not this one
        self.in_tree = False
        self.undo_said = None
        self._show()
        self.refresh_bindings()
        self._make_plan(action, target, prompt)

    @work(thread=True, exclusive=True, group="fork-plan", exit_on_error=False, description="fork plan")
    def _make_plan(self, action: str, target: Target | None, prompt: str | None) -> None:
        from threadloom.core.db import LedgerError, connect

        failure = {
            "fork": "Cannot fork here",
            "fork-prompt": "Cannot fork here",
            "resume": "Cannot resume this session",
            "fork-end": "Cannot fork this session at its end",
        }[action]
        try:
            conn = connect(self.db_path, readonly=True)
        except LedgerError as exc:
            self.post_message(PlanMade(action, None, f"{failure}: {exc}"))
            return
        ref = target.ref if target else ""
        try:
            if action == "fork":
                plan = plan_fork(conn, ref, before=bool(target and target.before), prompt=prompt)
            elif action == "fork-prompt":
                plan = native_fork_plan(conn, ref, prompt or "")
            else:
                plan = resume_plan(conn, self.session_id, fork_at_end=action == "fork-end")
        except (ForkError, OSError, sqlite3.Error) as exc:
            self.post_message(PlanMade(action, None, f"{failure}: {exc}"))
            return
        finally:
            conn.close()
        self.post_message(PlanMade(action, plan, ""))

    def on_plan_made(self, event: PlanMade) -> None:
        self.planning = ""
        plan = event.plan
        if plan is None:
            self._fail(event.error)
        elif (
            event.action == "fork" and plan.lines
        ):  # threadloom writes the transcript: say what and where first
            self._ask_write(plan)
        elif plan.restore is not None:  # the command finds nothing until the transcript is back
            self._ask_restore(plan)
        else:  # a command only; Gemini's plan already wrote its truncated copy to a temporary file
            self._finish(plan, Path(plan.path) if plan.path else None)
        self.refresh_bindings()

    def _ask(
        self, plan: ForkPlan, asking: str, question: Text, rows: list[tuple[str, str]], yes: str
    ) -> None:
        self.pending, self.asking = plan, asking
        self.error = ""
        self._show()  # the status line no longer says the command is being worked out
        table = Table.grid(padding=(0, 2))
        table.add_column(style="dim", no_wrap=True)
        table.add_column(overflow="fold")
        for label, value in rows:
            table.add_row(label, value)
        self.query_one("#fork-confirm-text", Static).update(Group(question, table))
        self.query_one("#fork-yes", Button).label = yes
        self.query_one("#fork-confirm").display = True
        self.query_one("#fork-yes", Button).focus(scroll_visible=False)
        self._reveal("#fork-confirm")
        self.refresh_bindings()

    def _ask_write(self, plan: ForkPlan) -> None:
        rows = [
            ("file", f"{plan.path}  (new, mode 0600; nothing is overwritten)"),
            ("holds", self._holds(plan)),
            ("source", "untouched"),
        ]
        undo = self._undo_here()
        if undo is not None and undo.files and self.target is not None and self.target.ref == self.undo_ref:
            count = len(undo.files)
            rows.append(
                (
                    "files",
                    f"{count_of(count, 'file')} edited after this point {left_as_is(count)}"
                    + (" (u writes a patch that takes them back)" if undo.patch else ""),
                )
            )
        rows.append(("then", plan.command + "   (copied once the file is written)"))
        self._ask(
            plan,
            "write",
            Text("Write a new session?  (y or Enter: yes · Esc: no)", style="bold"),
            rows,
            "Write the fork",
        )

    def _ask_restore(self, plan: ForkPlan) -> None:
        step = plan.restore
        assert step is not None
        targets = list(step.files.values())
        rows = [("file", targets[0] if targets else step.folder)]
        if len(targets) > 1:  # its subagents' files: the count, not a screenful of paths
            rows.append(("", f"and {len(targets) - 1} more of the session's files, beside it"))
        rows.append(("then", plan.command + "   (copied once it is restored)"))
        question = Text(step.question, style="bold")
        question.append("  (y or Enter: yes · Esc: no)", style="dim")
        self._ask(plan, "restore", question, rows, "Restore it")

    def _holds(self, plan: ForkPlan) -> str:
        calls = (
            ", 1 tool call with its result"
            if plan.tool_calls == 1
            else f", {plan.tool_calls} tool calls with their results"
        )
        where = self.target.where if self.target else "the chosen point"
        if plan.branch:
            return (
                f"{plan.records} records{calls}: this branch up to {where}, new session id "
                f"{plan.new_session_id}, titled “{_short_title(plan.title)}”"
            )
        held = f"this session up to {where} ({plan.records} lines{calls})"
        return held + (f", new session id {plan.new_session_id}" if plan.new_session_id else "")

    def _reveal(self, selector: str) -> None:
        """Scroll the dialog (small terminals) so that `selector` is on screen once laid out."""
        box = self.query_one(DialogBox)
        self.call_after_refresh(lambda: box.scroll_to_widget(self.query_one(selector), animate=False))

    def _close_ask(self) -> None:
        self.pending, self.asking = None, ""
        self.query_one("#fork-confirm").display = False
        self.query_one(PointList).focus(scroll_visible=False)
        self.refresh_bindings()

    def _cancel_ask(self) -> None:
        """No to the question: a restore not made leaves the command on show, said not to work yet."""
        plan, asking = self.pending, self.asking
        self._close_ask()
        if asking == "restore" and plan is not None:
            self.plan, self.written, self.copied_how, self.error = plan, None, "", ""
            self.ran = ""
            self._show()

    def action_confirm(self) -> None:
        """y: yes to the question on show; with none, restore the transcript of the command shown."""
        if self.pending is not None:
            (self.action_write if self.asking == "write" else self._restore_pending)()
        elif self.plan is not None and self.plan.restore is not None and not self._busy():
            self.pending, self.asking = self.plan, "restore"
            self._restore_pending()

    def action_write(self) -> None:
        from threadloom.core.fork import write_fork

        plan = self.pending
        if plan is None or self.asking != "write":
            return
        self._close_ask()
        try:
            path = write_fork(plan)
        except FileExistsError:
            self._fail(
                f"A file already exists at {plan.path}; nothing was written or overwritten. "
                "Press f again for a fork with a new session id."
            )
            return
        except (ForkError, OSError) as exc:
            self._fail(f"Could not write the fork: {exc}")
            return
        self.post_message(ForkWritten(path))
        if plan.restore is not None:
            self.written = path
            self._ask_restore(plan)
            return
        self._finish(plan, path)

    def _restore_pending(self) -> None:
        plan = self.pending
        if plan is None or self.asking != "restore":
            return
        self._close_ask()
        self.restoring, self.error = True, ""
        self._show()
        self.refresh_bindings()
        self._restore(plan)

    @work(
        thread=True,
        exclusive=True,
        group="fork-restore",
        exit_on_error=False,
        description="restore transcript",
    )
    def _restore(self, plan: ForkPlan) -> None:
        """Write the transcript back where the agent looks (core never overwrites), from the archive."""
        from threadloom.core.archive import RestoreError
        from threadloom.core.db import LedgerError, connect
        from threadloom.core.fork import restore_for

        folder = plan.restore.folder if plan.restore else ""
        try:
            conn = connect(self.db_path, readonly=True)
        except LedgerError as exc:
            self.post_message(Restored(plan, f"Could not restore the transcript: {exc}"))
            return
        try:
            restore_for(conn, plan)
        except FileExistsError as exc:
            self.post_message(
                Restored(
                    plan,
                    f"{exc.filename} appeared meanwhile; a restore never overwrites, so "
                    "nothing more was written. Choose the action again.",
                )
            )
            return
        except (RestoreError, OSError, sqlite3.Error) as exc:
            self.post_message(Restored(plan, f"Could not restore the transcript to {folder}: {exc}"))
            return
        finally:
            conn.close()
        self.post_message(Restored(plan, ""))

    def on_restored(self, event: Restored) -> None:
        self.restoring = False
        if event.error:
            self._fail(event.error)
        else:
            self._finish(event.plan, self.written)
        self.refresh_bindings()

    def action_fork_prompt(self) -> None:
        if self._busy() or self.current_row() is None:
            return
        if not (self.adapter and self.adapter.forks_natively):
            self._fail(
                f"Only Claude Code can be started from outside as a fork with a new prompt; for {self.agent} "
                "use Fork here (or Fork at end) and type the prompt in the new session."
            )
            return
        self._ask_prompt("native")

    def _ask_prompt(self, purpose: str) -> None:
        box = self.query_one("#fork-prompt-input", Input)
        self.prompt_for = purpose
        box.placeholder = {
            "before": "The prompt to send instead (empty: type it in the session; ⏎ breaks a line) · Enter makes the command · Esc cancels",
            "native": "The new prompt · Enter makes the command · Esc cancels",
            "undo": "Where to write the undo patch · Enter writes it · Esc cancels",
        }[purpose]
        box.border_title = {
            "before": "Instead of this prompt, send (edit it; ⏎ is a line break)",
            "native": "The fork goes on with",
            "undo": "Write the undo patch to",
        }[purpose]
        box.value = (
            self._patch_path() if purpose == "undo" else self._prompt_to_edit() if purpose == "before" else ""
        )
        box.cursor_position = len(box.value)
        box.select_on_focus = purpose != "before"  # the prompt is there to edit: typing adds to it
        box.display = True
        box.focus(scroll_visible=False)
        self._reveal("#fork-prompt-input")
        self.refresh_bindings()

    def _prompt_to_edit(self) -> str:
        """The prompt under the cursor as it was sent, to edit and send instead: on the box's one
        line, each line break shown as ⏎ (and sent as one)."""
        row = self.current_row()
        text = row.message.text if row is not None and row.message is not None else None
        return LINE_BREAK.join((text or "").replace("\r\n", "\n").split("\n")).strip()

    @on(Input.Submitted, "#fork-prompt-input")
    def _prompt_submitted(self, event: Input.Submitted) -> None:
        prompt = event.value.strip()
        purpose = self.prompt_for
        if purpose == "before":
            prompt = prompt.replace(LINE_BREAK, "\n").replace("⏎", "\n").strip()
        if purpose == "undo":
            if prompt:
                self._hide_prompt()
                self._write_undo_patch(prompt)
            return
        if not prompt and purpose == "native":
            self.notify("Type the prompt the fork continues with", timeout=2)
            return
        target = self._target(before=purpose == "before")
        self._hide_prompt()
        if target is None:
            return
        if purpose == "before":
            self._plan("fork", target, prompt or None)
        else:
            self._plan("fork-prompt", target, prompt)

    def _hide_prompt(self) -> None:
        self.query_one("#fork-prompt-input").display = False
        self.prompt_for = ""
        self.query_one(PointList).focus()
        self.refresh_bindings()

    # ------------------------------------------------------------------ what a fork does not undo

    def _want_undo(self) -> None:
        """The files edited after the point under the cursor: read in a worker, one at a time, the
        latest point winning (holding a key down starts one read, not one per row)."""
        target = self._target() if self.points_read else None
        ref = target.ref if target is not None and target.ref.isdigit() else None
        if ref == self.undo_wanted:
            return
        self.undo_wanted = ref
        self._show_undo()
        if ref is not None and not self.undo_reading and ref != self.undo_ref:
            self.undo_reading = True
            self._read_undo(ref)

    @work(thread=True, group="fork-undo", exit_on_error=False, description="edits after the fork point")
    def _read_undo(self, ref: str) -> None:
        from threadloom.core.db import LedgerError, connect
        from threadloom.core.undo import plan_undo

        try:
            conn = connect(self.db_path, readonly=True)
        except LedgerError as exc:
            self.post_message(UndoRead(ref, None, str(exc)))
            return
        try:
            self.post_message(UndoRead(ref, plan_undo(conn, self.session_id, int(ref)), ""))
        except (LookupError, sqlite3.Error) as exc:
            self.post_message(UndoRead(ref, None, str(exc)))
        finally:
            conn.close()

    def on_undo_read(self, event: UndoRead) -> None:
        self.undo_reading = False
        self.undo_ref, self.undo = event.ref, event.plan
        if event.error:
            self.undo_ref, self.undo = None, None
        if self.undo_wanted is not None and self.undo_wanted != event.ref:  # the cursor moved on meanwhile
            self.undo_reading = True
            self._read_undo(self.undo_wanted)
        self._show_undo()
        if self.asking == "write" and self.pending is not None:  # the question says what stays edited too
            self._ask_write(self.pending)
        self.refresh_bindings()

    def _undo_here(self) -> UndoPlan | None:
        """The edits after the point under the cursor, once read."""
        return self.undo if self.undo is not None and self.undo_ref == self.undo_wanted else None

    def _show_undo(self) -> None:
        line = Text()
        undo = self._undo_here()
        if self.undo_wanted is None:
            pass
        elif undo is None:
            line.append("Looking for files edited after this point…", style="dim")
        elif not undo.files:
            line.append("No file edits recorded after this point.", style="dim")
        else:
            count = len(undo.files)
            line.append(
                f"Not undone by a fork here: {count_of(count, 'file')} edited after this point "
                f"{left_as_is(count)}: ",
                style=WARN_STYLE,
            )
            named = 1 if self.has_class("-short") else 6  # a short terminal: the first, and how many more
            for i, change in enumerate(undo.files[:named]):
                line.append(", " if i else "")
                line.append(printable(change.path))
                what = change.tool + (", new" if change.created else "")
                line.append(
                    f" ({what})" if change.revertible else f" ({what}; the records cannot take it back)",
                    style="dim" if change.revertible else WARN_STYLE,
                )
            if count > named:
                line.append(f" and {count - named} more")
            covered = sum(1 for f in undo.files if f.revertible)
            if undo.patch:
                line.append(
                    " · u writes a patch that takes "
                    + ("them" if covered == count else f"{covered} of them")
                    + " back",
                    style="bold",
                )
        widget = self.query_one("#fork-undo", Static)
        widget.update(line)
        widget.display = bool(line)

    def _patch_path(self) -> str:
        """Where the undo patch is proposed to go: the folder threadloom was started in (a patch in the
        session's own folder would be a new file in the working tree it is meant to restore)."""
        tag = "".join(ch for ch in self.session_id[:8] if ch.isalnum())
        return str(Path.cwd() / f"threadloom-undo-{tag}-at-{self.undo_ref}.patch")

    def action_undo_patch(self) -> None:
        undo = self._undo_here()
        if undo is None or self._busy():
            return
        self.error = ""
        if not undo.patch:
            self.undo_said = Text(
                "No undo patch: "
                + (
                    "the records cannot take back any of the files edited after this point."
                    if undo.files
                    else "no file was edited after this point."
                ),
                style=WARN_STYLE,
            )
            self.undo_said.append_text(self._left_out(undo))
            self._show()
            self._reveal("#fork-status")
            return
        self._ask_prompt("undo")

    def _write_undo_patch(self, where: str) -> None:
        """Write the patch (owner-only, never over a file) and say what it covers and what it does not."""
        undo = self._undo_here()
        if undo is None:
            return
        path = Path(where).expanduser()
        path = path if path.is_absolute() else Path.cwd() / path
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            self.error = f"{path} already exists; the undo patch never overwrites a file: press u and choose another path."
            self._show()
            self._reveal("#fork-status")
            return
        except OSError as exc:
            self.error = f"Cannot write the undo patch to {path}: {exc.strerror or exc}"
            self._show()
            self._reveal("#fork-status")
            return
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(undo.patch)
        from threadloom.core.fork import in_folder, shell_command

        covered = ", ".join(printable(f.path) for f in undo.files if f.revertible)
        apply = in_folder(
            undo.cwd,
            shell_command(["git", "apply", "--check", str(path)])
            + " && "
            + shell_command(["git", "apply", str(path)]),
            [],
        )
        said = Text.assemble(
            ("Wrote the undo patch to ", OK_STYLE),
            str(path),
            (f", covering {covered}.", OK_STYLE),
            "\nIt changes nothing by itself; check and apply it with: ",
            (apply, "bold"),
        )
        said.append_text(self._left_out(undo))
        self.error, self.undo_said = "", said
        self._show()
        self._reveal("#fork-status")

    @staticmethod
    def _left_out(undo: UndoPlan) -> Text:
        text = Text()
        for problem in undo.problems:
            text.append("\nNot in the patch: ", style=WARN_STYLE)
            text.append(printable(problem))
        for note in undo.notes:
            text.append("\nNote: ", style=WARN_STYLE)
            text.append(printable(note))
        return text

    def action_resume(self) -> None:
        self._whole_session(fork_at_end=False)

    def action_fork_end(self) -> None:
        self._whole_session(fork_at_end=True)

    def _whole_session(self, *, fork_at_end: bool) -> None:
        if not self._busy():
            self._plan("fork-end" if fork_at_end else "resume")

    def read_back(self) -> None:
        """The app has read the written fork into the archive: said here, where the user looks (a
        toast would cover this dialog's status)."""
        self.in_tree = True
        self._show()

    def _finish(self, plan: ForkPlan, written: Path | None) -> None:
        self.plan, self.written, self.error, self.ran = plan, written, "", ""
        self.in_tree = False
        self.copied_how = self._copy(plan.command)
        self._show()
        self._reveal("#fork-status")
        self.refresh_bindings()

    def _copy(self, command: str) -> str:
        """The system clipboard first; else the terminal's (OSC 52). Says which in the picker's status
        (a toast would sit over the command it speaks of)."""
        from threadloom.core import clipboard

        how = clipboard.copy(command)
        if how:
            message = f"Command copied to the {how}."
        else:
            self.app.copy_to_clipboard(command)
            message = (
                "No system clipboard here: sent to the terminal's clipboard (OSC 52). "
                "If your terminal ignores that, select the command above."
            )
        return message

    def action_copy(self) -> None:
        if self.plan is not None:
            self.copied_how = self._copy(self.plan.command)
            self._show()

    def action_run(self) -> None:
        """Leave the TUI for the agent: the command runs in this terminal, and the picker comes back
        when it ends (then new sessions are read). Where the terminal cannot be handed over, the
        command is copied instead."""
        plan = self.plan
        if plan is None or self._busy():
            return
        if plan.restore is not None:
            self.error = (
                "The command finds nothing until the transcript is restored where the agent looks: press y."
            )
            self._show()
            return
        if os.name == "nt":
            self._cannot_run("the commands threadloom makes are for a POSIX shell")
            return
        try:
            with hand_over(self.app):
                code = run_in_shell(plan.command)
        except SuspendNotSupported:
            self._cannot_run("this terminal cannot be handed over from here")
            return
        except OSError as exc:
            self.error = f"Could not start the shell ({os.environ.get('SHELL') or '/bin/sh'}): {exc}"
            self._show()
            return
        self.error = ""
        self.ran = (
            f"The agent ended (exit {code}); reading what it wrote."
            if code == 0
            else f"The command ended with exit status {code}; reading what it wrote."
        )
        self._show()
        self._reveal("#fork-status")
        self.post_message(AgentRan())

    def _cannot_run(self, why: str) -> None:
        self.copied_how = self._copy(self.plan.command) if self.plan else ""
        self.ran = f"Not run: {why}. The command is copied: paste it in a terminal."
        self._show()
        self._reveal("#fork-status")

    def action_help(self) -> None:
        from threadloom.tui.screens import HelpScreen, key_rows

        focused = self.focused
        own, everywhere = key_rows(self, focused)
        where = (
            "the list"
            if isinstance(focused, PointList)
            else "a button"
            if isinstance(focused, Button)
            else "the prompt"
            if isinstance(focused, Input)
            else "the dialog"
        )
        self.app.push_screen(
            HelpScreen(
                f"Fork picker · {where}",
                own,
                everywhere,
                everywhere_title="Anywhere in the picker",
            )
        )

    def action_back(self) -> None:
        if self.pending is not None:
            self._cancel_ask()
        elif self.query_one("#fork-prompt-input").display:
            self._hide_prompt()
        else:
            self.dismiss()

    @on(OptionList.OptionSelected, "#fork-points")
    def _point_selected(self) -> None:
        self.action_fork_here()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions = {
            "fork-here": self.action_fork_here,
            "fork-before": self.action_fork_before,
            "fork-prompt": self.action_fork_prompt,
            "fork-resume": self.action_resume,
            "fork-end": self.action_fork_end,
            "fork-yes": self.action_confirm,
            "fork-cancel": self._cancel_ask,
            "fork-run": self.action_run,
            "fork-copy": self.action_copy,
        }
        action = actions.get(event.button.id or "")
        if action is not None:
            event.stop()
            action()
