"""A fork session: choosing where to fork a conversation and what to do there, with nothing drawn.

`ForkSession` is the state the TUI's fork picker draws, and the steps `threadloom fork` and `resume`
take: the session, the turns of its branch listed to fork at (`core.actions.fork.fork_points`), the messages
of the turns read so far (`core.actions.fork.fork_messages`), the rows that list shows and the one under the
cursor, the turns and messages picked for an action over several (`selection`), where a fork there
cuts (`Target`), the plan being made, the question waiting for a yes (write the fork, restore the
transcript), what was written, copied and run, and the files edited after the point that a fork does
not take back (`core.actions.undo`) with the patch that does.

Reading the archive can take long on a big session, so each step that reads is two calls: a method
that takes a connection, reads, and changes nothing here (`read_turns`, `read_messages`,
`make_plan`, `restore`, `read_edits_after`), which a front end may run in a worker thread with its
own connection, then a method that takes what was read in (`took_turns`, `took_messages`,
`took_plan`, `took_restore`, `took_edits`) where the state lives. `load` does both for one thread.
"""

from __future__ import annotations

import os
import shlex
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..adapters import ADAPTERS, agents_said
from ..base.text import printable
from ..read import browse
from ..read.query import SessionSummary, get_session
from .fork import (
    ForkError,
    ForkMessage,
    ForkPlan,
    ForkPoint,
    fork_messages,
    fork_points,
    in_folder,
    native_fork_plan,
    plan_fork,
    resume_plan,
    shell_command,
    usable_folder,
)

if TYPE_CHECKING:
    from .undo import UndoPlan

AROUND = 60  # turns listed on each side of the chosen one (a long session has thousands)
LINE_BREAK = " ⏎ "  # a prompt's line break in the one-line box that edits it

FAILURE = {  # how a plan that cannot be made is said, by action
    "fork": "Cannot fork here",
    "fork-prompt": "Cannot fork here",
    "resume": "Cannot resume this session",
    "fork-end": "Cannot fork this session at its end",
}
PLANNED = ("fork_here", "fork_prompt", "fork_before", "resume", "fork_end")  # actions that make a plan


# ---------------------------------------------------------------------- plans, shared with the CLI


def plan_for(
    conn: sqlite3.Connection,
    action: str,
    ref: str = "",
    *,
    session_id: str = "",
    before: bool = False,
    prompt: str | None = None,
    dry_run: bool = False,
) -> ForkPlan:
    """The plan of an action: `fork` (at `ref`, or just before it), `fork-prompt` (the agent forks
    itself at `ref` and goes on with `prompt`), `resume` or `fork-end` (the whole of `session_id`).
    `dry_run`: a plan that would write a copy for the agent to import writes none.
    Raises `ForkError` (and `OSError`, `sqlite3.Error`) when it cannot be made."""
    if action == "fork":
        return plan_fork(conn, ref, before=before, prompt=prompt, dry_run=dry_run)
    if action == "fork-prompt":
        return native_fork_plan(conn, ref, prompt or "", before=before)
    return resume_plan(conn, session_id, fork_at_end=action == "fork-end")


def next_step(action: str, plan: ForkPlan) -> Literal["write", "restore", ""]:
    """What a plan needs before its command works: threadloom writes the fork (asked first), or the
    transcript goes back where the agent looks (asked first), or nothing ("")."""
    if action == "fork" and plan.lines:
        return "write"
    return "restore" if plan.restore is not None else ""


def write_patch(undo: UndoPlan, path: Path) -> None:
    """Write the undo patch owner-only and never over a file (FileExistsError, OSError)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(undo.patch)


def apply_command(undo: UndoPlan, path: str) -> str:
    """The command that checks the patch at `path` (absolute) and applies it, in the session's folder."""
    check = shell_command(["git", "apply", "--check", path]) + " && " + shell_command(["git", "apply", path])
    return in_folder(undo.cwd, check, [])


def covered(undo: UndoPlan) -> str:
    """The files the patch takes back, as a user reads them."""
    return ", ".join(printable(f.path) for f in undo.files if f.revertible)


# ---------------------------------------------------------------------- what is listed


@dataclass
class Row:
    """One row of the list: a turn (a fork there keeps the whole turn) or one of its messages."""

    turn: int  # index into ForkSession.points
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


@dataclass
class Target:
    """Where a fork is cut: the record given to `plan_fork`, and how a user would say it."""

    ref: str
    where: str  # "the end of turn 3", "the chosen reply of turn 2", "just before the prompt of turn 4"
    before: bool = False


@dataclass
class TurnsRead:
    """What `read_turns` found: the turns listed (AROUND the chosen one), where they start on the
    branch, how many it has, the chosen one's index in `points` and its messages, or an error."""

    points: list[ForkPoint] = field(default_factory=list)
    first_turn: int = 0
    branch_turns: int = 0
    chosen: int | None = None
    messages: dict[str, list[ForkMessage]] = field(default_factory=dict)
    error: str = ""


@dataclass
class Selection:
    """The turns (in branch order) and the messages picked for an action over several: a new
    session with their context, an export. Turn ids are what `core.insight.episodes.read_turns` takes."""

    session_id: str
    points: list[ForkPoint]
    messages: list[ForkMessage]

    @property
    def turn_ids(self) -> list[str]:
        return [p.turn_id for p in self.points]

    @property
    def entry_ids(self) -> list[int]:
        return [m.entry_id for m in self.messages]

    def __bool__(self) -> bool:
        return bool(self.points or self.messages)


@dataclass
class PatchSaid:
    """What became of the undo patch asked for: written to `path` (with the command that applies
    it), or not written because the records cannot take anything back (`path` None)."""

    undo: UndoPlan
    path: Path | None = None
    apply: str = ""


# ---------------------------------------------------------------------- the session


class ForkSession:
    """One session being forked or resumed: what is listed, chosen, asked, done and said."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        *,
        entry_id: int | None = None,
        turn_id: str | None = None,
        copy: Callable[[str], str] | None = None,
    ) -> None:
        self.conn = conn  # for the small lookups made on the spot (a turn's last record)
        self.session_id = session_id
        self.entry_id = entry_id  # the message it was opened on
        self.turn_id = turn_id
        self.copy = copy  # copies a finished command; says how it was copied
        self.session: SessionSummary | None = get_session(conn, session_id)
        self.agent = self.session.agent if self.session else "?"
        self.adapter = ADAPTERS.get(self.agent)  # what the agent can do: fork before a prompt, natively
        # what is listed
        self.points: list[ForkPoint] = []  # the turns listed: the branch, or AROUND the chosen one
        self.first_turn = 0  # the branch position of points[0]
        self.branch_turns = 0
        self.points_read = False
        self.chosen: int | None = None  # the index in `points` of the turn of the user's message
        self.messages: dict[str, list[ForkMessage]] = {}  # the messages of the turns read so far
        self.expanded: set[str] = set()  # turns shown with their messages
        self.rows: list[Row] = []
        self.cursor: int | None = None  # the row under the cursor
        self.marked: ForkMessage | None = None  # the user's message, marked ▶
        self.picked_turns: set[str] = set()  # picked for an action over several (`selection`)
        self.picked_entries: set[int] = set()
        # the plan and what is asked about it
        self.planning = ""  # the action whose plan is being made
        self.target: Target | None = None  # where the plan being made or asked about cuts
        self.plan: ForkPlan | None = None  # the command on show
        self.pending: ForkPlan | None = None  # a plan waiting for a yes: its transcript written, or restored
        self.asking = ""  # "write" | "restore": what `pending` waits for
        self.restoring = False
        self.prompt_for = ""  # "native" | "before" | "undo": what is being typed, when something is
        # what was done
        self.written: Path | None = None
        self.copied_how = ""
        self.ran = ""  # what happened when the command was run
        self.in_tree = False  # the written fork was read back into the archive (its session tree)
        self.error = ""
        # what a fork does not undo
        self.undo_wanted: str | None = None  # the fork point (entry id) whose later edits are wanted
        self.undo_reading = False
        self.undo_ref: str | None = None  # the fork point `undo` is about
        self.undo: UndoPlan | None = None  # the files edited after it, and the patch taking them back
        self.patch_said: PatchSaid | None = None  # the last undo patch asked for

    # ------------------------------------------------------------------ reading the turns

    def read_turns(self, conn: sqlite3.Connection) -> TurnsRead:
        """The branch's turns around the chosen one, and the chosen turn's messages (reads only)."""
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
            return TurnsRead(window, first, len(points), chosen - first if points else None, messages)
        except sqlite3.Error as exc:
            return TurnsRead(error=f"Cannot read the turns of this session: {exc}")

    def took_turns(self, read: TurnsRead) -> None:
        self.points_read = True
        if read.error:
            self.error = read.error
        self.points, self.first_turn, self.branch_turns = read.points, read.first_turn, read.branch_turns
        self.chosen = read.chosen
        self.messages.update(read.messages)
        self.expanded.update(read.messages)
        if self.chosen is not None:
            self.marked = self._users_message(self.messages.get(self.points[self.chosen].turn_id, []))
        self.fill(keep=None)

    def load(self, conn: sqlite3.Connection | None = None) -> ForkSession:
        """Read the turns on this thread (the CLI, tests); the edits after the chosen point too."""
        self.took_turns(self.read_turns(conn or self.conn))
        ref = self.want_edits()
        while ref is not None:
            ref = self.took_edits(ref, *self.read_edits_after(conn or self.conn, ref))
        return self

    def _users_message(self, messages: list[ForkMessage]) -> ForkMessage | None:
        """The message it was opened on: by its record, else the last one listed before it (a
        tool's result is listed with its call), else None (the turn itself is chosen)."""
        if self.entry_id is None or not messages:
            return None
        exact = next((m for m in messages if m.entry_id == self.entry_id), None)
        if exact is not None:
            return exact
        before = [m for m in messages if m.entry_id <= self.entry_id]
        return before[-1] if before else None

    def read_messages(self, conn: sqlite3.Connection, turn_id: str) -> tuple[list[ForkMessage], str]:
        """A turn's messages, or an error (reads only)."""
        try:
            return fork_messages(conn, self.session_id, [turn_id]), ""
        except sqlite3.Error as exc:
            return [], f"Cannot read the messages of this turn: {exc}"

    def took_messages(self, turn_id: str, messages: list[ForkMessage], error: str) -> None:
        if error:
            self.expanded.discard(turn_id)
            self.fail(error)
        else:
            self.messages[turn_id] = messages
        self.fill(keep=self.key(self.current_row()))

    # ------------------------------------------------------------------ the rows and the cursor

    def fill(self, keep: tuple[str, int | None] | None) -> int | None:
        """(Re)build the rows from the turns and the open ones' messages; the cursor stays on `keep`
        (a turn id and a message's entry id, or None for the turn), else goes to the user's message
        (or its turn), else is on no row. Returns the cursor."""
        self.rows = []
        for index, point in enumerate(self.points):
            self.rows.append(Row(index))
            if point.turn_id in self.expanded and point.turn_id in self.messages:
                self.rows += message_rows(index, self.messages[point.turn_id])
        wanted = None
        if keep is not None:
            wanted = next((i for i, r in enumerate(self.rows) if self.key(r) == keep), None)
        if wanted is None and self.chosen is not None:
            wanted = next(
                (i for i, r in enumerate(self.rows) if r.message is not None and r.message is self.marked),
                None,
            )
            if wanted is None:
                wanted = next(
                    (i for i, r in enumerate(self.rows) if r.turn == self.chosen and r.message is None), None
                )
        self.cursor = wanted
        return wanted

    def key(self, row: Row | None) -> tuple[str, int | None] | None:
        """What keeps a row's place when the rows are rebuilt: its turn, and its message's record."""
        if row is None:
            return None
        return (self.points[row.turn].turn_id, row.message.entry_id if row.message else None)

    def move_to(self, index: int | None) -> None:
        self.cursor = index

    def current_row(self) -> Row | None:
        if self.cursor is None or not 0 <= self.cursor < len(self.rows):
            return None
        return self.rows[self.cursor]

    def current_point(self) -> ForkPoint | None:
        row = self.current_row()
        return self.points[row.turn] if row is not None else None

    def turn_number(self, row: Row) -> int:
        """The row's turn, counted from 1 along the whole branch."""
        return self.first_turn + row.turn + 1

    def is_open(self, row: Row) -> bool:
        return self.points[row.turn].turn_id in self.expanded

    def expand(self) -> bool:
        """Open the turn under the cursor (its row); whether it was closed. Its messages may be
        still to read (`unread`)."""
        row = self.current_row()
        if row is None or row.message is not None:
            return False
        turn = self.points[row.turn].turn_id
        if turn in self.expanded:
            return False
        self.expanded.add(turn)
        self.fill(keep=(turn, None))
        return True

    def unread(self) -> str | None:
        """The turn under the cursor when it is open and its messages are not read yet."""
        point = self.current_point()
        if point is None or point.turn_id not in self.expanded or point.turn_id in self.messages:
            return None
        return point.turn_id

    def collapse(self) -> bool:
        """Close the turn under the cursor (from any of its rows); whether it was open."""
        row = self.current_row()
        if row is None:
            return False
        turn = self.points[row.turn].turn_id
        if turn not in self.expanded:
            return False
        self.expanded.discard(turn)
        self.fill(keep=(turn, None))
        return True

    # ------------------------------------------------------------------ picking several

    def toggle_pick(self) -> bool:
        """Pick (or unpick) the row under the cursor: its turn, or its message; whether it is now picked."""
        row = self.current_row()
        if row is None:
            return False
        if row.message is None:
            turns = self.picked_turns
            turn = self.points[row.turn].turn_id
            turns.symmetric_difference_update({turn})
            return turn in turns
        entries = self.picked_entries
        entries.symmetric_difference_update({row.message.entry_id})
        return row.message.entry_id in entries

    def is_picked(self, row: Row) -> bool:
        if row.message is not None:
            return row.message.entry_id in self.picked_entries
        return self.points[row.turn].turn_id in self.picked_turns

    def clear_picks(self) -> None:
        self.picked_turns.clear()
        self.picked_entries.clear()

    def selection(self) -> Selection:
        """The turns and messages picked, in branch order; with none picked, the row under the
        cursor (its turn, and its message when it is one)."""
        if self.picked_turns or self.picked_entries:
            points = [p for p in self.points if p.turn_id in self.picked_turns]
            messages = [
                m
                for p in self.points
                for m in self.messages.get(p.turn_id, [])
                if m.entry_id in self.picked_entries
            ]
            return Selection(self.session_id, points, messages)
        row = self.current_row()
        if row is None:
            return Selection(self.session_id, [], [])
        return Selection(self.session_id, [self.points[row.turn]], [row.message] if row.message else [])

    # ------------------------------------------------------------------ where a fork cuts

    def _turn_ref(self, point: ForkPoint) -> str:
        """The turn's last record, by id (a uuid alone could name a record of another session): a
        fork there keeps the turn and everything before it."""
        if point.cut_entry_id is not None:
            return str(point.cut_entry_id)
        seqs = browse.branch_seqs(self.conn, self.session_id, [point.turn_id])
        rows = browse.message_page(self.conn, self.session_id, seqs[-1], seqs[-1]) if seqs else []
        return str(rows[0].entry_id) if rows else (point.cut_uuid or point.turn_id)

    def target_at(self, *, before: bool = False) -> Target | None:
        """Where the row under the cursor cuts a fork (just before it: a prompt's "edit and resend")."""
        row = self.current_row()
        if row is None:
            return None
        turn = f"turn {self.turn_number(row)}"
        message = row.message
        if message is None or (not message.exact and not before):
            return Target(self._turn_ref(self.points[row.turn]), f"the end of {turn}")
        if before:
            return Target(str(message.entry_id), f"just before the prompt of {turn}", before=True)
        what = f"{message.tool_name} call" if message.kind == "tool call" else message.kind
        whole = " (with its whole API message)" if row.blocks > 1 else ""
        return Target(str(message.entry_id), f"the chosen {what} of {turn}{whole}")

    def can_fork_before(self) -> bool:
        """The row under the cursor is a prompt a fork can end just before."""
        row = self.current_row() if self.points_read else None
        return bool(row and row.message and row.message.can_fork_before)

    # ------------------------------------------------------------------ what can be done now

    @property
    def busy(self) -> bool:
        """A plan or a restore under way, a question waiting, or something being typed."""
        return bool(self.planning) or self.restoring or self.pending is not None or bool(self.prompt_for)

    def allows(self, action: str) -> bool | None:
        """Whether an action applies now: True, False (not offered here at all) or None (not now)."""
        if action in PLANNED:
            if action == "fork_before" and not self.can_fork_before():  # offered on prompts only
                return False
            if self.busy:
                return None
            if action in ("fork_here", "fork_prompt") and not self.points:
                return None
        if action == "confirm":
            return self.pending is not None or (
                self.plan is not None and self.plan.restore is not None and not self.busy
            )
        if action == "copy":
            return True if self.plan is not None and not self.busy else None
        if action == "undo_patch":
            return True if self.undo_here() is not None and not self.busy else None
        if action == "run":  # a command that finds nothing until restored is not offered as working
            return True if self.plan is not None and self.plan.restore is None and not self.busy else None
        return True

    def refusal(self, purpose: str) -> str:
        """Why this agent cannot do what the prompt box would be opened for ("before", "native"), or ""."""
        if purpose == "before" and not (self.adapter and self.adapter.forks_before_prompt):
            return (
                f"Forking before a prompt is for {agents_said(lambda a: a.forks_before_prompt)} sessions; "
                f"for {self.agent} fork at the "
                "message before it."
            )
        if purpose == "native" and not (self.adapter and self.adapter.forks_natively):
            return (
                f"Only {agents_said(lambda a: a.forks_natively)} can be started from outside as a fork with "
                f"a new prompt; for {self.agent} "
                "use Fork here (or Fork at end) and type the prompt in the new session."
            )
        return ""

    def fail(self, message: str) -> None:
        """Something could not be done: said, and the last command is no longer on show."""
        self.plan, self.written, self.copied_how, self.ran, self.error = None, None, "", "", message
        self.patch_said = None

    # ------------------------------------------------------------------ typing a prompt or a path

    def open_prompt(self, purpose: str) -> str:
        """Start typing for `purpose` ("before", "native", "undo"); returns the text to start from."""
        self.prompt_for = purpose
        if purpose == "undo":
            return self.patch_path()
        return self._prompt_to_edit() if purpose == "before" else ""

    def close_prompt(self) -> None:
        self.prompt_for = ""

    def _prompt_to_edit(self) -> str:
        """The prompt under the cursor as it was sent, to edit and send instead: on the box's one
        line, each line break shown as ⏎ (and sent as one)."""
        row = self.current_row()
        text = row.message.text if row is not None and row.message is not None else None
        return LINE_BREAK.join((text or "").replace("\r\n", "\n").split("\n")).strip()

    def typed(self, value: str) -> str:
        """What was typed, as it is used: a prompt edited on one line gets its line breaks back."""
        text = value.strip()
        if self.prompt_for == "before":
            text = text.replace(LINE_BREAK, "\n").replace("⏎", "\n").strip()
        return text

    # ------------------------------------------------------------------ making the plan

    def start_plan(self, action: str, target: Target | None = None) -> None:
        """A plan is being made: the last command is not this one."""
        self.planning, self.target, self.error = action, target, ""
        self.plan, self.written, self.copied_how, self.ran = None, None, "", ""
        self.in_tree = False
        self.patch_said = None

    def make_plan(
        self, conn: sqlite3.Connection, action: str, target: Target | None, prompt: str | None
    ) -> tuple[ForkPlan | None, str]:
        """The plan of `action` at `target`, or what stopped it (reads only)."""
        try:
            plan = plan_for(
                conn,
                action,
                target.ref if target else "",
                session_id=self.session_id,
                before=bool(target and target.before) and action == "fork",
                prompt=prompt,
            )
        except (ForkError, OSError, sqlite3.Error) as exc:
            return None, f"{FAILURE[action]}: {exc}"
        return plan, ""

    def took_plan(self, action: str, plan: ForkPlan | None, error: str) -> str:
        """Take a plan in; returns what it waits for: "write" or "restore" (asked), "" (finished:
        its command copied), or "failed"."""
        self.planning = ""
        if plan is None:
            self.fail(error)
            return "failed"
        step = next_step(action, plan)
        if step:  # threadloom writes the transcript, or the command finds nothing until it is back
            self.ask(step, plan)
        else:  # a command only; Gemini's plan already wrote its truncated copy to a temporary file
            self.finish(plan, Path(plan.path) if plan.path else None)
        return step

    def plan_now(
        self,
        action: str,
        target: Target | None = None,
        prompt: str | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> str:
        """Make the plan on this thread (the CLI, tests): `start_plan`, `make_plan`, `took_plan`."""
        self.start_plan(action, target)
        return self.took_plan(action, *self.make_plan(conn or self.conn, action, target, prompt))

    # ------------------------------------------------------------------ questions

    def ask(self, asking: str, plan: ForkPlan) -> None:
        self.pending, self.asking = plan, asking
        self.error = ""

    def close_ask(self) -> None:
        self.pending, self.asking = None, ""

    def cancel_ask(self) -> None:
        """No to the question: a restore not made leaves the command on show, said not to work yet."""
        plan, asking = self.pending, self.asking
        self.close_ask()
        if asking == "restore" and plan is not None:
            self.plan, self.written, self.copied_how, self.error = plan, None, "", ""
            self.ran = ""

    def confirm(self) -> str:
        """Yes to the question waiting ("write" or "restore" to do next, "" for none); with none,
        the command shown is asked to be restored."""
        if self.pending is not None:
            return self.asking
        if self.plan is not None and self.plan.restore is not None and not self.busy:
            self.pending, self.asking = self.plan, "restore"
            return "restore"
        return ""

    def write(self) -> Path | None:
        """Write the fork waiting for a yes (never over a file); its path, or None when it failed.
        Next: its transcript restored (asked), or finished."""
        from .fork import write_fork

        plan = self.pending
        if plan is None or self.asking != "write":
            return None
        self.close_ask()
        try:
            path = write_fork(plan)
        except FileExistsError:
            self.fail(
                f"A file already exists at {plan.path}; nothing was written or overwritten. "
                "Press f again for a fork with a new session id."
            )
            return None
        except (ForkError, OSError) as exc:
            self.fail(f"Could not write the fork: {exc}")
            return None
        if plan.restore is not None:
            self.written = path
            self.ask("restore", plan)
        else:
            self.finish(plan, path)
        return path

    def start_restore(self) -> ForkPlan | None:
        """The plan whose transcript is to be restored now (yes to "restore"), or None."""
        plan = self.pending
        if plan is None or self.asking != "restore":
            return None
        self.close_ask()
        self.restoring, self.error = True, ""
        return plan

    def restore(self, conn: sqlite3.Connection, plan: ForkPlan) -> str:
        """Write the transcript back where the agent looks, from the archive (never overwriting);
        what stopped it, or "". Writes the agent's files, not the archive: safe in a worker."""
        from .fork import restore_for
        from .restore import RestoreError

        folder = plan.restore.folder if plan.restore else ""
        try:
            restore_for(conn, plan)
        except FileExistsError as exc:
            return (
                f"{exc.filename} appeared meanwhile; a restore never overwrites, so "
                "nothing more was written. Choose the action again."
            )
        except (RestoreError, OSError, sqlite3.Error) as exc:
            return f"Could not restore the transcript to {folder}: {exc}"
        return ""

    def took_restore(self, plan: ForkPlan, error: str) -> None:
        self.restoring = False
        if error:
            self.fail(error)
        else:
            self.finish(plan, self.written)

    def finish(self, plan: ForkPlan, written: Path | None) -> None:
        """The command is ready: on show, and copied."""
        self.plan, self.written, self.error, self.ran = plan, written, "", ""
        self.in_tree = False
        self.copied_how = self.copy(plan.command) if self.copy else ""

    def copy_again(self) -> None:
        if self.plan is not None and self.copy is not None:
            self.copied_how = self.copy(self.plan.command)

    def notes(self) -> list[str]:
        """What the user should know about the command on show."""
        plan = self.plan
        lines = list(plan.notes) if plan else []
        branch = plan.git_branch if plan else None
        if branch and not any(branch in line for line in lines):
            lines.append(f"Recorded git branch at this point: {branch}.")
        return lines

    # ------------------------------------------------------------------ running the command

    def run_refusal(self) -> str:
        """Why the command on show cannot be run yet, or ""."""
        if self.plan is not None and self.plan.restore is not None:
            return (
                "The command finds nothing until the transcript is restored where the agent looks: press y."
            )
        folder = usable_folder(self.plan.cwd, []) if self.plan is not None else None
        goes_there = folder is not None and self.plan is not None and shlex.quote(folder) in self.plan.command
        if goes_there and not os.path.isdir(folder or ""):  # the session ran on another machine
            return (
                f"The session's folder {folder} is not on this machine, so the command would stop at its "
                "first step: recreate the folder, or copy the command (c) to run where it is."
            )
        return ""

    def ran_agent(self, code: int) -> None:
        self.error = ""
        self.ran = (
            f"The agent ended (exit {code}); reading what it wrote."
            if code == 0
            else f"The command ended with exit status {code}; reading what it wrote."
        )

    def not_run(self, why: str) -> None:
        """The command could not be run from here: copied instead."""
        self.copied_how = self.copy(self.plan.command) if self.plan and self.copy else ""
        self.ran = f"Not run: {why}. The command is copied: paste it in a terminal."

    def read_back(self) -> None:
        """The written fork was read into the archive (its session tree)."""
        self.in_tree = True

    # ------------------------------------------------------------------ what a fork does not undo

    def want_edits(self) -> str | None:
        """The edits after the point under the cursor are wanted: returns the point (an entry id) to
        read them at, when a read should start now (one at a time, the latest point winning:
        holding a key down starts one read, not one per row)."""
        target = self.target_at() if self.points_read else None
        ref = target.ref if target is not None and target.ref.isdigit() else None
        if ref == self.undo_wanted:
            return None
        self.undo_wanted = ref
        if ref is not None and not self.undo_reading and ref != self.undo_ref:
            self.undo_reading = True
            return ref
        return None

    def read_edits_after(self, conn: sqlite3.Connection, ref: str) -> tuple[UndoPlan | None, str]:
        """The files edited after the point `ref`, and the patch taking them back (reads only)."""
        from .undo import plan_undo

        try:
            return plan_undo(conn, self.session_id, int(ref)), ""
        except (LookupError, sqlite3.Error) as exc:
            return None, str(exc)

    def took_edits(self, ref: str, undo: UndoPlan | None, error: str) -> str | None:
        """Take the edits after `ref` in; returns the point to read next when the cursor moved on."""
        self.undo_reading = False
        self.undo_ref, self.undo = ref, undo
        if error:
            self.undo_ref, self.undo = None, None
        if self.undo_wanted is not None and self.undo_wanted != ref:
            self.undo_reading = True
            return self.undo_wanted
        return None

    def undo_here(self) -> UndoPlan | None:
        """The edits after the point under the cursor, once read."""
        return self.undo if self.undo is not None and self.undo_ref == self.undo_wanted else None

    def edits_for_target(self) -> UndoPlan | None:
        """The edits after the point the fork being asked about cuts at, once read."""
        undo = self.undo_here()
        if undo is not None and self.target is not None and self.target.ref == self.undo_ref:
            return undo
        return None

    def patch_path(self) -> str:
        """Where the undo patch is proposed to go: the folder threadloom was started in (a patch in the
        session's own folder would be a new file in the working tree it is meant to restore)."""
        tag = "".join(ch for ch in self.session_id[:8] if ch.isalnum())
        return str(Path.cwd() / f"threadloom-undo-{tag}-at-{self.undo_ref}.patch")

    def want_patch(self) -> str:
        """`u`: "ask" where to write the undo patch; "none" when there is none to write (said in
        `patch_said`); "" when there is nothing to say here, or something else is under way."""
        undo = self.undo_here()
        if undo is None or self.busy:
            return ""
        self.error = ""
        if not undo.patch:
            self.patch_said = PatchSaid(undo)
            return "none"
        return "ask"

    def write_undo_patch(self, where: str) -> None:
        """Write the patch (owner-only, never over a file) at `where` (relative: to the folder
        threadloom was started in); said in `patch_said`, or in `error`."""
        undo = self.undo_here()
        if undo is None:
            return
        path = Path(where).expanduser()
        path = path if path.is_absolute() else Path.cwd() / path
        try:
            write_patch(undo, path)
        except FileExistsError:
            self.error = f"{path} already exists; the undo patch never overwrites a file: press u and choose another path."
            return
        except OSError as exc:
            self.error = f"Cannot write the undo patch to {path}: {exc.strerror or exc}"
            return
        self.error = ""
        self.patch_said = PatchSaid(undo, path, apply_command(undo, str(path)))
