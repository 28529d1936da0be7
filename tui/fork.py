"""The fork picker: continue any conversation from any message, with the exact command shown and copied.

The list is the branch through the chosen message, turn by turn (`core.actions.fork.fork_points`); the
chosen turn is open on its messages (`core.actions.fork.fork_messages`: the prompt, replies, thinking, each
tool call with its result), the others open with → or Space. Forking at a message keeps it and
everything before it (for Claude Code, its whole API message: the blocks marked ┌ ├ └ fork as one);
forking at a turn keeps the whole turn. For Claude Code and Codex "Fork here" writes a new session,
after a confirmation that says what goes where; the other actions only make a command. A command
that needs the transcript put back where the agent looks asks before doing that. `x` hands the
terminal to the agent and comes back when it ends. Under the list: the files the conversation edited
after the point under the cursor, which a fork does not take back (`core.actions.undo`), and `u` writes the
patch that does. Whatever `core.actions.fork` cannot do is said in the dialog, never as a traceback.

What is listed, chosen, asked and done is a `core.actions.fork_session.ForkSession` (`self.model`), which
knows nothing of Textual; this screen lays out the widgets that draw it (`tui.fork_widgets`), turns
keys into its steps and runs the steps that read the archive in thread workers with their own
connections (each reads, then posts what it read for the model to take in here): the dialog opens at
once and says what it is doing.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, OptionList, Static

from ..core.actions.fork import ForkMessage, ForkPlan, ForkPoint
from ..core.actions.fork_session import ForkSession, Row, Target, TurnsRead
from ..core.read.query import display_title
from . import shell, workers
from .events import AgentRan, ForkWritten
from .footer import KeyFooter
from .fork_widgets import (
    ActionButton,
    DialogBox,
    PointList,
    Question,
    about,
    command,
    edits_after,
    hint,
    notes,
    status,
)
from .render import plain_title

if TYPE_CHECKING:
    from ..core.actions.undo import UndoPlan

__all__ = ["ForkPicker", "PointList"]

SHORT = 32  # terminal rows below which the picker is laid out tighter (-short)
PROMPT_BOX = {  # what the one-line box asks for: its placeholder and its title
    "before": (
        "The prompt to send instead (empty: type it in the session; ⏎ breaks a line) · Enter makes the "
        "command · Esc cancels",
        "Instead of this prompt, send (edit it; ⏎ is a line break)",
    ),
    "native": ("The new prompt · Enter makes the command · Esc cancels", "The fork goes on with"),
    "undo": ("Where to write the undo patch · Enter writes it · Esc cancels", "Write the undo patch to"),
}


# ---------------------------------------------------------------------- what the workers read


class PointsRead(Message):
    def __init__(self, read: TurnsRead) -> None:
        super().__init__()
        self.read = read


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
            "ctrl+n",
            "new_with_context",
            "New session",
            id="fork.new-session",
            tooltip="Start a new session with the picked turns (p), or this one, as its context",
        ),
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
        self.db_path = db_path
        self.model = ForkSession(conn, session_id, entry_id=entry_id, turn_id=turn_id, copy=self._copy)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with DialogBox(id="fork-box") as box:
            session = self.model.session
            title = display_title(session) if session else None
            box.border_title = Text("Fork or resume · ") + plain_title(title, 60)
            box.border_subtitle = "F1 keys · Esc closes"
            yield Static(id="fork-about")
            yield PointList(self.model, id="fork-points")
            yield Static(id="fork-hint")
            yield Static(id="fork-undo")
            with Horizontal(id="fork-actions"):
                yield ActionButton("Fork here", id="fork-here", variant="primary", compact=True)
                yield ActionButton("Fork before it", id="fork-before", compact=True)
                yield ActionButton("New prompt", id="fork-prompt", compact=True)
                yield ActionButton("Resume", id="fork-resume", compact=True)
                yield ActionButton("Fork at end", id="fork-end", compact=True)
            yield Input(id="fork-prompt-input")
            yield Question(id="fork-confirm")
            yield Static(id="fork-command")
            with Horizontal(id="fork-run-buttons"):
                yield ActionButton("Run it now", id="fork-run", variant="success", compact=True)
                yield ActionButton("Copy again", id="fork-copy", compact=True)
            yield Static(id="fork-notes")
            yield Static(id="fork-status")
        yield KeyFooter()

    def on_resize(self) -> None:
        from .browser import NARROW

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

    # ------------------------------------------------------------------ drawing the model

    def _show_list(self) -> None:
        """The rows, then what the one under the cursor keeps and leaves (its edits read if wanted)."""
        self.query_one(PointList).show()
        self._show_hint()
        self._want_undo()

    def _show_hint(self) -> None:
        line = hint(self.model)
        self.query_one("#fork-before", Button).disabled = not self.model.can_fork_before()
        self.query_one("#fork-hint", Static).update(line)
        self.query_one("#fork-hint").display = bool(line)

    def _show_undo(self) -> None:
        line = edits_after(self.model, short=self.has_class("-short"))
        widget = self.query_one("#fork-undo", Static)
        widget.update(line)
        widget.display = bool(line)

    def _show(self) -> None:
        """The command box, the notes and the status line from the model."""
        model = self.model
        plan = model.plan
        self.query_one("#fork-command", Static).update(command(model))
        self.query_one("#fork-run-buttons").display = plan is not None
        self.query_one("#fork-run", Button).disabled = plan is None or plan.restore is not None
        for selector, text in (("#fork-notes", notes(model)), ("#fork-status", status(model))):
            widget = self.query_one(selector, Static)
            widget.update(text)
            widget.display = bool(text)

    def _said(self) -> None:
        """Something new is said in the status line: drawn, and scrolled to."""
        self._show()
        self._reveal("#fork-status")

    def _fail(self, message: str) -> None:
        self.model.fail(message)
        self._said()

    def _reveal(self, selector: str) -> None:
        """Scroll the dialog (small terminals) so that `selector` is on screen once laid out."""
        box = self.query_one(DialogBox)
        self.call_after_refresh(lambda: box.scroll_to_widget(self.query_one(selector), animate=False))

    def _copy(self, command: str) -> str:
        """The system clipboard first; else the terminal's (OSC 52). Says which in the picker's status
        (a toast would sit over the command it speaks of)."""
        from ..core.base import clipboard

        how = clipboard.copy(command)
        if how:
            return f"Command copied to the {how}."
        self.app.copy_to_clipboard(command)
        return (
            "No system clipboard here: sent to the terminal's clipboard (OSC 52). "
            "If your terminal ignores that, select the command above."
        )

    # ------------------------------------------------------------------ reading the archive

    def _read_points(self) -> None:
        """The branch's turns around the chosen one, and the chosen turn's messages."""
        workers.read(
            self,
            workers.FORK_POINTS,
            self.db_path,
            lambda conn: PointsRead(self.model.read_turns(conn)),
            lambda why: PointsRead(TurnsRead(error=f"Cannot read the turns of this session: {why}")),
        )

    def on_points_read(self, event: PointsRead) -> None:
        if event.read.error:
            self.model.error = event.read.error
            self._show()
        self.model.took_turns(event.read)
        self._show_list()
        self.query_one("#fork-about", Static).update(about(self.model))
        self.refresh_bindings()

    def _read_messages(self, turn_id: str) -> None:
        workers.read(
            self,
            workers.FORK_MESSAGES,
            self.db_path,
            lambda conn: MessagesRead(turn_id, *self.model.read_messages(conn, turn_id)),
            lambda why: MessagesRead(turn_id, [], f"Cannot read the messages of this turn: {why}"),
        )

    def on_messages_read(self, event: MessagesRead) -> None:
        self.model.took_messages(event.turn_id, event.messages, event.error)
        if event.error:
            self._said()
        self._show_list()

    def _make_plan(self, action: str, target: Target | None, prompt: str | None) -> None:
        from ..core.actions.fork_session import FAILURE

        workers.read(
            self,
            workers.FORK_PLAN,
            self.db_path,
            lambda conn: PlanMade(action, *self.model.make_plan(conn, action, target, prompt)),
            lambda why: PlanMade(action, None, f"{FAILURE[action]}: {why}"),
        )

    def _restore(self, plan: ForkPlan) -> None:
        """Write the transcript back where the agent looks (core never overwrites), from the archive."""
        workers.read(
            self,
            workers.FORK_RESTORE,
            self.db_path,
            lambda conn: Restored(plan, self.model.restore(conn, plan)),
            lambda why: Restored(plan, f"Could not restore the transcript: {why}"),
        )

    def _read_undo(self, ref: str) -> None:
        workers.read(
            self,
            workers.FORK_UNDO,
            self.db_path,
            lambda conn: UndoRead(ref, *self.model.read_edits_after(conn, ref)),
            lambda why: UndoRead(ref, None, why),
        )

    # ------------------------------------------------------------------ the list

    def current_row(self) -> Row | None:
        return self.model.current_row()

    def current_point(self) -> ForkPoint | None:
        return self.model.current_point()

    @on(OptionList.OptionHighlighted, "#fork-points")
    def _highlighted(self) -> None:
        self._show_hint()
        self._want_undo()
        self.refresh_bindings()

    def action_expand(self) -> None:
        if self.model.expand():
            turn = self.model.unread()
            if turn is not None:
                self._read_messages(turn)
            self._show_list()

    def action_collapse(self) -> None:
        if self.model.collapse():
            self._show_list()

    def action_pick(self) -> None:
        """Pick the turn or message under the cursor (again: put it back) for a new session's context."""
        if self.model.current_row() is None:
            return
        self.model.toggle_pick()
        self.query_one(PointList).show()
        self.refresh_bindings()

    def action_new_with_context(self) -> None:
        """The picked turns (a picked message brings its turn; none picked: the one under the cursor)
        as the context of a new session, in the dialog that starts it."""
        from .context import ContextScreen

        selection = self.model.selection()
        turns = list(dict.fromkeys(selection.turn_ids + [m.turn_id for m in selection.messages]))
        if not turns:
            self.notify("Nothing picked here: p picks a turn", timeout=3)
            return
        self.app.push_screen(ContextScreen(self.db_path, turns, "the turns picked in the fork picker"))

    def action_toggle(self) -> None:  # type: ignore[override]  # replaces Textual's toggle(attribute) action
        row = self.model.current_row()
        if row is not None and self.model.is_open(row):
            self.action_collapse()
        else:
            self.action_expand()

    @on(OptionList.OptionSelected, "#fork-points")
    def _point_selected(self) -> None:
        self.action_fork_here()

    # ------------------------------------------------------------------ what can be done now

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.model.allows(action)

    def action_fork_here(self) -> None:
        target = self.model.target_at()
        if target is None or self.model.busy:
            return
        self._plan("fork", target)

    def action_fork_before(self) -> None:
        if self.model.busy or not self.model.can_fork_before():
            return
        self._open_prompt("before")

    def action_fork_prompt(self) -> None:
        if self.model.busy or self.model.current_row() is None:
            return
        self._open_prompt("native")

    def action_resume(self) -> None:
        if not self.model.busy:
            self._plan("resume")

    def action_fork_end(self) -> None:
        if not self.model.busy:
            self._plan("fork-end")

    def _plan(self, action: str, target: Target | None = None, prompt: str | None = None) -> None:
        self.model.start_plan(action, target)
        self._show()
        self.refresh_bindings()
        self._make_plan(action, target, prompt)

    def on_plan_made(self, event: PlanMade) -> None:
        step = self.model.took_plan(event.action, event.plan, event.error)
        if step == "failed":
            self._said()
        elif step:
            self._ask()
        else:
            self._finished()
        self.refresh_bindings()

    def _finished(self) -> None:
        self._said()
        self.refresh_bindings()

    # ------------------------------------------------------------------ questions

    def _ask(self) -> None:
        self._show()  # the status line no longer says the command is being worked out
        self.query_one(Question).ask(self.model)
        self.query_one("#fork-yes", Button).focus(scroll_visible=False)
        self._reveal("#fork-confirm")
        self.refresh_bindings()

    def _close_ask(self) -> None:
        self.query_one("#fork-confirm").display = False
        self.query_one(PointList).focus(scroll_visible=False)
        self.refresh_bindings()

    def _cancel_ask(self) -> None:
        """No to the question: a restore not made leaves the command on show, said not to work yet."""
        restore = self.model.asking == "restore"
        self.model.cancel_ask()
        self._close_ask()
        if restore:
            self._show()

    def action_confirm(self) -> None:
        """y: yes to the question on show; with none, restore the transcript of the command shown."""
        step = self.model.confirm()
        if step == "write":
            self.action_write()
        elif step == "restore":
            self._restore_pending()

    def action_write(self) -> None:
        if self.model.pending is None or self.model.asking != "write":
            return
        path = self.model.write()
        self._close_ask()
        if path is None:
            self._said()
            return
        self.post_message(ForkWritten(path))
        if self.model.asking == "restore":
            self._ask()
        else:
            self._finished()

    def _restore_pending(self) -> None:
        plan = self.model.start_restore()
        if plan is None:
            return
        self._close_ask()
        self._show()
        self.refresh_bindings()
        self._restore(plan)

    def on_restored(self, event: Restored) -> None:
        self.model.took_restore(event.plan, event.error)
        self._said()
        self.refresh_bindings()

    # ------------------------------------------------------------------ typing a prompt or a path

    def _open_prompt(self, purpose: str) -> None:
        refusal = self.model.refusal(purpose)
        if refusal:
            self._fail(refusal)
            return
        box = self.query_one("#fork-prompt-input", Input)
        box.placeholder, box.border_title = PROMPT_BOX[purpose]
        box.value = self.model.open_prompt(purpose)
        box.cursor_position = len(box.value)
        box.select_on_focus = purpose != "before"  # the prompt is there to edit: typing adds to it
        box.display = True
        box.focus(scroll_visible=False)
        self._reveal("#fork-prompt-input")
        self.refresh_bindings()

    @on(Input.Submitted, "#fork-prompt-input")
    def _prompt_submitted(self, event: Input.Submitted) -> None:
        model = self.model
        purpose, text = model.prompt_for, model.typed(event.value)
        if purpose == "undo":
            if text:
                self._hide_prompt()
                model.write_undo_patch(text)
                self._said()
            return
        if not text and purpose == "native":
            self.notify("Type the prompt the fork continues with", timeout=2)
            return
        target = model.target_at(before=purpose == "before")
        self._hide_prompt()
        if target is None:
            return
        if purpose == "before":
            self._plan("fork", target, text or None)
        else:
            self._plan("fork-prompt", target, text)

    def _hide_prompt(self) -> None:
        self.query_one("#fork-prompt-input").display = False
        self.model.close_prompt()
        self.query_one(PointList).focus()
        self.refresh_bindings()

    # ------------------------------------------------------------------ what a fork does not undo

    def _want_undo(self) -> None:
        """The files edited after the point under the cursor: read in a worker, one at a time, the
        latest point winning (holding a key down starts one read, not one per row)."""
        wanted = self.model.undo_wanted
        ref = self.model.want_edits()
        if self.model.undo_wanted != wanted:
            self._show_undo()
        if ref is not None:
            self._read_undo(ref)

    def on_undo_read(self, event: UndoRead) -> None:
        model = self.model
        again = model.took_edits(event.ref, event.plan, event.error)
        if again is not None:  # the cursor moved on meanwhile
            self._read_undo(again)
        self._show_undo()
        if model.asking == "write" and model.pending is not None:  # the question says what stays edited too
            model.ask("write", model.pending)
            self._ask()
        self.refresh_bindings()

    def action_undo_patch(self) -> None:
        step = self.model.want_patch()
        if step == "ask":
            self._open_prompt("undo")
        elif step == "none":
            self._said()

    # ------------------------------------------------------------------ the command

    def read_back(self) -> None:
        """The app has read the written fork into the archive: said here, where the user looks (a
        toast would cover this dialog's status)."""
        self.model.read_back()
        self._show()

    def action_copy(self) -> None:
        if self.model.plan is not None:
            self.model.copy_again()
            self._show()

    def action_run(self) -> None:
        """Leave the TUI for the agent: the command runs in this terminal, and the picker comes back
        when it ends (then new sessions are read). Where the terminal cannot be handed over, the
        command is copied instead."""
        model = self.model
        plan = model.plan
        if plan is None or model.busy:
            return
        if model.run_refusal():
            model.error = model.run_refusal()
            self._show()
            return
        if os.name == "nt":
            self._cannot_run("the commands threadloom makes are for a POSIX shell")
            return
        try:
            with shell.hand_over(self.app):
                code = shell.run_in_shell(plan.command)
        except SuspendNotSupported:
            self._cannot_run("this terminal cannot be handed over from here")
            return
        except OSError as exc:
            model.error = f"Could not start the shell ({os.environ.get('SHELL') or '/bin/sh'}): {exc}"
            self._show()
            return
        model.ran_agent(code)
        self._said()
        self.post_message(AgentRan())

    def _cannot_run(self, why: str) -> None:
        self.model.not_run(why)
        self._said()

    def action_help(self) -> None:
        from .screens import HelpScreen, key_rows

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
        if self.model.pending is not None:
            self._cancel_ask()
        elif self.model.prompt_for:
            self._hide_prompt()
        else:
            self.dismiss()

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
