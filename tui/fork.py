"""The fork picker: continue any conversation from any turn, with the exact command shown and copied.

The points are the turn boundaries of the branch through the chosen message (`core.fork.fork_points`);
forking at one keeps that turn and everything before it. For Claude Code "Fork here" writes a new
transcript beside the source, after a confirmation that says what goes where; the other actions
only make a command. Whatever `core.fork` cannot do is said in the dialog, never as a traceback.

Reading the turns and planning a fork read the whole session, so both run in thread workers with
their own read-only connections: the dialog opens at once and says what it is doing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from core import browse
from core.fork import ForkError, ForkPlan, ForkPoint, fork_points, native_fork_plan, plan_fork, resume_plan
from core.query import SessionSummary, get_session
from core.text import one_line
from tui.panes import fit
from tui.render import ROLE_STYLE, plain_title, short_model, when

if TYPE_CHECKING:
    from tui.app import ThreadloomApp

CLAUDE = "claude-code"
AROUND = 60  # turns listed on each side of the chosen one (a long session has thousands)
ERROR_STYLE = "bold #ff5f5f"
OK_STYLE = "#87d787"


class PointList(OptionList):
    """Fork points, oldest first: when, model, tools, then the prompt and the reply."""

    BINDINGS = [
        Binding("down,j", "cursor_down", "Down", show=False, id="fork.down"),
        Binding("up,k", "cursor_up", "Up", show=False, id="fork.up"),
        Binding("home,g", "first", "First", show=False, id="fork.first"),
        Binding("end,G", "last", "Last", show=False, id="fork.last"),
        Binding("pagedown", "page_down", "Page down", show=False, id="fork.page-down"),
        Binding("pageup", "page_up", "Page up", show=False, id="fork.page-up"),
        Binding("left", "scroll_left", "Scroll left", show=False, id="fork.scroll-left"),
        Binding("right", "scroll_right", "Scroll right", show=False, id="fork.scroll-right"),
        Binding("ctrl+pageup", "page_left", "Page left", show=False, id="fork.page-left"),
        Binding("ctrl+pagedown", "page_right", "Page right", show=False, id="fork.page-right"),
        Binding("enter", "select", "Fork here", show=False, id="fork.select"),
    ]


class PointsRead(Message):
    def __init__(self, points: list[ForkPoint], error: str) -> None:
        super().__init__()
        self.points, self.error = points, error


class PlanMade(Message):
    def __init__(self, action: str, plan: ForkPlan | None, error: str) -> None:
        super().__init__()
        self.action, self.plan, self.error = action, plan, error


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


class ForkPicker(ModalScreen[None]):
    """Pick a turn and an action; the command appears below, is copied, and stays selectable."""

    BINDINGS = [
        Binding("escape", "back", "Close", id="fork.close", tooltip="Cancel the current step, or close"),
        Binding("f", "fork_here", "Fork here", id="fork.here",
                tooltip="Write a new session that ends after this turn (asks first)"),
        Binding("n", "fork_prompt", "New prompt", id="fork.prompt",
                tooltip="Let the agent fork here itself, continuing with a new prompt"),
        Binding("r", "resume", "Resume", id="fork.resume", tooltip="Resume the whole session"),
        Binding("e", "fork_end", "Fork at end", id="fork.end", tooltip="Fork the whole session at its end"),
        Binding("c", "copy", "Copy", id="fork.copy", tooltip="Copy the command again"),
        Binding("ctrl+c,super+c", "screen.copy_text", "Copy selection", show=False, id="fork.copy-selection"),
        Binding("tab", "app.focus_next", "Next", show=False, id="fork.focus-next"),
        Binding("shift+tab", "app.focus_previous", "Previous", show=False, id="fork.focus-previous"),
    ]

    def __init__(self, conn: sqlite3.Connection, db_path: Path, session_id: str, *, entry_id: int | None = None,
                 turn_id: str | None = None) -> None:
        super().__init__(id="fork-picker")
        self.conn = conn
        self.db_path = db_path
        self.session_id = session_id
        self.entry_id = entry_id
        self.turn_id = turn_id
        self.session: SessionSummary | None = get_session(conn, session_id)
        self.agent = self.session.agent if self.session else "?"
        self.points: list[ForkPoint] = []  # the turns listed: the branch, or AROUND the chosen one
        self.first_turn = 0  # the branch position of points[0]
        self.branch_turns = 0
        self.points_read = False
        self.chosen = 0
        self.planning = ""  # the action whose plan a worker is making
        self.plan: ForkPlan | None = None  # the command on show
        self.pending: ForkPlan | None = None  # a fork transcript waiting for "Write"
        self.written: Path | None = None
        self.copied_how = ""
        self.error = ""

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with DialogBox(id="fork-box") as box:
            title = (self.session.title or self.session.task_description) if self.session else None
            box.border_title = Text("Fork or resume · ") + plain_title(title, 60)
            box.border_subtitle = "Esc closes"
            yield Static(id="fork-about")
            yield PointList(id="fork-points")
            with Horizontal(id="fork-actions"):
                yield ActionButton("Fork here", id="fork-here", variant="primary", compact=True)
                yield ActionButton("Fork with a new prompt", id="fork-prompt", compact=True)
                yield ActionButton("Resume", id="fork-resume", compact=True)
                yield ActionButton("Fork at end", id="fork-end", compact=True)
            yield Input(placeholder="The new prompt · Enter makes the command · Esc cancels", id="fork-prompt-input")
            with Vertical(id="fork-confirm"):
                yield Static(id="fork-confirm-text")
                with Horizontal(id="fork-confirm-buttons"):
                    yield ActionButton("Write the fork", id="fork-write", variant="warning", compact=True)
                    yield ActionButton("Cancel", id="fork-cancel", compact=True)
            yield Static(id="fork-command")
            yield Static(id="fork-notes")
            yield Static(id="fork-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#fork-command", Static).border_title = "Command"
        self.query_one("#fork-prompt-input").display = False
        self.query_one("#fork-confirm").display = False
        self.query_one("#fork-about", Static).update(Text("Reading the turns of this branch…", style="dim"))
        self._read_points()
        self._show()

    @work(thread=True, exclusive=True, group="fork-points", exit_on_error=False, description="fork points")
    def _read_points(self) -> None:
        from core.db import LedgerError, connect

        try:
            conn = connect(self.db_path, readonly=True)
        except LedgerError as exc:
            self.post_message(PointsRead([], f"Cannot read the turns of this session: {exc}"))
            return
        try:
            self.post_message(PointsRead(fork_points(conn, self.session_id, around_entry=self.entry_id), ""))
        except sqlite3.Error as exc:
            self.post_message(PointsRead([], f"Cannot read the turns of this session: {exc}"))
        finally:
            conn.close()

    def on_points_read(self, event: PointsRead) -> None:
        self.points_read, self.branch_turns = True, len(event.points)
        if event.error:
            self.error = event.error
            self._show()
        ids = [p.turn_id for p in event.points]
        chosen = ids.index(self.turn_id) if self.turn_id in ids else max(0, len(ids) - 1)
        self.first_turn = max(0, chosen - AROUND)
        self.points = event.points[self.first_turn : chosen + AROUND + 1]
        self.chosen = chosen - self.first_turn
        points = self.query_one(PointList)
        width = self._option_width()
        points.set_options([Option(self._prompt(i, p, width), id=p.turn_id) for i, p in enumerate(self.points)])
        if self.points:
            points.highlighted = self.chosen
            self.call_after_refresh(points.scroll_to_highlight, top=False)
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
        about.append(" · a fork keeps the chosen turn and everything before it", style="dim")
        if not self.points:
            about.append("\nThis session has no turns to fork at; Resume and Fork at end still work.", style="#d7af5f")
        self.query_one("#fork-about", Static).update(about)
        self.refresh_bindings()

    def _option_width(self) -> int:
        return max(40, min(110, self.app.size.width - 10) - 6)

    def _prompt(self, index: int, point: ForkPoint, width: int) -> Text:
        head = Text(no_wrap=True, overflow="ellipsis")
        chosen = index == self.chosen and self.turn_id is not None
        head.append("▶ " if chosen else "  ", style="bold #d7af5f")
        head.append(f"turn {self.first_turn + index + 1}", style="bold")
        facts = [(when(point.timestamp)[:12], "dim"), (short_model(point.model), "#af87d7")]
        if point.tool_call_count:
            facts.append((f"{point.tool_call_count} tool call{'s' if point.tool_call_count != 1 else ''}", "dim"))
        if chosen:
            facts.insert(0, ("your message", "#d7af5f"))
        first = fit(head, [f for f in facts if f[0]], width)
        prompt = Text.assemble(("    › ", ROLE_STYLE["user"]), one_line(point.prompt or "(no prompt text)", width - 6))
        reply = Text.assemble(("    ‹ ", ROLE_STYLE["assistant"]),
                              (one_line(point.reply or "(no reply text)", width - 6), "dim"))
        return Text("\n").join([first, prompt, reply])

    def _show(self) -> None:
        """The command box, the notes and the status line from the current state."""
        command = self.query_one("#fork-command", Static)
        if self.plan is not None:
            command.update(Text(self.plan.command, style="bold"))
        else:
            command.update(Text("Choose a turn and an action; the command appears here and is copied.", style="dim"))
        notes = Text()
        lines = list(self.plan.notes) if self.plan else []
        branch = self.plan.git_branch if self.plan else None
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
        elif self.error:
            status.append(self.error, style=ERROR_STYLE)
        else:
            if self.written is not None:
                status.append("Wrote ", style=OK_STYLE)
                status.append(str(self.written) + "\n")
            if self.copied_how:
                status.append(self.copied_how, style=OK_STYLE)
        self.query_one("#fork-status", Static).update(status)
        self.query_one("#fork-status").display = bool(status)

    # ------------------------------------------------------------------ state

    def current_point(self) -> ForkPoint | None:
        index = self.query_one(PointList).highlighted
        if index is None or index >= len(self.points):
            return None
        return self.points[index]

    def _entry_ref(self, point: ForkPoint) -> str:
        """The turn's last record, by id (a uuid alone could name a record of another session): a
        fork there keeps the turn and everything before it."""
        if point.cut_entry_id is not None:
            return str(point.cut_entry_id)
        seqs = browse.branch_seqs(self.conn, self.session_id, [point.turn_id])
        rows = browse.message_page(self.conn, self.session_id, seqs[-1], seqs[-1]) if seqs else []
        return str(rows[0].entry_id) if rows else (point.cut_uuid or point.turn_id)

    def _busy(self) -> bool:
        return bool(self.planning) or self.pending is not None or self.query_one("#fork-prompt-input").display

    def _fail(self, message: str) -> None:
        self.plan, self.written, self.copied_how, self.error = None, None, "", message
        self._show()
        self._reveal("#fork-status")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("fork_here", "fork_prompt", "resume", "fork_end"):
            if self._busy():
                return None
            if action in ("fork_here", "fork_prompt") and not self.points:
                return None
        if action == "copy":
            return True if self.plan is not None else None
        return True

    # ------------------------------------------------------------------ actions

    def action_fork_here(self) -> None:
        point = self.current_point()
        if point is None or self._busy():
            return
        self._plan("fork", self._entry_ref(point))

    def _plan(self, action: str, ref: str | None = None, prompt: str | None = None) -> None:
        self.planning, self.error = action, ""
        self._show()
        self.refresh_bindings()
        self._make_plan(action, ref, prompt)

    @work(thread=True, exclusive=True, group="fork-plan", exit_on_error=False, description="fork plan")
    def _make_plan(self, action: str, ref: str | None, prompt: str | None) -> None:
        from core.db import LedgerError, connect

        failure = {"fork": "Cannot fork here", "fork-prompt": "Cannot fork here",
                   "resume": "Cannot resume this session", "fork-end": "Cannot fork this session at its end"}[action]
        try:
            conn = connect(self.db_path, readonly=True)
        except LedgerError as exc:
            self.post_message(PlanMade(action, None, f"{failure}: {exc}"))
            return
        try:
            if action == "fork":
                plan = plan_fork(conn, ref or "")
            elif action == "fork-prompt":
                plan = native_fork_plan(conn, ref or "", prompt or "")
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
        elif event.action == "fork" and plan.lines:  # threadloom writes the transcript: say what and where first
            self._ask(plan)
        else:  # a command only; Gemini's plan already wrote its truncated copy to a temporary file
            self._finish(plan, Path(plan.path) if plan.path else None)
        self.refresh_bindings()

    def _ask(self, plan: ForkPlan) -> None:
        self.pending = plan
        self.error = ""
        self._show()  # the status line no longer says the command is being worked out
        table = Table.grid(padding=(0, 2))
        table.add_column(style="dim", no_wrap=True)
        table.add_column(overflow="fold")
        rows = [
            ("file", f"{plan.path}  (new, mode 0600; nothing is overwritten)"),
            ("holds", self._holds(plan)),
            ("source", "untouched"),
            ("then", plan.command + "   (copied once the file is written)"),
        ]
        for label, value in rows:
            table.add_row(label, value)
        self.query_one("#fork-confirm-text", Static).update(Group(Text("Write a new session?", style="bold"), table))
        self.query_one("#fork-confirm").display = True
        self.query_one("#fork-write", Button).focus(scroll_visible=False)
        self._reveal("#fork-confirm")
        self.refresh_bindings()

    @staticmethod
    def _holds(plan: ForkPlan) -> str:
        calls = f", {plan.tool_calls} tool call{'s' if plan.tool_calls != 1 else ''} with their results"
        if plan.agent == CLAUDE:
            return (f"{plan.records} records{calls}: this branch up to the end of the chosen turn, new session id "
                    f"{plan.new_session_id}, titled “… (fork)”")
        held = f"this session up to the end of the chosen turn ({plan.records} lines{calls})"
        return held + (f", new session id {plan.new_session_id}" if plan.new_session_id else "")

    def _reveal(self, selector: str) -> None:
        """Scroll the dialog (small terminals) so that `selector` is on screen once laid out."""
        box = self.query_one(DialogBox)
        self.call_after_refresh(lambda: box.scroll_to_widget(self.query_one(selector), animate=False))

    def _cancel_ask(self) -> None:
        self.pending = None
        self.query_one("#fork-confirm").display = False
        self.query_one(PointList).focus(scroll_visible=False)
        self.refresh_bindings()

    def action_write(self) -> None:
        from core.fork import write_fork

        plan = self.pending
        if plan is None:
            return
        self._cancel_ask()
        try:
            path = write_fork(plan)
        except FileExistsError:
            self._fail(f"A file already exists at {plan.path}; nothing was written or overwritten. "
                       "Press f again for a fork with a new session id.")
            return
        except (ForkError, OSError) as exc:
            self._fail(f"Could not write the fork: {exc}")
            return
        self._finish(plan, path)
        app: ThreadloomApp = self.app  # type: ignore[assignment]
        app.ingest_fork(path)

    def action_fork_prompt(self) -> None:
        if self._busy() or self.current_point() is None:
            return
        if self.agent != CLAUDE:
            self._fail(f"Only Claude Code can be started from outside as a fork with a new prompt; for {self.agent} "
                       "use Fork here (or Fork at end) and type the prompt in the new session.")
            return
        box = self.query_one("#fork-prompt-input", Input)
        box.display = True
        box.focus(scroll_visible=False)
        self._reveal("#fork-prompt-input")
        self.refresh_bindings()

    @on(Input.Submitted, "#fork-prompt-input")
    def _prompt_submitted(self, event: Input.Submitted) -> None:
        prompt = event.value.strip()
        point = self.current_point()
        if not prompt:
            self.notify("Type the prompt the fork continues with", timeout=2)
            return
        self._hide_prompt()
        if point is not None:
            self._plan("fork-prompt", self._entry_ref(point), prompt)

    def _hide_prompt(self) -> None:
        self.query_one("#fork-prompt-input").display = False
        self.query_one(PointList).focus()
        self.refresh_bindings()

    def action_resume(self) -> None:
        self._whole_session(fork_at_end=False)

    def action_fork_end(self) -> None:
        self._whole_session(fork_at_end=True)

    def _whole_session(self, *, fork_at_end: bool) -> None:
        if not self._busy():
            self._plan("fork-end" if fork_at_end else "resume")

    def _finish(self, plan: ForkPlan, written: Path | None) -> None:
        self.plan, self.written, self.error = plan, written, ""
        self.copied_how = self._copy(plan.command)
        self._show()
        self._reveal("#fork-status")
        self.refresh_bindings()

    def _copy(self, command: str) -> str:
        """The system clipboard first; else the terminal's (OSC 52). Says which, in a notification too."""
        from core import clipboard

        how = clipboard.copy(command)
        if how:
            message = f"Command copied to the {how}."
        else:
            self.app.copy_to_clipboard(command)
            message = ("No system clipboard here: sent to the terminal's clipboard (OSC 52). "
                       "If your terminal ignores that, select the command above.")
        self.notify(message, title="Command copied" if how else "Command sent to the terminal", timeout=6)
        return message

    def action_copy(self) -> None:
        if self.plan is not None:
            self.copied_how = self._copy(self.plan.command)
            self._show()

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
            "fork-here": self.action_fork_here, "fork-prompt": self.action_fork_prompt,
            "fork-resume": self.action_resume, "fork-end": self.action_fork_end,
            "fork-write": self.action_write, "fork-cancel": self._cancel_ask,
        }
        action = actions.get(event.button.id or "")
        if action is not None:
            event.stop()
            action()
