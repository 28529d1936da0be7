"""A new session from past turns (seed 003's smart fork): the chosen turns packed as a context
(core.insight.recall.build_context), written to a file only its owner reads, and an agent started in a
folder with that file as its first message, or the command copied. No text from the logs is put on
the command line: the shell reads the file when the command runs.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Select, Static

from ..core.actions.launch import ContextLaunch
from ..core.base.text import count_of, printable
from ..core.insight.recall import Context
from . import workers

DEFAULT_BUDGET = 4000


class ContextRead(Message):
    """The context read for the dialog (with the folder and agent its turns ran in), or why not."""

    def __init__(
        self,
        context: Context | None = None,
        folder: str | None = None,
        agent: str | None = None,
        error: str = "",
    ) -> None:
        super().__init__()
        self.context, self.folder, self.agent, self.error = context, folder, agent, error


class ContextScreen(ModalScreen[None]):
    """The context of the chosen turns, the agent and folder to start in; Enter starts, c copies."""

    DEFAULT_CSS = """
    ContextScreen { align: center middle; background: $background 60%; }
    #context-box { width: 110; max-width: 96%; height: auto; max-height: 90%; border: round $accent;
        background: $surface; padding: 0 1; }
    #context-preview { height: auto; max-height: 14; color: $text-muted; overflow-y: auto; }
    #context-form { height: auto; }
    #context-form > Select { width: 30; }
    #context-folder { width: 1fr; }
    #context-budget { width: 14; }
    #context-command { margin-top: 1; }
    #context-status { color: $warning; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="context.cancel"),
        Binding("enter", "start", "Start", priority=True, id="context.start",
                tooltip="Write the context and start the agent in the folder with it as its first message"),
        Binding("ctrl+y", "copy", "Copy command", id="context.copy",
                tooltip="Write the context and copy the command that starts the agent with it"),
    ]  # fmt: skip

    def __init__(self, db_path: Path, turn_ids: list[str], query: str) -> None:
        super().__init__(id="context")
        self.db_path = db_path
        self.turn_ids = turn_ids
        self.query_text = query
        self.context: Context | None = None
        self.launch: ContextLaunch | None = None
        self.error = ""
        self.done = ""
        self.agents: list[str] = []

    def compose(self) -> ComposeResult:
        from ..core.actions.launch import launchable_agents

        with Vertical(id="context-box") as box:
            box.border_title = f"New session with the context of {count_of(len(self.turn_ids), 'turn')}"
            box.border_subtitle = "Enter starts · Ctrl+Y copies the command · Esc cancels"
            yield Static(Text("Reading the turns…"), id="context-preview")
            with Horizontal(id="context-form"):
                self.agents = launchable_agents()
                yield Select(
                    [(a, a) for a in self.agents], value=self.agents[0], allow_blank=False, id="context-agent"
                )
                yield Input(placeholder="the folder to start in", id="context-folder")
                yield Input(str(DEFAULT_BUDGET), placeholder="tokens", id="context-budget", type="integer")
            yield Static(id="context-command")
            yield Static(id="context-status")

    def on_mount(self) -> None:
        for selector, title in (
            ("#context-agent", "agent"),
            ("#context-folder", "start in"),
            ("#context-budget", "tokens"),
        ):
            self.query_one(selector).border_title = title
        self._read()

    def _read(self) -> None:
        """The context of the turns, and the folder and agent they ran in, read in a worker (a
        budget changed asks again: the newer read replaces the older)."""
        from ..core.actions.launch import default_folder
        from ..core.insight.recall import build_context

        budget = self._budget()

        def run(conn: sqlite3.Connection) -> ContextRead:
            context = build_context(conn, self.query_text, budget=budget, turn_ids=self.turn_ids)
            return ContextRead(context, *default_folder(conn, self.turn_ids))

        workers.read(
            self,
            workers.CONTEXT,
            self.db_path,
            run,
            lambda why: ContextRead(error=f"the context could not be read: {why}"),
        )

    def _budget(self) -> int:
        try:
            value = int(self.query_one("#context-budget", Input).value or DEFAULT_BUDGET)
        except ValueError:
            value = DEFAULT_BUDGET
        return max(200, value)

    def on_context_read(self, event: ContextRead) -> None:
        if event.context is None:
            self.error = event.error
            self._show()
            return
        self.context = event.context
        folder, agent = event.folder, event.agent
        folder_input = self.query_one("#context-folder", Input)
        if folder and not folder_input.value:
            folder_input.value = folder
        select = self.query_one("#context-agent", Select)
        if agent and not self.launch and agent in self.agents:
            select.value = agent
        self._show()

    @on(Input.Changed, "#context-budget")
    def _budget_changed(self) -> None:
        if self.context is not None and self.context.budget != self._budget():
            self._read()

    @on(Input.Changed, "#context-folder")
    @on(Select.Changed, "#context-agent")
    def _choice_changed(self) -> None:
        self.launch = None
        self._show()

    def _show(self) -> None:
        preview = self.query_one("#context-preview", Static)
        status = self.query_one("#context-status", Static)
        command = self.query_one("#context-command", Static)
        if self.error:
            status.update(Text(self.error, style="bold #d75f5f"))
        else:
            status.update(Text(self.done, style="#87d787"))
        context = self.context
        if context is None:
            return
        lines = Text()
        lines.append(
            f"{count_of(len(context.turns), 'turn')}, about {count_of(context.tokens, 'token')}", style="bold"
        )
        if context.left_out:
            lines.append(f" · {context.left_out} left out to keep within {context.budget:,}", style="#d7af5f")
        for turn in context.turns[:8]:
            lines.append("\n• ")
            lines.append(printable(turn.prompt.replace("\n", " "))[:90])
            lines.append(f"  {turn.agent} · {printable(turn.project or '?')}", style="dim")
        preview.update(lines)
        if self.launch is not None:
            shown = Text("$ ", style="dim")
            shown.append(printable(self.launch.command))
            for note in self.launch.notes:
                shown.append(f"\n{printable(note)}", style="#d7af5f")
            command.update(shown)
        else:
            command.update(Text("The command appears here once the context is written.", style="dim"))

    def _prepare(self) -> ContextLaunch | None:
        """Write the context file (once) and make the command for the agent and folder chosen now."""
        from ..core.actions.launch import launch_command, write_context_file

        if self.context is None:
            return None
        if not self.context.turns:
            self.error = "Nothing to hand on: no turn fits the budget."
            self._show()
            return None
        agent = str(self.query_one("#context-agent", Select).value)
        folder = self.query_one("#context-folder", Input).value.strip() or None
        try:
            path = self.launch.path if self.launch is not None else write_context_file(self.context)
            self.launch = launch_command(agent, path, folder)
        except (OSError, ValueError) as exc:
            self.error = str(exc)
            self._show()
            return None
        self.error = ""
        return self.launch

    def action_copy(self) -> None:
        from ..core.base import clipboard

        launch = self._prepare()
        if launch is None:
            return
        how = clipboard.copy(launch.command)
        if not how:
            self.app.copy_to_clipboard(launch.command)
            how = "terminal's clipboard (OSC 52)"
        self.done = f"Context written to {launch.path} (only you can read it); command copied to the {how}."
        self._show()

    def action_start(self) -> None:
        """The agent runs in this terminal; threadloom comes back when it ends (then reads what it wrote)."""
        from textual.app import SuspendNotSupported

        from . import shell
        from .events import AgentRan

        launch = self._prepare()
        if launch is None:
            return
        folder = self.query_one("#context-folder", Input)
        if folder.value.strip() and not os.path.isdir(folder.value.strip()):  # its `cd` would fail
            self.error = (
                "Not started: type a folder of this machine to start in (Ctrl+Y copies the command as it is)"
            )
            self._show()
            folder.focus()
            return
        if os.name == "nt":
            self.error = "the commands threadloom makes are for a POSIX shell: copy it (Ctrl+Y) instead"
            self._show()
            return
        try:
            with shell.hand_over(self.app):
                code = shell.run_in_shell(launch.command)
        except SuspendNotSupported:
            self.action_copy()
            self.error = "This terminal cannot be handed over from here: the command was copied instead."
            self._show()
            return
        self.done = f"The agent ended (exit {code}); reading what it wrote."
        self._show()
        self.post_message(AgentRan())

    def action_cancel(self) -> None:
        self.dismiss(None)
