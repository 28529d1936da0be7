"""The fork picker's widgets: each draws one part of a `core.actions.fork_session.ForkSession` and keeps no
state of its own (the list its rows, the lines under it what a fork keeps and leaves, the question,
the command, its notes and the status). `tui.fork.ForkPicker` lays them out and runs the steps."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, OptionList, Static
from textual.widgets.option_list import Option

from ..core.actions.fork import FORK_TITLE_SUFFIX, ForkPlan
from ..core.actions.fork_session import ForkSession, Row
from ..core.base.text import count_of, it_or_them, left_as_is, one_line, one_line_name, printable, short_when
from .panes import fit
from .render import ROLE_STYLE, STATUS, short_model, when

if TYPE_CHECKING:
    from textual.app import ComposeResult

    from ..core.actions.undo import FileChange, UndoPlan

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


PICKED_STYLE = "bold #87d787"  # a turn or message picked for a new session's context


class PointList(OptionList):
    """Turns, oldest first, open ones followed by their messages: each option is a place to fork.
    Its highlight is the session's cursor."""

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
            "p",
            "screen.pick",
            "Pick",
            show=False,
            id="fork.pick",
            tooltip="Pick the turn (or message) under the cursor for a new session's context (Ctrl+N)",
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

    def __init__(self, model: ForkSession, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self._drawn_width: int | None = None  # the row width the options were drawn for

    def watch_highlighted(self, highlighted: int | None) -> None:
        self.model.move_to(highlighted)  # at once: a key pressed next acts on this row
        super().watch_highlighted(highlighted)

    def row_width(self) -> int:
        """The cells a row has: the list's own content width (less a scrollbar, and the options'
        padding), not the terminal's, which says nothing of the dialog's scrollbar or the list's.
        Before the list is laid out, a guess from the terminal's width."""
        content = self.scrollable_content_region.width
        if not content:
            return max(40, min(110, self.app.size.width - 10) - 6)
        return max(20, content - self.get_component_styles("option-list--option").padding.width)

    def on_resize(self) -> None:
        self._fit_rows()

    def watch_show_vertical_scrollbar(self) -> None:
        """The list's own scrollbar came or went: the rows have a cell more or less."""
        self._fit_rows()

    def _fit_rows(self) -> None:
        """Draw the rows again for the width they have now if it changed (the cursor and the
        scroll stay): a row drawn wider than the list wraps its time onto a line of its own."""
        width = self.row_width()
        if (
            self._drawn_width is None
            or width == self._drawn_width
            or self.option_count != len(self.model.rows)
        ):
            return
        self._drawn_width = width
        for index, row in enumerate(self.model.rows):
            self.replace_option_prompt_at_index(index, self._option(row, width))

    def show(self) -> None:
        """The rows as options, the cursor on the session's."""
        width = self.row_width()
        self._drawn_width = width
        cursor = self.model.cursor
        self.set_options([Option(self._option(row, width)) for row in self.model.rows])
        if cursor is not None:
            self.highlighted = cursor
            self.call_after_refresh(self.scroll_to_highlight, top=False)

    def _option(self, row: Row, width: int) -> Text:
        model = self.model
        if row.message is not None:
            return self._message_option(row, width)
        point = model.points[row.turn]
        opened = model.is_open(row)
        head = Text(no_wrap=True, overflow="ellipsis")
        mine = row.turn == model.chosen and model.marked is None and model.turn_id is not None
        head.append("▶ " if mine else "  ", style=CHOSEN_STYLE)
        if model.is_picked(row):
            head.append("● ", style=PICKED_STYLE)
        head.append("▾ " if opened else "▸ ", style="dim")
        head.append(f"turn {model.turn_number(row)}", style="bold")
        facts = [(short_when(point.timestamp), "dim"), (short_model(point.model), "#af87d7")]
        if point.tool_call_count:
            facts.append(
                (f"{point.tool_call_count} tool call{'s' if point.tool_call_count != 1 else ''}", "dim")
            )
        if mine:
            facts.insert(0, ("your message", CHOSEN_STYLE))
        if opened and point.turn_id not in model.messages:
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

    def _message_option(self, row: Row, width: int) -> Text:
        message = row.message
        assert message is not None
        mine = message is self.model.marked
        head = Text(no_wrap=True)
        head.append("▶ " if mine else "  ", style=CHOSEN_STYLE)
        head.append("● " if self.model.is_picked(row) else "  ", style=PICKED_STYLE)
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


def about(model: ForkSession) -> Text:
    """The line over the list: the agent, the project, how many turns and which are listed."""
    line = Text()
    line.append(model.agent, style="#5f87af")
    if model.session and model.session.project:
        line.append(" · ")
        line.append(one_line_name(model.session.project), style="#87d787")  # as the panes show it
    count = model.branch_turns
    line.append(f" · {count} turn{'s' if count != 1 else ''} on this branch", style="dim")
    if len(model.points) < count:
        last = model.first_turn + len(model.points)
        line.append(f" (turns {model.first_turn + 1}–{last} listed, around yours)", style="dim")
    line.append(" · → ← open and close a turn", style="dim")
    if not model.points:
        line.append(
            "\nThis session has no turns to fork at; Resume and Fork at end still work.", style="#d7af5f"
        )
    return line


def hint(model: ForkSession) -> Text:
    """What Fork here keeps at the row under the cursor, and what else can be done there."""
    line = Text()
    row = model.current_row()
    if row is None:
        return line
    turn = f"turn {model.turn_number(row)}"
    message = row.message
    if message is None:
        line.append(f"Fork here keeps {turn} whole and everything before it", style="dim")
        line.append(
            " · ← closes its messages" if model.is_open(row) else " · → shows its messages", style="dim"
        )
    elif not message.exact:
        name = model.adapter.display_name if model.adapter else model.agent
        line.append(
            f"{name} forks at the end of a turn: Fork here keeps {turn} whole and everything before it.",
            style="#d7af5f",
        )
    elif message.kind == "prompt":
        line.append("Fork here ends on this prompt, before its answer.", style="dim")
    else:
        what = (
            f"this {message.tool_name} call and its result"
            if message.kind == "tool call"
            else f"this {KIND_NOUN.get(message.kind, message.kind)}"
        )
        line.append(f"Fork here keeps everything up to and including {what}", style="dim")
        line.append(".", style="dim")
        if row.blocks > 1:
            line.append(
                f" The {row.blocks} blocks of its API message (┌…└) fork as one, each call with its result.",
                style=BRACKET_STYLE,
            )
    if message is not None and message.can_fork_before:
        line.append(" b forks just before it, to send a different prompt (edit and resend).", style="#d7af5f")
    return line


def edits_after(model: ForkSession, *, short: bool) -> Text:
    """The files edited after the point under the cursor, which a fork here leaves as they are."""
    line = Text()
    undo = model.undo_here()
    if model.undo_wanted is None:
        return line
    if undo is None:
        line.append("Looking for files edited after this point…", style="dim")
    elif not undo.files:
        line.append("No file edits recorded after this point.", style="dim")
    else:
        count = len(undo.files)
        line.append(
            f"Not undone by a fork here: {count_of(count, 'file')} edited after this point {left_as_is(count)}: ",
            style=WARN_STYLE,
        )
        named = undo.files[: 1 if short else 6]  # a short terminal: the first, and how many more
        run = 0  # files named since the last said how they changed
        for i, change in enumerate(named):
            line.append(", " if i else "")
            line.append(printable(change.path))
            run += 1
            if i + 1 < len(named) and _how_changed(named[i + 1]) == _how_changed(change):
                continue  # said once, after the last of the files that share it
            what, revertible = _how_changed(change)
            line.append(
                f" ({what})" if revertible else f" ({what}; the records cannot take {it_or_them(run)} back)",
                style="dim" if revertible else WARN_STYLE,
            )
            run = 0
        if count > len(named):
            line.append(f" and {count - len(named)} more")
        if undo.patch:
            line.append(f" · u writes a patch that takes {_taken_back(undo)} back", style="bold")
    return line


def _taken_back(undo: UndoPlan) -> str:
    """What the patch takes back of the files edited after the point: "it", "them", "3 of them"."""
    count, covered = len(undo.files), sum(1 for f in undo.files if f.revertible)
    return it_or_them(count) if covered == count else f"{covered} of them"


def _how_changed(change: FileChange) -> tuple[str, bool]:
    """How a file after the fork point changed ("Edit", "Write, new", "shell") and whether the
    patch can take it back: files alike are said once for all ("a, b, c (shell; …)")."""
    return change.tool + (", new" if change.created else ""), change.revertible


def _short_title(title: str | None, width: int = 60) -> str:
    """A fork's title to quote in a line: its start cut, its " (fork)" kept."""
    base = (title or "").removesuffix(FORK_TITLE_SUFFIX)
    return one_line(base, width - len(FORK_TITLE_SUFFIX)) + FORK_TITLE_SUFFIX


def _holds(model: ForkSession, plan: ForkPlan) -> str:
    """What a fork about to be written holds, and where it ends."""
    calls = (
        ""  # none: not "0 tool calls with their results"
        if not plan.tool_calls
        else ", 1 tool call with its result"
        if plan.tool_calls == 1
        else f", {plan.tool_calls} tool calls with their results"
    )
    where = model.target.where if model.target else "the chosen point"
    if plan.branch:
        return (
            f"{count_of(plan.records, 'record')}{calls}: this branch up to {where}, new session id "
            f"{plan.new_session_id}, titled “{_short_title(plan.title)}”"
        )
    held = f"this session up to {where} ({count_of(plan.records, 'line')}{calls})"
    return held + (f", new session id {plan.new_session_id}" if plan.new_session_id else "")


class Question(Vertical):
    """The question waiting for a yes: write the fork (what goes where), or restore the transcript."""

    def compose(self) -> ComposeResult:
        yield Static(id="fork-confirm-text")
        with Horizontal(id="fork-confirm-buttons"):
            yield ActionButton("Write the fork", id="fork-yes", variant="warning", compact=True)
            yield ActionButton("Cancel", id="fork-cancel", compact=True)

    def ask(self, model: ForkSession) -> None:
        plan = model.pending
        assert plan is not None
        if model.asking == "write":
            question = Text("Write a new session?  (y or Enter: yes · Esc: no)", style="bold")
            rows = self._write_rows(model, plan)
            yes = "Write the fork"
        else:
            step = plan.restore
            assert step is not None
            targets = list(step.files.values())
            rows = [("file", targets[0] if targets else step.folder)]
            if len(targets) > 1:  # its subagents' files: the count, not a screenful of paths
                rows.append(("", f"and {len(targets) - 1} more of the session's files, beside it"))
            rows.append(("then", plan.command + "   (copied once it is restored)"))
            question = Text(step.question, style="bold")
            question.append("  (y or Enter: yes · Esc: no)", style="dim")
            yes = "Restore it"
        table = Table.grid(padding=(0, 2))
        table.add_column(style="dim", no_wrap=True)
        table.add_column(overflow="fold")
        for label, value in rows:
            table.add_row(Text(label), Text(value))  # a path or a command: the log's, never markup
        self.query_one("#fork-confirm-text", Static).update(Group(question, table))
        self.query_one("#fork-yes", Button).label = yes
        self.display = True

    @staticmethod
    def _write_rows(model: ForkSession, plan: ForkPlan) -> list[tuple[str, str]]:
        rows = [
            ("file", f"{plan.path}  (new, mode 0600; nothing is overwritten)"),
            ("holds", _holds(model, plan)),
            ("source", "untouched"),
        ]
        undo = model.edits_for_target()
        if undo is not None and undo.files:
            count = len(undo.files)
            rows.append(
                (
                    "files",
                    f"{count_of(count, 'file')} edited after this point {left_as_is(count)}"
                    + (f" (u writes a patch that takes {_taken_back(undo)} back)" if undo.patch else ""),
                )
            )
        rows.append(("then", plan.command + "   (copied once the file is written)"))
        return rows


def command(model: ForkSession) -> Text:
    """The command on show, or what to do to get one."""
    plan = model.plan
    if plan is None:
        return Text("Choose a message and an action: the command appears here, copied.", style="dim")
    shown = Text(plan.command, style="bold")
    if plan.restore is not None:
        shown.append(
            "\nfinds nothing until the transcript is restored where the agent looks: y restores it",
            style="#d7af5f",
        )
    return shown


def notes(model: ForkSession) -> Text:
    text = Text()
    for note in model.notes():
        text.append("• ", style="#d7af5f")
        text.append(note + "\n")
    text.rstrip()
    return text


def status(model: ForkSession) -> Text:
    """What is under way, what went wrong, or what was written, copied, run and patched."""
    line = Text()
    if model.planning:
        line.append("Working out the command…", style="dim")
    elif model.restoring:
        line.append("Restoring the transcript…", style="dim")
    elif model.error:
        line.append(model.error, style=ERROR_STYLE)
    else:
        if model.written is not None:
            line.append("Wrote ", style=OK_STYLE)
            line.append(str(model.written))
            line.append(
                " · in the session tree, beside its source\n" if model.in_tree else "\n", style=OK_STYLE
            )
        if model.copied_how:
            line.append(model.copied_how + ("\n" if model.ran else ""), style=OK_STYLE)
        if model.ran:
            line.append(model.ran, style=OK_STYLE)
        if model.patch_said is not None:
            if line:
                line.append("\n")
            line.append_text(patch_said(model))
    return line


def patch_said(model: ForkSession) -> Text:
    """Where the last undo patch went and what it covers, or why there is none; what it leaves out."""
    said = model.patch_said
    assert said is not None
    undo = said.undo
    if said.path is None:
        text = Text(
            "No undo patch: "
            + (
                "the records cannot take back any of the files edited after this point."
                if undo.files
                else "no file was edited after this point."
            ),
            style=WARN_STYLE,
        )
    else:
        from ..core.actions.fork_session import covered

        text = Text.assemble(
            ("Wrote the undo patch to ", OK_STYLE),
            str(said.path),
            (f", covering {covered(undo)}.", OK_STYLE),
            "\nIt changes nothing by itself; check and apply it with: ",
            (said.apply, "bold"),
        )
    text.append_text(_left_out(undo))
    return text


def _left_out(undo: UndoPlan) -> Text:
    text = Text()
    for problem in undo.problems:
        text.append("\nNot in the patch: ", style=WARN_STYLE)
        text.append(printable(problem))
    for note in undo.notes:
        text.append("\nNote: ", style=WARN_STYLE)
        text.append(printable(note))
    return text
