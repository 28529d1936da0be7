"""Resume or fork a conversation at any message, with the exact shell command to run.

For Claude Code the fork is written by threadloom (FORK.md §1.5 Recipe A): everything up to and
including the chosen message, and no more. The chosen point's ancestor chain (so abandoned
branches stay out), every block of each API message on it (parallel tool calls too), each call
with its result, in file order, in one linear chain; new uuids and a new session id on every
line, `forkedFrom` on each, the chosen point last and newest, a "(fork)" title. It is created
with O_EXCL and mode 0600 in Claude Code's own project folder for the session's folder, where
`claude --resume` looks, whatever folder the source was read from. The source is never touched.

For Codex a legacy rollout is cut at a turn and written as a new thread (FORK.md §2.3 recipe C).
A command that resumes a session needs its transcript where the agent looks: when it is not
there (read from elsewhere, or deleted by the agent), the plan carries a restore step.

What differs per agent is asked of its adapter, never of its name: its resume command
(`Adapter.resume_command`), the shape of its ids, and its `fork_style`, which names the machinery
here (`STYLES`) that writes its forks and restores its transcripts (it reads the store, which
adapters never import).
"""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import uuid as uuidlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from ..adapters import ADAPTERS, agents_said
from ..adapters.base import PIECE_TYPE, Adapter, ResumeTarget, disk_name
from ..adapters.base import ForkError as ForkError  # re-exported: adapters raise it too
from ..adapters.base import checked_id as _checked_id
from ..base.markup import Caveat, CommandOutput, is_note, parse
from ..base.text import one_line, readable
from ..read.query import title_sql, unrelated_holders
from ..store.rows import builder, value
from ..store.sql import like_text

if TYPE_CHECKING:
    from .restore import RestoredFile

TRANSCRIPT_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
DROP_KEYS = ("teamName", "agentName", "slug", "sourceToolAssistantUUID")
WORKTREE_NOTE = (
    "The working tree is not rolled back: files stay as they are now (git stash or a worktree helps)."
)


def worktree_note(branch: str | None) -> str:
    """WORKTREE_NOTE, and the branch the session was on when it was recorded ("HEAD" is git's name
    for no branch: a detached checkout)."""
    if not branch:
        return WORKTREE_NOTE
    if branch == "HEAD":
        return WORKTREE_NOTE + " Recorded then: a detached HEAD (no branch)."
    return WORKTREE_NOTE + f" Recorded git branch then: {branch}."


# ---------------------------------------------------------------------- commands
# Every value of a printed command that comes from a log (ids, folders) is untrusted: logs arrive
# from backups and from other people. Ids must have the shape their agent writes (its adapter's
# `id_shape`); every word is quoted; a folder goes into `cd` only when it is an absolute path
# without control characters.

# C0/C1 controls but tab and newline (which quoting keeps literal), and bidi overrides: printed, they
# would drive the terminal or hide part of the command
UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
WINDOWS_ABSOLUTE = re.compile(r"[A-Za-z]:[\\/]|\\\\")


def checked_id(agent: str, value: object, what: str = "session id") -> str:
    """`value` if it has the shape `agent` gives its ids; else ForkError, so that no command carries it."""
    adapter = ADAPTERS.get(agent)
    return adapter.checked_id(value, what) if adapter is not None else _checked_id(agent, value, what)


def shell_command(argv: list[str]) -> str:
    """One command line from its words, each quoted: no value taken from a log can become shell syntax."""
    return shlex.join(argv)


def usable_folder(cwd: object, notes: list[str], option: str | None = None) -> str | None:
    """The session's folder if a command may go there; otherwise None. Either way `notes` says what
    the user must know: a folder not recorded, not usable, or missing on this machine. `option`:
    the command gives the folder to the agent with it (`codex … -C DIR`) rather than a `cd`."""
    if not isinstance(cwd, str) or not cwd:
        notes.append(
            "The log does not say which folder the session ran in: run the command from that folder."
        )
        return None
    if UNPRINTABLE.search(cwd) or not (cwd.startswith("/") or WINDOWS_ABSOLUTE.match(cwd)):
        why = "has control characters" if UNPRINTABLE.search(cwd) else "is not an absolute path"
        left_out = f"no {option}" if option else "no cd"
        notes.append(
            f"The session's folder in the log, {repr(cwd)[:120]}, {why}, so the command has {left_out}: "
            "run it from the folder the session was started in."
        )
        return None
    if not os.path.isdir(cwd):
        fails = f"the agent cannot start there ({option} {cwd})" if option else "the cd will fail"
        notes.append(
            f"The folder {cwd} does not exist on this machine, so {fails}: restore or recreate it first."
        )
    return cwd


def in_folder(cwd: object, command: str, notes: list[str]) -> str:
    """`cd DIR && command` with DIR quoted, or `command` alone (and a note) when the folder is not usable."""
    folder = usable_folder(cwd, notes)
    return f"cd {shlex.quote(folder)} && {command}" if folder else command


@dataclass
class ForkPoint:
    """A turn boundary: forking here keeps this turn and everything before it on its branch."""

    turn_id: str
    cut_uuid: str | None  # the turn's last record
    sequence: int
    prompt: str
    reply: str
    timestamp: int | None
    model: str | None
    tool_call_count: int
    parent_turn_id: str | None
    entry_id: int | None = None  # the prompt's record
    cut_entry_id: int | None = (
        None  # the turn's last record: `plan_fork(conn, str(cut_entry_id))` keeps the turn
    )


@dataclass
class ForkMessage:
    """One message of a turn, as a place to fork: `plan_fork(conn, str(entry_id))` keeps everything
    up to and including it (its whole API message, with the results of its tool calls), and
    `plan_fork(conn, str(entry_id), before=True)` of a prompt keeps what came before the prompt."""

    entry_id: int
    turn_id: str
    kind: str  # prompt | reply | thinking | tool call | summary | note | event
    label: str  # one line: the text, or the tool and what it was given
    timestamp: int | None
    message_id: str | None = None  # the API message: its blocks (records) fork as one
    tool_name: str | None = None
    tool_status: str | None = (
        None  # completed | failed | rejected | interrupted | pending (no result in the log)
    )
    can_fork_before: bool = False  # a prompt: "fork before it" (edit and resend)
    exact: bool = True  # False where the agent forks at turn ends only (Codex: the fork keeps the whole turn)
    text: str | None = None  # a prompt's whole text, as it was sent: what "edit and resend" starts from


@dataclass
class RestoreStep:
    """The transcript is not where the agent looks for it: these files are written back there
    (from the archive, byte for byte, never overwriting) before the command can work."""

    agent: str
    folder: str  # where the agent looks
    reason: str  # why the transcript is not there, with the place it was read from
    files: dict[str, str] = field(default_factory=dict)  # source path -> where it is written

    @property
    def gone(self) -> bool:
        """The agent deleted it (rather than: it was read from a folder the agent does not look in)."""
        return " deleted it" in self.reason

    @property
    def question(self) -> str:
        """What a user is asked before the files are written."""
        return (
            f"The transcript is not where {_program(self.agent)} looks for it ({self.reason}). "
            f"Restore it to {self.folder}? ({len(self.files)} file{'s' if len(self.files) != 1 else ''}, "
            "nothing is overwritten)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {"folder": self.folder, "reason": self.reason, "files": self.files}


def _program(agent: str) -> str:
    adapter = ADAPTERS.get(agent)
    return adapter.program if adapter is not None else agent


FORK_TITLE_SUFFIX = " (fork)"  # a written fork's title: its source's, marked


# what a dry run's copy to import is named by in place of the random part a real one draws
DRY_RUN_NAME = "XXXXXXXX"


@dataclass
class ForkPlan:
    action: str  # fork | fork-prompt | resume | fork-end
    agent: str
    command: str
    source_session_id: str
    fork_point: str | None = None  # the source record the fork ends on (Claude: its last record)
    new_session_id: str | None = None
    path: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    notes: list[str] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list, repr=False)
    records: int = 0  # conversation records the written fork holds
    tool_calls: int = 0  # tool calls the written fork holds (each with its result)
    restore: RestoreStep | None = None  # to do first: the command finds nothing until then
    # the fork keeps the chosen point's branch of the conversation (its records, under a new title)
    # rather than the session's lines up to it
    branch: bool = False
    title: str | None = None  # the title the written fork is given, when it is given one

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "agent": self.agent,
            "command": self.command,
            "new_session_id": self.new_session_id,
            "path": self.path,
            "source_session_id": self.source_session_id,
            "fork_point": self.fork_point,
            "cwd": self.cwd,
            "git_branch": self.git_branch,
            "notes": self.notes,
            "records": self.records,
            "tool_calls": self.tool_calls,
            "restore": self.restore.as_dict() if self.restore else None,
        }


# a turn as `fork_points` selects it


def fork_points(
    conn: sqlite3.Connection, session_id: str, around_entry: int | None = None
) -> list[ForkPoint]:
    """The turns of the branch through `around_entry` (or of the latest branch), oldest first."""
    cursor = conn.execute(
        "SELECT t.id AS turn_id, t.last_entry_uuid AS cut_uuid, t.sequence, t.timestamp, t.model, "
        "t.tool_call_count, t.parent_turn_id, "
        # `+session_id`: look the records up by uuid (ix_entries_uuid), not by scanning the session
        "(SELECT content FROM entries WHERE uuid = t.id AND +session_id = t.session_id LIMIT 1) AS prompt, "
        "(SELECT content FROM entries WHERE uuid = t.response_message_id AND +session_id = t.session_id "
        "LIMIT 1) AS reply, "
        "(SELECT id FROM entries WHERE uuid = t.id AND +session_id = t.session_id LIMIT 1) AS entry_id, "
        "(SELECT id FROM entries WHERE uuid = t.last_entry_uuid AND +session_id = t.session_id "
        "AND dup_of IS NULL LIMIT 1) AS cut_entry_id "
        "FROM agent_turns t WHERE t.session_id = ?",
        (session_id,),
    )
    as_point = builder(cursor, ForkPoint)  # the texts are shortened below, for the list
    turns = {point.turn_id: point for point in map(as_point, cursor)}
    if not turns:
        return []

    def latest(turn: ForkPoint) -> tuple[int, int]:
        return (turn.timestamp or 0, turn.sequence)

    start = None
    if around_entry is not None:
        start = value(conn, "SELECT turn_id FROM entries WHERE id = ?", (around_entry,))
        start = start if start in turns else None
    if start is None:
        start = max(turns.values(), key=latest).turn_id
    # the branch: ancestors of `start`, then its latest descendants
    chain = []
    seen = set()
    node = start
    while node in turns and node not in seen:
        seen.add(node)
        chain.append(node)
        node = turns[node].parent_turn_id
    chain.reverse()
    children: dict[str | None, list[ForkPoint]] = {}
    for turn in turns.values():
        children.setdefault(turn.parent_turn_id, []).append(turn)
    node = start
    while children.get(node):
        nxt = max(children[node], key=latest).turn_id
        if nxt in seen:
            break
        seen.add(nxt)
        chain.append(nxt)
        node = nxt
    points = [turns[turn_id] for turn_id in chain]
    for point in points:
        # a turn an older read started at a `!` command's output: said to be output
        mark = "↳ " if point.prompt and is_note(parse(point.prompt)) else ""
        point.prompt = mark + one_line(readable(point.prompt), 120)
        point.reply = one_line(point.reply, 120)
    return points


def fork_messages(conn: sqlite3.Connection, session_id: str, turn_ids: list[str]) -> list[ForkMessage]:
    """The messages of these turns (from `fork_points`), in order: each prompt, reply, thinking step
    and tool call (its result folded in), each a place to fork. Tool results are not listed on
    their own: forking at a call keeps its result."""
    from ..read.calls import tool_summary
    from ..read.query import ToolCall, fill_tool_io

    agent = conn.execute("SELECT source FROM agent_sessions WHERE id = ?", (session_id,)).fetchone()
    style = _style(ADAPTERS.get(agent[0]) if agent is not None else None)
    exact = style is not None and style.exact
    rows = conn.execute(
        "SELECT id, turn_id, uuid, role, entry_type, subtype, is_meta, content, thinking, timestamp, message_id, "
        "CASE WHEN role = 'user' AND instr(substr(raw, 1, 2048), ?) > 0 THEN raw END "
        "FROM entries WHERE session_id = ? AND seq IS NOT NULL AND turn_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY seq",
        (b'"isCompactSummary"', session_id, orjson.dumps(turn_ids).decode()),
    ).fetchall()
    if not rows:
        return []
    first, last = min(r[0] for r in rows), max(r[0] for r in rows)
    calls: dict[int, list[ToolCall]] = {}
    results: set[int] = set()
    cursor = conn.execute(
        "SELECT entry_id, id, tool_name AS name, params_json, result_json, status, child_session_id, "
        "started_at, completed_at, result_entry_id FROM agent_tool_calls WHERE session_id = ? AND ("
        "entry_id BETWEEN ? AND ? OR result_entry_id BETWEEN ? AND ?) ORDER BY entry_id, tool_number",
        (session_id, first, last, first, last),
    )
    as_call = builder(cursor, ToolCall)
    for row in cursor:
        call = as_call(row)
        call.agent = agent[0] if agent is not None else None  # whose adapter reads the call
        if call.result_entry_id is not None:
            results.add(call.result_entry_id)
        if call.entry_id is not None and first <= call.entry_id <= last:
            calls.setdefault(call.entry_id, []).append(call)
    fill_tool_io(conn, [c for own in calls.values() for c in own])
    out: list[ForkMessage] = []
    # API messages with a line to show: a line of one showing nothing (the empty thinking block that
    # opens most of Claude Opus 4.7's) is left out, the fork at its message's other lines is the same
    shown = {r[10] for r in rows if r[10] and (r[7] or r[8] or r[0] in calls)}
    for eid, turn_id, uuid, role, etype, subtype, is_meta, content, thinking, ts, message_id, summary in rows:
        own = calls.get(eid, [])
        if eid in results and not content and not own:
            continue  # a tool's result: listed with its call
        if role == "assistant" and not (content or thinking or own) and message_id in shown:
            continue

        items: list[tuple[str, str, ToolCall | None]] = []  # (kind, label, call)
        text = one_line(readable(content), 200)
        parts = parse(content) if role == "user" and content else []
        if parts and all(isinstance(p, CommandOutput) and not p.text.strip() for p in parts):
            continue  # an empty output (what /clear leaves): nothing to show or fork at
        quiet = is_note(parts)  # a command's output, a caveat: Claude Code's words, not the user's
        if quiet and not any(isinstance(p, Caveat) for p in parts):
            text = "↳ " + text
        if uuid is not None and uuid == turn_id:
            items.append(("prompt", text or "(no prompt text)", None))
        elif role == "assistant" and content:
            items.append(("reply", text, None))
        elif role == "assistant" and (thinking or not own):
            items.append(("thinking", one_line(thinking, 200) or "(thinking)", None))
        elif subtype == "compact_boundary" or (summary is not None and _compact_summary(summary)):
            items.append(("summary", text or "(conversation compacted)", None))
        elif role == "user" and not own:
            items.append(("note" if is_meta or quiet else "message", text or "(no text)", None))
        elif not own:
            items.append(("event", text or subtype or etype or "event", None))
        if not (uuid is not None and uuid == turn_id):
            for call in own:
                gist = tool_summary(call)
                items.append(("tool call", f"{call.name}: {gist}" if gist else call.name, call))
        out += [
            ForkMessage(
                eid,
                turn_id,
                kind,
                label,
                ts,
                message_id,
                call.name if call else None,
                call.status if call else None,
                kind == "prompt",
                exact,
                content if kind == "prompt" else None,
            )
            for kind, label, call in items
        ]
    return out


def _compact_summary(raw: bytes) -> bool:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and obj.get("isCompactSummary") is True


# ---------------------------------------------------------------------- where the agents look

MAX_FOLDER_NAME = 200  # Claude Code cuts a longer project folder name here and adds a hash


def _style_adapter(style: str) -> Adapter:
    """The (first) adapter whose sessions fork with `style`: the one whose places its machinery uses."""
    found = next((a for a in ADAPTERS.values() if a.fork_style == style), None)
    if found is None:
        raise ForkError(f"no agent forks with {style}")
    return found


def _style_root(style: str) -> Path:
    root = _style_adapter(style).resume_root()
    if root is None:
        raise ForkError(f"the agent that forks with {style} names no folder it resumes from")
    return root


def claude_projects_root() -> Path:
    """`$CLAUDE_CONFIG_DIR/projects` (default ~/.claude/projects): where Claude Code keeps sessions
    (its adapter's `resume_root`)."""
    return _style_root("uuid-chain")


def claude_folder_name(cwd: str) -> str:
    """Claude Code's name for a project's folder (FORMATS.md §1.2): every UTF-16 unit that is not
    an ASCII letter or digit becomes "-" (a character beyond the BMP is two units)."""
    return "".join(ch if ch.isascii() and ch.isalnum() else ("--" if ord(ch) > 0xFFFF else "-") for ch in cwd)


def _js_hash36(text: str) -> str:
    """The 32-bit string hash Claude Code's SDK appends to a long folder name, in base 36."""
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    h = abs(h - (1 << 32) if h >= 1 << 31 else h)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        h, r = divmod(h, 36)
        out = digits[r] + out
        if not h:
            return out


def claude_project_dir(cwd: str, source_path: str | None, notes: list[str]) -> Path:
    """The folder where `claude --resume`, run in `cwd`, looks for a session. A name longer than
    200 characters ends in a hash that differs between Claude Code builds: an existing folder
    with the same start is taken then (the source's own first)."""
    root = claude_projects_root()
    name = claude_folder_name(cwd)
    if len(name) <= MAX_FOLDER_NAME:
        return root / name
    prefix = name[:MAX_FOLDER_NAME] + "-"
    if source_path:
        parent = Path(source_path).parent
        if parent.parent == root and parent.name.startswith(prefix):
            return parent
    try:
        existing = sorted(p for p in root.iterdir() if p.name.startswith(prefix) and p.is_dir())
    except OSError:
        existing = []
    if len(existing) == 1:
        return existing[0]
    notes.append(
        "The session's folder path is long, so Claude Code names its project folder with a hash that "
        "differs between versions; if `claude --resume` does not find the session, recent versions still "
        "find it by scanning every project folder."
    )
    return root / (prefix + _js_hash36(cwd))


def _own_files(conn: sqlite3.Connection, sid: str) -> list[tuple[str, str | None, bool]]:
    """(path, project key, is the main transcript) of the files that are this session's own: its
    transcript, its subagents' files and the files in its own folder, not other sessions' copies."""
    from ..read.archive import session_files

    like = like_text(sid) + ":%"
    own = conn.execute(
        "SELECT source_file_id, id = ? FROM agent_sessions WHERE (id = ? OR id LIKE ? ESCAPE '\\') "
        "AND source_file_id IS NOT NULL",
        (sid, sid, like),
    ).fetchall()
    ids = {fid for fid, _ in own}
    main = {fid for fid, is_main in own if is_main}
    out = []
    for fid, path, key in session_files(conn, sid):
        rest = _rest(path, key)
        if fid in ids or rest.startswith(f"{sid}/"):
            out.append((path, key, fid in main))
    return out


def _rest(path: str, key: str | None) -> str:
    """The path below the project folder it was read from."""
    parts = Path(path).parts
    if key and key in parts:
        i = len(parts) - 1 - parts[::-1].index(key)
        return "/".join(parts[i + 1 :]) or Path(path).name
    return Path(path).name


def _gone_or_elsewhere(source: str | None, expected: Path, program: str) -> str:
    if source is None:
        return "threadloom does not know the file it was read from"
    if Path(source) == expected or (not os.path.exists(source) and Path(source).parent == expected.parent):
        return f"{program} deleted it; threadloom's archive kept it"
    if not os.path.exists(source):
        return f"it was read from {source}, which is gone, and {program} does not look there"
    return f"it was read from {source}, and {program} does not look there"


def claude_restore_step(
    conn: sqlite3.Connection, sid: str, cwd: str | None, agent: str | None = None
) -> RestoreStep | None:
    """What must be written back before `claude --resume SID` (run in `cwd`) finds the session:
    None when its transcript is in place (or the folder is not known: the command's note says so)."""
    folder = usable_folder(cwd, [])
    if folder is None:
        return None
    files = _own_files(conn, sid)
    main = next((path for path, _, is_main in files if is_main), None)
    agent = agent or _source_of(conn, sid)
    adapter = _adapter(agent)
    misread = _misread(conn, adapter, sid)
    if misread:
        raise ForkError(
            f"{sid} is {misread}: it is not restored into {adapter.display_name}'s folders "
            "(`threadloom ingest --rebuild` reads the archive again without it)"
        )
    project = claude_project_dir(folder, main, [])
    expected = project / f"{sid}.jsonl"
    if os.path.lexists(expected):
        return None
    step = RestoreStep(agent, str(project), _gone_or_elsewhere(main, expected, adapter.program))
    for path, key, is_main in files:
        target = expected if is_main else project / _rest(path, key)
        if not os.path.lexists(target):  # what is there already stays: restore never overwrites
            step.files[path] = str(target)
    return step if main in step.files else None


def _misread(conn: sqlite3.Connection, adapter: Adapter, sid: str) -> str | None:
    """What a session stored as this agent's really is, when an earlier threadloom misread another
    agent's transcript as its (its first records, `Adapter.misread`)."""
    raws = [
        bytes(r[0])
        for r in conn.execute("SELECT raw FROM entries WHERE session_id = ? ORDER BY id LIMIT 8", (sid,))
    ]
    return adapter.misread(b"\n".join(raws))


ROLLOUT_DATE = re.compile(r"rollout-(\d{4})-(\d{2})-(\d{2})T")


def codex_sessions_root() -> Path:
    """`$CODEX_HOME/sessions` (default ~/.codex/sessions): where `codex resume ID` looks (its
    adapter's `resume_root`)."""
    return _style_root("rollout-copy")


def codex_restore_step(
    conn: sqlite3.Connection, sid: str, external: str, agent: str | None = None
) -> RestoreStep | None:
    """What must be written back before `codex resume ID` finds the thread: its rollout, into
    `$CODEX_HOME/sessions/YYYY/MM/DD/`. None when a rollout of the thread is there already."""
    root = codex_sessions_root()
    files = _own_files(conn, sid)
    main = next((path for path, _, is_main in files if is_main), files[0][0] if files else None)
    if main is None:
        return None
    if Path(main).is_relative_to(root) and os.path.exists(main):
        return None
    if any(root.glob(f"*/*/*/rollout-*{glob_escape(external)}.jsonl*")):
        return None
    name = Path(main).name
    day = ROLLOUT_DATE.match(name)
    if not (name.startswith("rollout-") and external in name and day):
        created = conn.execute("SELECT created_at FROM agent_sessions WHERE id = ?", (sid,)).fetchone()[0]
        when = datetime.fromtimestamp(created / 1000) if created else datetime.now()
        name = f"rollout-{when:%Y-%m-%dT%H-%M-%S}-{external}.jsonl"
        day = ROLLOUT_DATE.match(name)
    assert day is not None
    folder = root.joinpath(*day.groups())
    target = folder / name
    if os.path.lexists(target):
        return None
    agent = agent or _source_of(conn, sid)
    step = RestoreStep(agent, str(folder), _gone_or_elsewhere(main, target, _program(agent)))
    step.files[main] = str(target)
    return step


def in_place_restore_step(conn: sqlite3.Connection, target: ResumeTarget) -> RestoreStep | None:
    """What must be written back before an agent that resumes a session from where it keeps it
    (Gemini CLI's chats, Copilot CLI's session folder) finds it: the session's own files, to where
    they were read from, when its log is gone. None when it is in place, when it is another
    machine's (pulled from a hub: not on this disk), or a database (a restore writes its rows, which
    its agent cannot read)."""
    from ..adapters.base import MIRROR_ROOT
    from ..read.archive import is_database, session_files

    row = conn.execute(
        "SELECT source_file_id FROM agent_sessions WHERE id = ?", (target.session_id,)
    ).fetchone()
    kept = {path: fid for fid, path, _ in session_files(conn, target.session_id)}
    main = next((path for path, fid in kept.items() if row and fid == row[0]), None)
    if main is None or main.startswith(MIRROR_ROOT + "/") or os.path.lexists(main):
        return None
    if is_database(conn, kept[main]):
        return None
    folder = str(Path(main).parent)
    step = RestoreStep(target.agent, folder, _gone_or_elsewhere(main, Path(main), _program(target.agent)))
    for path in kept:  # its log and what its agent keeps beside it in the same folder
        if Path(path).is_relative_to(folder) and not os.path.lexists(path):
            step.files[path] = path
    return step


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _needs_restore(plan: ForkPlan, step: RestoreStep | None) -> ForkPlan:
    """Attach a restore step to a plan, with the note that says what it is and how to do it."""
    if step is not None:
        plan.restore = step
        program = _program(step.agent)
        why = f"{program} deleted it" if step.gone else "it was read from a folder the agent does not look in"
        plan.notes.insert(
            0,
            f"The transcript is not where {program} looks for it ({why}): it must be restored to "
            f"{step.folder} first (`--restore` on the command line; nothing is overwritten), or the "
            "command finds nothing.",
        )
    return plan


def restore_for(conn: sqlite3.Connection, plan: ForkPlan) -> list[RestoredFile]:
    """Do a plan's restore step: write its files back where the agent looks (never overwriting).
    Returns the `core.actions.restore.RestoredFile`s; the plan's command works afterwards."""
    from .restore import restore_session

    step = plan.restore
    if step is None:
        return []
    written = restore_session(
        conn,
        plan.source_session_id,
        Path(step.folder),
        only={src: Path(dst) for src, dst in step.files.items()},
    )
    plan.restore = None
    plan.notes = [n for n in plan.notes if "must be restored to" not in n]
    plan.notes.insert(0, f"Restored {len(written)} file{'s' if len(written) != 1 else ''} to {step.folder}.")
    return written


# ---------------------------------------------------------------------- Claude Code: the fork itself


# a session as `_session_row` selects it: id, agent, title, folder, is_subagent, kind
class _SessionRow(NamedTuple):
    """What a fork or a resume reads of the session it starts from."""

    id: str
    source: str
    title: str | None
    project_path: str | None
    is_subagent: int
    kind: str


class _RolloutLine(NamedTuple):
    """A line of a Codex rollout, as a fork cuts it."""

    uuid: str | None
    turn_id: str | None
    entry_type: str | None
    raw: bytes


class _GeminiRecord(NamedTuple):
    """A record of a Gemini chat, as a fork follows its parents."""

    id: int
    uuid: str | None
    parent_uuid: str | None
    raw: bytes


def _session_row(conn: sqlite3.Connection, session_id: str) -> _SessionRow:
    row = conn.execute(
        f"SELECT s.id, s.source, NULLIF({title_sql('s.')}, ''), s.project_path, s.is_subagent, s.kind, f.agent "
        "FROM agent_sessions s LEFT JOIN source_files f ON f.id = s.source_file_id WHERE s.id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        raise ForkError(f"no session {session_id!r}")
    *fields, reader = row
    found = _SessionRow._make(fields)
    if reader is not None and reader in ADAPTERS and ADAPTERS[reader].resumes_own_sessions:
        return found._replace(source=reader)  # resumed by the reader of its file (cursor-agent's)
    return found


def resolve_entry(conn: sqlite3.Connection, ref: str) -> tuple[int, str, str | None]:
    """(entry id, session id, uuid) from an entry id or a record uuid."""
    row: tuple[int, str | None, str | None] | None = None
    if ref.isdigit():
        row = conn.execute("SELECT id, session_id, uuid FROM entries WHERE id = ?", (int(ref),)).fetchone()
    if row is None:
        # the record a session holds now: a rewrite of its file set the one it replaced aside (with no
        # session) and read the changed message as a newer one; of a session and its forks, the first
        rows = conn.execute(
            "SELECT id, session_id, uuid FROM entries WHERE uuid = ? AND dup_of IS NULL "
            "ORDER BY session_id IS NULL, seq IS NULL, id LIMIT 50",
            (ref,),
        ).fetchall()
        row = rows[0] if rows else None
        _refuse_unrelated_copies(conn, ref, rows)
    if row is not None:
        entry_id, session_id, uuid = row
        if session_id is not None:
            return entry_id, session_id, uuid
    raise ForkError(f"no record {ref!r}: give an entry id or a message uuid (see `threadloom show --json`)")


def _refuse_unrelated_copies(
    conn: sqlite3.Connection, ref: str, rows: list[tuple[int, str | None, str | None]]
) -> None:
    """A uuid held by sessions that are not one session and its forks (a copied session folder):
    which is meant cannot be told, so each is named by the entry id that says it."""
    first: dict[str, int] = {}
    for entry_id, session_id, _ in rows:
        if session_id is not None:
            first.setdefault(session_id, entry_id)
    named = unrelated_holders(conn, first)
    if named:
        raise ForkError(f"{ref!r} is a record of several sessions: give its entry id instead: {named}")


def whole_lines(rows: Iterable[tuple[int, bytes, str | None]]) -> Iterator[tuple[int, bytes]]:
    """(id, raw) of records from (id, raw, entry_type) rows in file order, a line stored in pieces
    (core.ingest.reading) put back whole under its last piece's id, the record read for the line:
    a fork copies the line, not a piece of it."""
    carried: list[bytes] = []
    for eid, raw, entry_type in rows:
        if entry_type == PIECE_TYPE:
            carried.append(bytes(raw))
            continue
        yield eid, b"".join([*carried, bytes(raw)]) if carried else bytes(raw)
        carried = []


def _records(conn: sqlite3.Connection, session_id: str) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for eid, raw in whole_lines(
        conn.execute(
            "SELECT id, raw, entry_type FROM entries WHERE session_id = ? AND dup_of IS NULL ORDER BY id",
            (session_id,),
        )
    ):
        try:
            obj = orjson.loads(bytes(raw).lstrip(b"\x00"))
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append((eid, obj))
    return out


def _content(obj: dict[str, Any]) -> list[Any] | None:
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else None


def _tool_uses(obj: dict[str, Any]) -> list[str]:
    content = _content(obj)
    if obj.get("type") != "assistant" or content is None:
        return []
    return [
        b["id"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
    ]


def _tool_results(obj: dict[str, Any]) -> list[str]:
    content = _content(obj)
    if obj.get("type") != "user" or content is None:
        return []
    return [
        b["tool_use_id"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
    ]


def _message_id(obj: dict[str, Any]) -> str | None:
    message = obj.get("message")
    mid = message.get("id") if obj.get("type") == "assistant" and isinstance(message, dict) else None
    return mid if isinstance(mid, str) and mid else None


# records that hang off a tool's result without starting anything: hook output, timings, progress
SATELLITES = frozenset({"attachment", "system", "progress"})


def _record_line(rec: dict[str, Any]) -> bytes:
    """A copied record as a line of the fork. orjson writes every record a log is likely to hold; one
    it cannot (nested deeper than 255 levels, an integer past 64 bits) is written by the standard
    library, its non-ASCII escaped (a lone surrogate included), read back the same; nested past
    Python's own limit it cannot be copied, said as such."""
    try:
        return orjson.dumps(rec)
    except TypeError:
        import json

        try:
            return json.dumps(rec, separators=(",", ":")).encode()
        except RecursionError:
            raise ForkError(
                "a record of this session is nested too deeply to be copied into a fork"
            ) from None


def select_chain(
    records: list[tuple[int, dict[str, Any]]], cut_uuid: str, *, keep_sidechains: bool
) -> list[tuple[int, dict[str, Any]]]:
    """What a fork at `cut_uuid` keeps, in file order (FORK.md §1.5 step 3, §1.6).

    The ancestor chain of the cut (so abandoned branches stay out), plus every block of each API
    message on it: Claude Code writes each content block as its own record, and the parallel calls
    of one message are not all ancestors of what follows (each result hangs off its own call).
    Each call comes with its result and what hangs off that result (hook attachments), and nothing
    past the chosen message: the cut moves only as far as its own blocks and their results."""
    by_uuid: dict[str, tuple[int, dict[str, Any]]] = {}
    order: dict[str, int] = {}
    blocks: dict[str, list[str]] = {}  # message.id -> its records
    answers: dict[str, list[str]] = {}  # tool_use id -> the records holding its tool_result
    children: dict[str, list[str]] = {}
    caller: dict[str, str] = {}  # tool_use id -> the message that made the call
    for eid, obj in records:
        uid = obj.get("uuid")
        kind = obj.get("type")  # a log's value: a list there is no type (and no set member)
        if (
            not isinstance(kind, str)
            or kind not in TRANSCRIPT_TYPES
            or not isinstance(uid, str)
            or uid in by_uuid
        ):
            continue
        if obj.get("isSidechain") and not keep_sidechains:
            continue
        by_uuid[uid] = (eid, obj)
        order[uid] = len(order)
        mid = _message_id(obj)
        if mid:
            blocks.setdefault(mid, []).append(uid)
            for tid in _tool_uses(obj):
                caller.setdefault(tid, mid)
        for tid in _tool_results(obj):
            answers.setdefault(tid, []).append(uid)
        parent = obj.get("parentUuid")
        if isinstance(parent, str):
            children.setdefault(parent, []).append(uid)
    if cut_uuid not in by_uuid:
        raise ForkError(f"record {cut_uuid} is not a conversation record of this session")
    chain: list[str] = []
    kept: set[str] = set()
    node: str | None = cut_uuid
    while node and node in by_uuid and node not in kept:  # stops at null: a compaction boundary or the root
        kept.add(node)
        chain.append(node)
        parent = by_uuid[node][1].get("parentUuid")
        node = parent if isinstance(parent, str) else None
    start = min(order[u] for u in chain)  # nothing from before the compaction the chain starts at
    end = order[cut_uuid]
    added: list[str] = []
    queue = list(chain)
    while queue:
        uid = queue.pop()
        obj = by_uuid[uid][1]
        more = []
        mid = _message_id(obj)
        if mid:
            more += [u for u in blocks[mid] if order[u] >= start]
        for tid in _tool_uses(obj):
            found = [u for u in answers.get(tid, ()) if order[u] > order[uid]]
            if found and not any(u in kept for u in found):
                more.append(found[0])
        for tid in _tool_results(obj):  # a result chosen on its own brings its call's message
            more += [u for u in blocks.get(caller.get(tid, ""), ()) if order[u] >= start]
        for u in more:
            if u not in kept:
                kept.add(u)
                added.append(u)
                queue.append(u)
                end = max(end, order[u])
    stack = list(added)
    while stack:  # what hangs off a parallel call's result, up to the cut
        for u in children.get(stack.pop(), ()):
            if u not in kept and order[u] <= end and by_uuid[u][1].get("type") in SATELLITES:
                kept.add(u)
                stack.append(u)
    return [by_uuid[u] for u in sorted(kept, key=order.__getitem__)]


def _answered_only(
    kept: list[tuple[int, dict[str, Any]]], notes: list[str]
) -> list[tuple[int, dict[str, Any]]]:
    """`kept` without tool calls that have no result in the log (an agent resumed with an
    unanswered call fails): a record of such calls only is left out, a mixed one loses them."""
    answered = {tid for _, obj in kept for tid in _tool_results(obj)}
    out = []
    dropped = 0
    for eid, obj in kept:
        missing = [t for t in _tool_uses(obj) if t not in answered]
        if missing:
            dropped += len(missing)
            content = [
                b
                for b in _content(obj) or []
                if not (isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") in missing)
            ]
            if not content:
                continue
            obj = {**obj, "message": {**obj["message"], "content": content}}
        out.append((eid, obj))
    if dropped:
        notes.append(
            f"{dropped} tool call{'s' if dropped != 1 else ''} with no result in the log "
            f"{'are' if dropped != 1 else 'is'} left out: the agent cannot be resumed with a call unanswered."
        )
    if not out:
        raise ForkError("nothing would be left to fork at this point")
    return out


def _stamp(now: datetime | None) -> str:
    moment = now or datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def plan_fork(
    conn: sqlite3.Connection,
    entry_ref: str,
    *,
    prompt: str | None = None,
    before: bool = False,
    new_session_id: str | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
) -> ForkPlan:
    """Work out (without writing) the fork at a record and the command that continues it.

    Claude Code: the fork keeps everything up to and including the chosen message (its whole API
    message, with the results of its tool calls), and no more; `before` (a prompt only) keeps what
    came before it, for "edit and resend". A `prompt` given for a prompt record means `before`.
    It is written into Claude Code's own project folder for the session's folder, whatever folder
    the source was read from."""
    entry_id, session_id, uuid = resolve_entry(conn, entry_ref)
    sid, agent, title, project_path, is_subagent, kind = _session_row(conn, session_id)
    adapter = _adapter(agent)
    turn_row = conn.execute("SELECT turn_id, parent_uuid FROM entries WHERE id = ?", (entry_id,)).fetchone()
    is_prompt = uuid is not None and turn_row is not None and uuid == turn_row[0]
    if prompt is not None and is_prompt and adapter.forks_before_prompt:
        before = True  # "edit this message": keep what came before it, send the new text instead
    if before and not is_prompt:
        raise ForkError(
            "only a prompt can be forked before (to edit and resend it); fork at the message before it "
            "instead"
        )
    if before and not adapter.forks_before_prompt:
        raise ForkError(
            f"forking before a prompt is for {agents_said(lambda a: a.forks_before_prompt)} sessions; "
            f"fork this {agent} session at "
            "the message before it"
        )
    style = _style(adapter)
    if style is None:
        raise ForkError(
            f"forking {agent} sessions at a point is not supported yet; `threadloom resume {sid}` resumes it"
        )
    if prompt is not None and not style.takes_prompt:  # it was left out without a word
        takers = agents_said(lambda a: (s := _style(a)) is not None and s.takes_prompt)
        raise ForkError(
            f"{adapter.display_name if adapter else agent}'s command takes no first prompt: fork without "
            f"--prompt and type it in the session (a first prompt is sent for {takers} sessions)"
        )
    at = ForkAt(
        entry_id,
        uuid,
        sid,
        agent,
        title,
        project_path,
        bool(is_subagent),
        turn_row[1] if turn_row else None,
        before,
        prompt,
        new_session_id,
        now,
        dry_run,
    )
    return style.plan(conn, at)


@dataclass(frozen=True, slots=True)
class ForkAt:
    """A fork asked for: the chosen record, its session, and how to fork there."""

    entry_id: int
    uuid: str | None
    sid: str
    agent: str
    title: str | None
    project_path: str | None
    is_subagent: bool
    prompt_parent: str | None  # the chosen record's parent: where a fork before a prompt ends
    before: bool
    prompt: str | None
    new_session_id: str | None
    now: datetime | None
    dry_run: bool = False  # only said: a plan that writes a copy to import names it, writes nothing


def _claude_fork_plan(conn: sqlite3.Connection, at: ForkAt) -> ForkPlan:
    """Claude Code's chain cut (FORK.md §1.5 Recipe A): see `plan_fork`."""
    sid, agent, title, project_path, is_subagent = at.sid, at.agent, at.title, at.project_path, at.is_subagent
    before, prompt, uuid, now = at.before, at.prompt, at.uuid, at.now
    notes: list[str] = []
    if before:
        cut = at.prompt_parent
        if cut is None:
            return _fresh_start(conn, sid, prompt, at.agent)
        notes.append(
            "The fork ends just before the chosen prompt"
            + (", and yours is sent instead." if prompt else ": type the new one in the session.")
        )
    elif uuid is None:
        raise ForkError("this record has no uuid, so it is not part of the conversation Claude Code resumes")
    else:
        cut = uuid
    records = _records(conn, sid)
    chosen = _answered_only(select_chain(records, cut, keep_sidechains=bool(is_subagent)), notes)
    new_sid = checked_id(agent, at.new_session_id or str(uuidlib.uuid4()), "new session id")
    external_src = sid.split(":", 1)[0] if is_subagent else sid
    # the folder the session was started in, not where its shell was last: Claude Code finds a
    # session only from that folder (and its picker files the fork by its first line's cwd)
    cwd = next((obj["cwd"] for _, obj in chosen if isinstance(obj.get("cwd"), str)), project_path)
    branch = next(
        (obj["gitBranch"] for _, obj in reversed(chosen) if isinstance(obj.get("gitBranch"), str)), None
    )
    folder = _fork_folder(conn, sid, cwd, chosen[-1][0], notes)
    mapping: dict[str, str] = {}
    lines: list[bytes] = []
    previous: str | None = None
    kept = [(eid, obj) for eid, obj in chosen if obj.get("type") != "progress"]
    tool_calls = 0
    for i, (_, obj) in enumerate(kept):
        new_uuid = str(uuidlib.uuid4())
        mapping[obj["uuid"]] = new_uuid
        rec = {k: v for k, v in obj.items() if k not in DROP_KEYS}
        rec["uuid"] = new_uuid
        rec["parentUuid"] = previous
        if "logicalParentUuid" in rec:
            rec["logicalParentUuid"] = mapping.get(obj.get("logicalParentUuid") or "")
        rec["sessionId"] = new_sid
        rec["isSidechain"] = False
        rec.pop("agentId", None)
        rec["forkedFrom"] = {"sessionId": external_src, "messageUuid": obj["uuid"]}
        if i == len(kept) - 1:
            rec["timestamp"] = _stamp(
                now
            )  # the leaf is the newest record, so every resume heuristic picks it
        tool_calls += len(_tool_uses(obj))
        lines.append(_record_line(rec))
        previous = new_uuid
    fork_title = f"{title or 'session'}{FORK_TITLE_SUFFIX}"
    lines.append(orjson.dumps({"type": "custom-title", "customTitle": fork_title, "sessionId": new_sid}))
    cut_record = kept[-1][1]
    resume = _adapter(at.agent).resume_command(ResumeTarget(at.agent, new_sid, new_sid, cwd))
    command = in_folder(cwd, shell_command(resume.argv + _prompt_words(prompt)), notes)
    if prompt:
        notes.append(
            "Passing a first prompt together with --resume is not verified on every Claude Code version."
        )
    elif cut_record.get("type") == "user" and not _tool_results(cut_record) and not cut_record.get("isMeta"):
        notes.append(
            "The fork ends on the chosen prompt, before its answer: Claude Code shows it as an interrupted "
            "turn; send a message to go on (or fork before the prompt to send a different one)."
        )
    if is_subagent:
        notes.append("This is a subagent's conversation: the fork continues it as a new main session.")
    if any(obj.get("subtype") == "compact_boundary" for _, obj in kept):
        notes.append(
            "The fork starts at the last compaction before this point, as Claude Code itself would load it."
        )
    notes.append(worktree_note(branch))
    return ForkPlan(
        action="fork",
        agent=agent,
        command=command,
        source_session_id=sid,
        fork_point=cut_record.get("uuid"),
        new_session_id=new_sid,
        path=str(folder / f"{new_sid}.jsonl"),
        cwd=cwd,
        git_branch=branch,
        notes=notes,
        lines=lines,
        records=len(kept),
        tool_calls=tool_calls,
        branch=True,
        title=fork_title,
    )


def _fork_folder(conn: sqlite3.Connection, sid: str, cwd: object, entry_id: int, notes: list[str]) -> Path:
    """Claude Code's project folder for `cwd`; without a recorded folder, the source's own
    folder when it is one of Claude Code's, else nowhere (the fork would be found by no one)."""
    source = conn.execute(
        "SELECT f.path FROM entries e JOIN source_files f ON f.id = e.source_file_id WHERE e.id = ?",
        (entry_id,),
    ).fetchone()
    source_path = disk_name(source[0]) if source else None
    if isinstance(cwd, str) and cwd:
        return claude_project_dir(cwd, source_path, notes)
    parent = Path(source_path).parent if source_path else None
    if parent is not None and parent.parent == claude_projects_root():
        return parent
    raise ForkError(
        "the log does not say which folder the session ran in, so threadloom cannot tell where Claude "
        f"Code would look for a fork of it (in {claude_projects_root()}/<the folder, encoded>)"
    )


def _prompt_words(prompt: str | None) -> list[str]:
    """A first prompt as the command's last word; after `--` when it starts with "-", which the
    agent would read as an option."""
    if not prompt:
        return []
    return ["--", prompt] if prompt.startswith("-") else [prompt]


def _fresh_start(conn: sqlite3.Connection, sid: str, prompt: str | None, agent: str) -> ForkPlan:
    """Before the first prompt there is nothing to keep: a new session in the same folder."""
    notes = [
        "Nothing comes before the session's first prompt: this starts a new session"
        + (" with yours." if prompt else ".")
    ]
    cwd = _cwd_of(conn, sid)
    command = in_folder(cwd, shell_command(_adapter(agent).launch_command(_prompt_words(prompt)).argv), notes)
    return ForkPlan(action="fork", agent=agent, command=command, source_session_id=sid, cwd=cwd, notes=notes)


def write_fork(plan: ForkPlan) -> Path:
    """Create the fork file (never overwriting anything) with owner-only permissions. The agent's
    own folders (Claude Code's project folder, Codex's day folder) are made when missing."""
    if plan.path is None:
        raise ForkError("this plan writes no file")
    path = Path(plan.path)
    style = _style(ADAPTERS.get(plan.agent))
    if style is not None and style.makes_folder:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    elif not path.parent.is_dir():
        raise ForkError(f"the folder {path.parent} no longer exists; restore or recreate it first")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(b"\n".join(plan.lines) + b"\n")
    return path


def native_fork_plan(
    conn: sqlite3.Connection, entry_ref: str, prompt: str, *, before: bool = False
) -> ForkPlan:
    """FORK.md Recipe B: Claude Code forks itself in print mode, truncated at the point, with a new prompt."""
    plan = plan_fork(conn, entry_ref, prompt=prompt, before=before)
    adapter = _adapter(plan.agent)
    if not adapter.forks_natively:
        raise ForkError(
            f"only {agents_said(lambda a: a.forks_natively)} forks itself with a new prompt; "
            f"fork this {plan.agent} session without "
            "--native and type the prompt in the new session"
        )
    if plan.fork_point is None:  # before the first prompt: a new session, nothing to fork
        plan.action = "fork-prompt"
        return plan
    source = _session_row(conn, plan.source_session_id)
    cwd = source.project_path or plan.cwd  # where the source is found: the folder it was started in
    target = ResumeTarget(
        plan.agent,
        plan.source_session_id,
        plan.source_session_id,
        cwd,
        plan.git_branch,
        bool(source.is_subagent),
    )
    fork_words, open_words = adapter.native_fork_commands(target, plan.fork_point, _prompt_words(prompt))
    sid, point = target.session_id, plan.fork_point
    notes = ["Runs one model turn with your prompt (print mode), then opens the new session; needs jq."]
    fork = shell_command(fork_words)
    cmd = in_folder(cwd, f'NEW=$({fork} | jq -r .session_id) && {shell_command(open_words)} "$NEW"', notes)
    notes.append(worktree_note(plan.git_branch))
    native = ForkPlan(
        action="fork-prompt",
        agent=plan.agent,
        command=cmd,
        source_session_id=sid,
        fork_point=point,
        cwd=cwd,
        git_branch=plan.git_branch,
        notes=notes,
    )
    return _needs_restore(native, _restore_step(conn, adapter, target))


def resume_plan(conn: sqlite3.Connection, session_id: str, *, fork_at_end: bool = False) -> ForkPlan:
    """Resume the whole session, or fork it at its end (`--fork-session`)."""
    sid, agent, _, project_path, is_subagent, kind = _session_row(conn, session_id)
    row = conn.execute(
        "SELECT raw FROM entries WHERE session_id = ? AND role IS NOT NULL ORDER BY id DESC LIMIT 1", (sid,)
    ).fetchone()
    # project_path is the session's first cwd: the folder it was started in, which is where its
    # agent looks for it (a later line's cwd may be a folder its shell moved into)
    cwd, branch = project_path, None
    if row:
        try:
            last = orjson.loads(bytes(row[0]))
        except orjson.JSONDecodeError:
            last = None
        if isinstance(last, dict):
            cwd = cwd or last.get("cwd")
            branch = last.get("gitBranch") if isinstance(last.get("gitBranch"), str) else None
    external = conn.execute(
        "SELECT COALESCE(external_id, id) FROM agent_sessions WHERE id = ?", (sid,)
    ).fetchone()[0]
    adapter = _adapter(agent)
    style = _style(adapter)
    if fork_at_end and style is not None and style.at_end is not None:
        return style.at_end(conn, sid)
    if is_subagent and not adapter.resumes_subagents:
        raise ForkError(
            f"this {kind or 'subagent'} cannot be resumed on its own; " + _instead(conn, sid, style)
        )
    source = conn.execute(
        "SELECT f.path FROM agent_sessions s JOIN source_files f ON f.id = s.source_file_id WHERE s.id = ?",
        (sid,),
    ).fetchone()
    target = ResumeTarget(
        agent, sid, external, cwd, branch, bool(is_subagent), disk_name(source[0]) if source else None
    )
    words = adapter.resume_command(target, fork=fork_at_end)
    notes = list(words.notes)
    if words.folder_option:
        folder = usable_folder(cwd, notes, words.folder_option)
        command = shell_command(words.argv + ([words.folder_option, folder] if folder else []))
    else:
        command = in_folder(cwd, shell_command(words.argv), notes)
    notes.append(worktree_note(branch))
    plan = ForkPlan(
        action="fork-end" if fork_at_end else "resume",
        agent=agent,
        command=command,
        source_session_id=sid,
        cwd=cwd,
        git_branch=branch,
        notes=notes,
    )
    return _needs_restore(plan, _restore_step(conn, adapter, target))


def _adapter(agent: str) -> Adapter:
    """The adapter whose capabilities say what can be done with this agent's sessions."""
    adapter = ADAPTERS.get(agent)
    if adapter is None:
        raise ForkError(f"threadloom has no resume command for {agent} sessions")
    return adapter


def _style(adapter: Adapter | None) -> ForkStyle | None:
    """The machinery that forks the sessions of this adapter's agent (None: it cannot be forked)."""
    return STYLES.get(adapter.fork_style) if adapter is not None and adapter.fork_style else None


def _restore_step(conn: sqlite3.Connection, adapter: Adapter, target: ResumeTarget) -> RestoreStep | None:
    """What must be written back before the agent's command finds `target` (None: nothing)."""
    style = _style(adapter)
    return style.restore(conn, target) if style is not None and style.restore is not None else None


def _instead(conn: sqlite3.Connection, sid: str, style: ForkStyle | None) -> str:
    """What does resume a child session: a fork at one of its points where its agent can start
    there, else resuming the session it belongs to (its agent resumes whole sessions only)."""
    if style is not None and style.at_a_point:
        return "fork it at a point instead (threadloom fork)"
    owner = sid
    for _ in range(64):  # up to the main session (a subagent of a subagent, …)
        row = conn.execute(
            "SELECT parent_session_id, is_subagent FROM agent_sessions WHERE id = ?", (owner,)
        ).fetchone()
        above = (row[0] or owner.split(":", 1)[0]) if row and row[1] else owner
        if above == owner:
            break
        owner = above
    return f"its agent resumes whole sessions only: resume the one it belongs to (threadloom resume {owner})"


def _whole_session_plan(conn: sqlite3.Connection, at: ForkAt, *, copy: bool) -> ForkPlan:
    """The closest an agent that cannot start at a point comes: a copy of the whole session
    (`copy`), or the session resumed."""
    plan = resume_plan(conn, at.sid, fork_at_end=copy)
    plan.action = "fork"
    plan.notes.insert(
        0,
        f"{at.agent} cannot be started at a chosen point from outside; this is the closest command: "
        + (
            "it copies the whole session, then step back inside it."
            if copy
            else "it resumes the whole session."
        ),
    )
    return plan


def _aider_fork_plan(conn: sqlite3.Connection, sid: str, entry_id: int, agent: str) -> ForkPlan:
    """Aider restores a whole history file: write a copy of this session cut after the chosen turn."""
    turn = conn.execute(
        "SELECT t.last_entry_uuid FROM entries e JOIN agent_turns t ON t.id = e.turn_id AND t.session_id = e.session_id WHERE e.id = ?",
        (entry_id,),
    ).fetchone()
    cut = None
    if turn and turn[0]:
        row = conn.execute(
            "SELECT id FROM entries WHERE uuid = ? AND session_id = ?", (turn[0], sid)
        ).fetchone()
        cut = row[0] if row else None
    rows = conn.execute(
        "SELECT id, raw, newline FROM entries WHERE session_id = ? ORDER BY source_file_id, byte_offset",
        (sid,),
    ).fetchall()
    kept: list[bytes] = []
    for eid, raw, newline in rows:
        kept.append(bytes(raw) + (b"\n" if newline else b""))
        if eid == (cut or entry_id):
            break
    notes: list[str] = []
    cwd = usable_folder(_cwd_of(conn, sid), notes)
    if cwd is None:  # the copy is written beside the history: only into a folder known for sure
        raise ForkError(f"cannot fork this {_adapter(agent).display_name} history: {notes[0]}")
    name = f".{_program(agent)}.fork-{uuidlib.uuid4().hex[:8]}.chat.history.md"
    command = in_folder(cwd, shell_command(_adapter(agent).fork_file_command(name).argv), [])
    notes += [
        "Aider restores the whole history copy (summarised when long); tool runs and git state are not rewound.",
        WORKTREE_NOTE,
    ]
    return ForkPlan(
        action="fork",
        agent=agent,
        command=command,
        source_session_id=sid,
        path=str(Path(cwd) / name),
        cwd=cwd,
        lines=[b"".join(kept).rstrip(b"\n")],
        notes=notes,
    )


def _source_of(conn: sqlite3.Connection, sid: str) -> str:
    row = conn.execute("SELECT source FROM agent_sessions WHERE id = ?", (sid,)).fetchone()
    if row is None:
        raise ForkError(f"no session {sid!r}")
    return str(row[0])


def _cwd_of(conn: sqlite3.Connection, sid: str) -> str | None:
    row = conn.execute("SELECT project_path FROM agent_sessions WHERE id = ?", (sid,)).fetchone()
    return row[0] if row else None


CODEX_TURN_OPENERS = frozenset({"task_started", "turn_started", "user_message"})


def _codex_kind(raw: bytes) -> tuple[str | None, str | None, dict[str, Any]]:
    """(line type, payload type, the object) of a rollout line."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None, None, {}
    if not isinstance(obj, dict):
        return None, None, {}
    payload = obj.get("payload")
    ptype = payload.get("type") if isinstance(payload, dict) else None
    return obj.get("type"), ptype if isinstance(ptype, str) else None, obj


def _uuid7(now: datetime) -> str:
    """A UUID v7 (milliseconds first), the kind of id Codex gives new threads."""
    ms = int(now.timestamp() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuidlib.UUID(int=value))


def _codex_fork_plan(
    conn: sqlite3.Connection,
    sid: str,
    entry_id: int,
    *,
    before: bool = False,
    prompt: str | None = None,
    new_session_id: str | None = None,
    now: datetime | None = None,
) -> ForkPlan:
    """A legacy rollout is cut after the chosen turn (before it, with `before`) and written as a new
    thread with a fresh first `session_meta` (FORK.md §2.3 recipe C), so `codex resume NEW` starts
    there. A paginated rollout refers to segments in other files and cannot be cut: `codex fork`
    copies the whole thread, and the note says how to step back in it."""
    agent = _source_of(conn, sid)
    adapter = _adapter(agent)
    external = adapter.checked_id(
        conn.execute("SELECT COALESCE(external_id, id) FROM agent_sessions WHERE id = ?", (sid,)).fetchone()[
            0
        ]
    )
    cwd = _cwd_of(conn, sid)
    found = conn.execute(
        "SELECT id, uuid, turn_id, entry_type, raw FROM entries WHERE source_file_id = "
        "(SELECT source_file_id FROM entries WHERE id = ?) ORDER BY byte_offset",
        (entry_id,),
    ).fetchall()
    places = {eid: (uuid, turn_id, entry_type) for eid, uuid, turn_id, entry_type, _ in found}
    rows = [
        _RolloutLine(*places[eid], raw)
        for eid, raw in whole_lines((eid, raw, entry_type) for eid, _, _, entry_type, raw in found)
    ]
    turn = conn.execute("SELECT turn_id FROM entries WHERE id = ?", (entry_id,)).fetchone()[0]
    first_type, _, first = _codex_kind(bytes(rows[0].raw)) if rows else (None, None, {})
    meta = first.get("payload") if first_type == "session_meta" else None
    why = None
    if not isinstance(meta, dict):
        why = "this rollout has no session_meta envelope on its first line (an old format)"
    elif (
        meta.get("history_mode") not in (None, "legacy")
        or meta.get("segment_id")
        or "ordinal" in first
        or any(r.entry_type == "rollout_reference" for r in rows)
    ):
        why = "this thread uses Codex's paginated history, whose segments live in other files"
    prompts = [i for i, r in enumerate(rows) if r.uuid is not None and r.uuid == r.turn_id]  # a turn's first
    mine = next((i for i in prompts if rows[i].uuid == turn), None)
    if why is None and mine is None:
        why = "the chosen record is not part of a turn of this rollout"
    if why is not None:
        return _codex_whole_fork(conn, sid, external, entry_id, why)
    assert isinstance(meta, dict) and mine is not None

    def turn_start(index: int) -> int:
        while index > 0:
            kind, ptype, _ = _codex_kind(bytes(rows[index - 1].raw))
            if kind in ("turn_context", "world_state") or (
                kind == "event_msg" and ptype in CODEX_TURN_OPENERS
            ):
                index -= 1
            else:
                break
        return index

    notes: list[str] = []
    if before:
        if mine == prompts[0]:
            notes.append(
                "Nothing comes before the thread's first prompt: this starts a new session"
                + (" with yours." if prompt else ".")
            )
            argv = adapter.launch_command(_prompt_words(prompt)).argv
            return ForkPlan(
                action="fork",
                agent=agent,
                command=in_folder(cwd, shell_command(argv), notes),
                source_session_id=sid,
                cwd=cwd,
                notes=notes,
            )
        cut = turn_start(mine)
        notes.append(
            "The fork ends just before the chosen prompt"
            + (", and yours is sent instead." if prompt else ": type the new one in the session.")
        )
    else:
        later = [i for i in prompts if i > mine]
        cut = turn_start(later[0]) if later else len(rows)
        notes.append("Codex forks at the end of a turn: the fork keeps the whole chosen turn.")
    moment = now or datetime.now(UTC)
    new_id = adapter.checked_id(new_session_id or _uuid7(moment), "new session id")
    stamp = _stamp(moment)
    payload = {**meta, "id": new_id, "timestamp": stamp, "forked_from_id": external}
    if "session_id" in payload:
        payload["session_id"] = new_id
    lines = [orjson.dumps({**first, "timestamp": stamp, "payload": payload})] + [
        bytes(r.raw) for r in rows[:cut]
    ]
    local = moment.astimezone()
    path = _style_root("rollout-copy").joinpath(
        f"{local:%Y}", f"{local:%m}", f"{local:%d}", f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{new_id}.jsonl"
    )
    resume = adapter.resume_command(ResumeTarget(agent, new_id, new_id, cwd))
    folder = usable_folder(cwd, notes, resume.folder_option) if resume.folder_option else None
    words = resume.argv + ([resume.folder_option, folder] if resume.folder_option and folder else [])
    words += _prompt_words(prompt)
    notes.append(WORKTREE_NOTE)
    calls = sum(
        1
        for r in rows[:cut]
        if r.entry_type == "response_item"
        and _codex_kind(bytes(r.raw))[1] in ("function_call", "custom_tool_call", "local_shell_call")
    )
    return ForkPlan(
        action="fork",
        agent=agent,
        command=shell_command(words),
        source_session_id=sid,
        fork_point=rows[cut - 1].uuid if cut else None,
        new_session_id=new_id,
        path=str(path),
        cwd=cwd,
        notes=notes,
        lines=lines,
        records=cut,
        tool_calls=calls,
    )


def _codex_whole_fork(conn: sqlite3.Connection, sid: str, external: str, entry_id: int, why: str) -> ForkPlan:
    """`codex fork SRC` copies the whole thread; say how to step back to the chosen turn."""
    cwd = _cwd_of(conn, sid)
    prompt = conn.execute(
        "SELECT p.content FROM entries e JOIN entries p ON p.uuid = e.turn_id AND p.session_id = e.session_id "
        "WHERE e.id = ?",
        (entry_id,),
    ).fetchone()
    where = f"the prompt after “{one_line(prompt[0], 60)}”" if prompt and prompt[0] else "the chosen turn"
    notes = [
        f"Codex cannot be started at a chosen point from outside here ({why}): this copies the whole "
        f"session. In the new session press Esc Esc on the empty composer and step back to {where} to cut there."
    ]
    agent = _source_of(conn, sid)
    target = ResumeTarget(agent, sid, external, cwd)
    command = in_folder(cwd, shell_command(_adapter(agent).resume_command(target, fork=True).argv), notes)
    notes.append(WORKTREE_NOTE)
    plan = ForkPlan(action="fork", agent=agent, command=command, source_session_id=sid, cwd=cwd, notes=notes)
    return _needs_restore(plan, codex_restore_step(conn, sid, external, agent))


def _gemini_messages(conn: sqlite3.Connection, sid: str, cut_entry: int | None) -> list[dict[str, Any]]:
    """The branch's conversation messages (the types its adapter's `message_types` names) up to the
    cut, with later lines of a message merged in. A JSONL chat's records are its messages; a JSON-era
    chat is stored line by line, so its messages are read from the document its lines make."""
    from ..adapters.shared import loads

    kinds = _adapter(_source_of(conn, sid)).message_types
    found = conn.execute(
        "SELECT id, uuid, parent_uuid, entry_type, raw, source_file_id FROM entries WHERE session_id = ? "
        "AND dup_of IS NULL ORDER BY id",
        (sid,),
    ).fetchall()
    links = {eid: (uuid, parent) for eid, uuid, parent, _, _, _ in found}
    files = {eid: file_id for eid, _, _, _, _, file_id in found}
    rows = [
        _GeminiRecord(eid, *links[eid], raw)
        for eid, raw in whole_lines((eid, raw, entry_type) for eid, _, _, entry_type, raw, _ in found)
    ]
    by_uuid = {r.uuid: r for r in rows if r.uuid}
    cut = next((r for r in rows if r.id == cut_entry), None) if cut_entry is not None else None
    if cut is None:
        cut = next((r for r in reversed(rows) if r.uuid), None)
    chain_ids: set[int] = set()
    chain: list[str] = []  # the branch's uuids from the cut back to its first message
    node = cut.uuid if cut else None
    while node and node in by_uuid and by_uuid[node].id not in chain_ids:
        chain_ids.add(by_uuid[node].id)
        chain.append(node)
        node = by_uuid[node].parent_uuid
    documents: dict[int, dict[str, Any]] = {}  # a JSON-era chat's messages by id, by file

    def document_message(eid: int, uuid: str | None) -> Any:
        file_id = files[eid]
        if file_id not in documents:
            from ..read.archive import document_messages

            documents[file_id] = document_messages(conn, file_id)
        return documents[file_id].get((uuid or "").removeprefix(f"{sid}:"))

    merged: dict[str, dict[str, Any]] = {}
    for eid, uuid, _, raw in rows:
        if eid not in chain_ids:
            continue
        obj, _ = loads(bytes(raw))  # leniently: a lone surrogate or invalid UTF-8 costs no message
        if not (isinstance(obj, dict) and "type" in obj):
            obj = document_message(eid, uuid)  # the line closing a JSON-era message
        if (
            isinstance(obj, dict)
            and isinstance(obj.get("id"), str)
            and isinstance(obj.get("type"), str)
            and obj.get("type") in kinds
        ):
            merged[obj["id"]] = {**merged.get(obj["id"], {}), **obj}
    # in the branch's order (a message a rewrite of its chat changed is a newer record than the ones
    # after it that stayed as they were)
    place = {uuid.removeprefix(f"{sid}:"): i for i, uuid in enumerate(reversed(chain))}
    ordered = sorted(merged.values(), key=lambda m: place.get(m["id"], len(place)))
    return [m for m in ordered if m.get("content")]


def _gemini_fork_plan(
    conn: sqlite3.Connection,
    sid: str,
    entry_id: int | None,
    now: datetime | None = None,
    *,
    dry_run: bool = False,
) -> ForkPlan:
    """Gemini imports a session file as a new session (`--session-file`): write one cut at the point
    (a temporary file, made when the plan is; a `dry_run` names one and writes nothing)."""
    import tempfile

    messages = _gemini_messages(conn, sid, entry_id)
    if not messages:
        raise ForkError("no user or Gemini messages to fork on this branch")
    stamp = (now or datetime.now(UTC)).isoformat().replace("+00:00", "Z")
    doc = {
        "sessionId": "fork",
        "projectHash": "fork",
        "startTime": stamp,
        "lastUpdated": stamp,
        "messages": messages,
    }
    data = _record_line(doc)  # before the file: a message nested past orjson's depth is no traceback
    tag = re.sub(r"[^A-Za-z0-9_-]", "", sid)[:8]  # the name holds no "/" or ".." from the log
    if dry_run:  # the name the real fork's file gets is drawn when it is made
        path = os.path.join(tempfile.gettempdir(), f"fork-{tag}-{DRY_RUN_NAME}.json")
        wrote = f"Would write {len(messages)} messages to a new file {path}"
    else:
        fd, path = tempfile.mkstemp(prefix=f"fork-{tag}-", suffix=".json")  # created 0600
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        wrote = f"Wrote {len(messages)} messages to {path}"
    cwd = _cwd_of(conn, sid)
    notes = [
        f"{wrote}; Gemini imports it as a new session (v0.42+).",
        "Info and error messages are not imported by Gemini.",
    ]
    agent = _source_of(conn, sid)
    command = in_folder(cwd, shell_command(_adapter(agent).fork_file_command(path).argv), notes)
    notes.append(WORKTREE_NOTE)
    return ForkPlan(
        action="fork",
        agent=agent,
        command=command,
        source_session_id=sid,
        fork_point=messages[-1].get("id"),
        path=path,
        cwd=cwd,
        notes=notes,
    )


# ---------------------------------------------------------------------- forking, by the adapter's fork_style


@dataclass(frozen=True, slots=True)
class ForkStyle:
    """How threadloom forks the sessions of the agents that declare this `fork_style`, and where
    their transcripts must be for a command to find them. It lives here, not with the adapter,
    because it reads the store."""

    plan: Callable[[sqlite3.Connection, ForkAt], ForkPlan]  # the fork at a chosen record
    exact: bool = False  # a fork can end at any message (not only at the end of a turn)
    makes_folder: bool = False  # the fork is written into the agent's own folders, made when missing
    # the fork at the end of a session is written like any other (the agent has no fork of its own)
    at_end: Callable[[sqlite3.Connection, str], ForkPlan] | None = None
    # what must be written back before the agent's resume command finds the session
    restore: Callable[[sqlite3.Connection, ResumeTarget], RestoreStep | None] | None = None
    # the command it prints can send a first prompt (`--prompt`); other agents are given none
    takes_prompt: bool = False
    # the agent starts at the chosen point (else the whole session is copied or resumed)
    at_a_point: bool = True


STYLES: dict[str, ForkStyle] = {
    "uuid-chain": ForkStyle(
        _claude_fork_plan,
        exact=True,
        makes_folder=True,
        takes_prompt=True,
        restore=lambda conn, t: claude_restore_step(conn, t.session_id, t.cwd, t.agent),
    ),
    "rollout-copy": ForkStyle(
        lambda conn, at: _codex_fork_plan(
            conn,
            at.sid,
            at.entry_id,
            before=at.before,
            prompt=at.prompt,
            new_session_id=at.new_session_id,
            now=at.now,
        ),
        makes_folder=True,
        restore=lambda conn, t: codex_restore_step(conn, t.session_id, t.external_id, t.agent),
        takes_prompt=True,
    ),
    "session-file": ForkStyle(
        lambda conn, at: _gemini_fork_plan(conn, at.sid, at.entry_id, now=at.now, dry_run=at.dry_run),
        at_end=lambda conn, sid: _gemini_fork_plan(conn, sid, None),
        restore=in_place_restore_step,
    ),
    "history-copy": ForkStyle(lambda conn, at: _aider_fork_plan(conn, at.sid, at.entry_id, at.agent)),
    # agents that cannot be started at a point: the whole session, copied or resumed
    "whole-session-copy": ForkStyle(
        lambda conn, at: _whole_session_plan(conn, at, copy=True), at_a_point=False
    ),
    "whole-session-resume": ForkStyle(
        lambda conn, at: _whole_session_plan(conn, at, copy=False),
        restore=in_place_restore_step,
        at_a_point=False,
    ),
}
