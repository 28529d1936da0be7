"""Resume or fork a conversation from any turn, with the exact shell command to run.

For Claude Code the fork is written by threadloom (FORK.md §1.5 Recipe A): the chosen point's
ancestor chain (so abandoned branches stay out), snapped to a turn boundary so every tool_use keeps
its tool_result, parallel tool results kept, new uuids and a new session id on every line,
`forkedFrom` on each, the chosen point last and newest, a "(fork)" title; created beside the source
with O_EXCL and mode 0600. The source is never touched.
"""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import uuid as uuidlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson

from core.text import one_line, readable

TRANSCRIPT_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
DROP_KEYS = ("teamName", "agentName", "slug", "sourceToolAssistantUUID")
WORKTREE_NOTE = "The working tree is not rolled back: files stay as they are now (git stash or a worktree helps)."


class ForkError(RuntimeError):
    """A fork that cannot be made as asked; the message says why and what can be done."""


# ---------------------------------------------------------------------- commands
# Every value of a printed command that comes from a log (ids, folders) is untrusted: logs arrive
# from backups and from other people. Ids must have the shape their agent writes; every word is
# quoted; a folder goes into `cd` only when it is an absolute path without control characters.

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# gemini-cli's own rule for `--session-id` (its generated ids are UUIDs), minus a leading "-" that reads as an option
GEMINI_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
# the other agents' ids (OpenCode `ses_…`, Cline's ms-epoch or UUID, cursor-agent's UUID): one word, never an option
PLAIN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._:-]*")
ID_SHAPES: dict[str, tuple[re.Pattern[str], str]] = {
    "claude-code": (UUID, "a UUID"),
    "codex": (UUID, "a UUID"),
    "gemini": (GEMINI_ID, "made of letters, digits, '-' and '_'"),
}
# C0/C1 controls but tab and newline (which quoting keeps literal), and bidi overrides: printed, they
# would drive the terminal or hide part of the command
UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
WINDOWS_ABSOLUTE = re.compile(r"[A-Za-z]:[\\/]|\\\\")


def checked_id(agent: str, value: object, what: str = "session id") -> str:
    """`value` if it has the shape `agent` gives its ids; else ForkError, so that no command carries it."""
    pattern, shape = ID_SHAPES.get(agent, (PLAIN_ID, "made of letters, digits and . _ : -"))
    if isinstance(value, str) and pattern.fullmatch(value):
        return value
    raise ForkError(f"the {what} {repr(value)[:80]} in this {agent} log is not {shape}, as {agent} writes it; "
                    "threadloom puts no such value in a command (the log may be damaged or crafted)")


def shell_command(argv: list[str]) -> str:
    """One command line from its words, each quoted: no value taken from a log can become shell syntax."""
    return shlex.join(argv)


def usable_folder(cwd: object, notes: list[str]) -> str | None:
    """The session's folder if a command may go there; otherwise None. Either way `notes` says what
    the user must know: a folder not recorded, not usable, or missing on this machine."""
    if not isinstance(cwd, str) or not cwd:
        notes.append("The log does not say which folder the session ran in: run the command from that folder.")
        return None
    if UNPRINTABLE.search(cwd) or not (cwd.startswith("/") or WINDOWS_ABSOLUTE.match(cwd)):
        why = "has control characters" if UNPRINTABLE.search(cwd) else "is not an absolute path"
        notes.append(f"The session's folder in the log, {repr(cwd)[:120]}, {why}, so the command has no cd: "
                     "run it from the folder the session was started in.")
        return None
    if not os.path.isdir(cwd):
        notes.append(f"The folder {cwd} does not exist on this machine, so the cd will fail: restore or recreate it "
                     "first.")
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
    entry_id: int | None = None  # the prompt's record: `plan_fork(conn, str(entry_id))` forks at this turn


@dataclass
class ForkPlan:
    action: str  # fork | fork-prompt | resume | fork-end
    agent: str
    command: str
    source_session_id: str
    fork_point: str | None = None
    new_session_id: str | None = None
    path: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    notes: list[str] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        return {
            "action": self.action, "agent": self.agent, "command": self.command,
            "new_session_id": self.new_session_id, "path": self.path,
            "source_session_id": self.source_session_id, "fork_point": self.fork_point, "cwd": self.cwd,
            "git_branch": self.git_branch, "notes": self.notes,
        }


def fork_points(conn: sqlite3.Connection, session_id: str, around_entry: int | None = None) -> list[ForkPoint]:
    """The turns of the branch through `around_entry` (or of the latest branch), oldest first."""
    turns = {
        r[0]: r
        for r in conn.execute(
            "SELECT t.id, t.last_entry_uuid, t.sequence, t.timestamp, t.model, t.tool_call_count, t.parent_turn_id, "
            # `+session_id`: look the records up by uuid (ix_entries_uuid), not by scanning the session
            "(SELECT content FROM entries WHERE uuid = t.id AND +session_id = t.session_id LIMIT 1), "
            "(SELECT content FROM entries WHERE uuid = t.response_message_id AND +session_id = t.session_id LIMIT 1), "
            "(SELECT id FROM entries WHERE uuid = t.id AND +session_id = t.session_id LIMIT 1) "
            "FROM agent_turns t WHERE t.session_id = ?",
            (session_id,),
        )
    }
    if not turns:
        return []
    start = None
    if around_entry is not None:
        row = conn.execute("SELECT turn_id FROM entries WHERE id = ?", (around_entry,)).fetchone()
        start = row[0] if row and row[0] in turns else None
    if start is None:
        start = max(turns.values(), key=lambda r: (r[3] or 0, r[2]))[0]
    # the branch: ancestors of `start`, then its latest descendants
    chain = []
    seen = set()
    node = start
    while node in turns and node not in seen:
        seen.add(node)
        chain.append(node)
        node = turns[node][6]
    chain.reverse()
    children: dict[str, list] = {}
    for r in turns.values():
        children.setdefault(r[6], []).append(r)
    node = start
    while children.get(node):
        nxt = max(children[node], key=lambda r: (r[3] or 0, r[2]))[0]
        if nxt in seen:
            break
        seen.add(nxt)
        chain.append(nxt)
        node = nxt
    out = []
    for tid in chain:
        r = turns[tid]
        out.append(ForkPoint(tid, r[1], r[2], one_line(readable(r[7]), 120), one_line(r[8], 120), r[3], r[4], r[5], r[6], r[9]))
    return out


def _session_row(conn: sqlite3.Connection, session_id: str) -> tuple:
    row = conn.execute(
        "SELECT id, source, title, project_path, is_subagent, kind FROM agent_sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise ForkError(f"no session {session_id!r}")
    return row


def resolve_entry(conn: sqlite3.Connection, ref: str) -> tuple[int, str, str | None]:
    """(entry id, session id, uuid) from an entry id or a record uuid."""
    row = None
    if ref.isdigit():
        row = conn.execute("SELECT id, session_id, uuid FROM entries WHERE id = ?", (int(ref),)).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT id, session_id, uuid FROM entries WHERE uuid = ? AND dup_of IS NULL ORDER BY id LIMIT 1", (ref,)
        ).fetchone()
    if row is None or row[1] is None:
        raise ForkError(f"no record {ref!r}: give an entry id or a message uuid (see `threadloom show --json`)")
    return row


def _records(conn: sqlite3.Connection, session_id: str) -> list[tuple[int, dict]]:
    out = []
    for eid, raw in conn.execute(
        "SELECT id, raw FROM entries WHERE session_id = ? AND dup_of IS NULL ORDER BY id", (session_id,)
    ):
        try:
            obj = orjson.loads(bytes(raw).lstrip(b"\x00"))
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append((eid, obj))
    return out


def _tool_uses(obj: dict) -> list[str]:
    content = (obj.get("message") or {}).get("content") if isinstance(obj.get("message"), dict) else None
    if obj.get("type") != "assistant" or not isinstance(content, list):
        return []
    return [b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id")]


def _tool_results(obj: dict) -> list[str]:
    content = (obj.get("message") or {}).get("content") if isinstance(obj.get("message"), dict) else None
    if obj.get("type") != "user" or not isinstance(content, list):
        return []
    return [b.get("tool_use_id") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def select_chain(records: list[tuple[int, dict]], cut_uuid: str, *, keep_sidechains: bool) -> list[tuple[int, dict]]:
    """The ancestor chain of `cut_uuid` plus parallel tool results, in file order, tool-complete."""
    by_uuid: dict[str, tuple[int, dict]] = {}
    for eid, obj in records:
        if obj.get("type") in TRANSCRIPT_TYPES and isinstance(obj.get("uuid"), str):
            if obj.get("isSidechain") and not keep_sidechains:
                continue
            by_uuid.setdefault(obj["uuid"], (eid, obj))
    if cut_uuid not in by_uuid:
        raise ForkError(f"record {cut_uuid} is not a conversation record of this session")
    chain: dict[str, tuple[int, dict]] = {}
    node: str | None = cut_uuid
    while node and node in by_uuid and node not in chain:  # stops at null: a compaction boundary or the root
        chain[node] = by_uuid[node]
        node = by_uuid[node][1].get("parentUuid")
    cut_eid = by_uuid[cut_uuid][0]
    used = {tid for _, obj in chain.values() for tid in _tool_uses(obj)}
    answered = {tid for _, obj in chain.values() for tid in _tool_results(obj)}
    for uid, (eid, obj) in by_uuid.items():
        if uid in chain or eid > cut_eid:
            continue
        results = [t for t in _tool_results(obj) if t in used and t not in answered]
        parent = obj.get("parentUuid") or obj.get("sourceToolAssistantUUID")
        if results and parent in chain:
            chain[uid] = (eid, obj)
            answered.update(results)
    ordered = sorted(chain.values(), key=lambda item: item[0])
    # Never end on a tool_use without its result: drop trailing unanswered calls.
    while ordered:
        missing = [t for t in _tool_uses(ordered[-1][1]) if t not in answered]
        if not missing:
            break
        ordered.pop()
    if not ordered:
        raise ForkError("nothing would be left to fork at this point")
    return ordered


def _project_dir(source_path: str, project_key: str | None) -> Path:
    path = Path(source_path)
    if project_key and project_key in path.parts:
        i = len(path.parts) - 1 - path.parts[::-1].index(project_key)
        return Path(*path.parts[: i + 1])
    return path.parent


def plan_fork(
    conn: sqlite3.Connection, entry_ref: str, *, prompt: str | None = None, new_session_id: str | None = None,
    now: datetime | None = None,
) -> ForkPlan:
    """Work out (without writing) the fork transcript and command for a point in a session."""
    entry_id, session_id, _ = resolve_entry(conn, entry_ref)
    sid, agent, title, project_path, is_subagent, kind = _session_row(conn, session_id)
    if agent == "codex":
        return _codex_fork_plan(conn, sid, entry_id)
    if agent == "gemini":
        return _gemini_fork_plan(conn, sid, entry_id, now=now)
    if agent == "aider":
        return _aider_fork_plan(conn, sid, entry_id)
    if agent in ("opencode", "opencode-db", "cursor-agent", "cline"):
        plan = resume_plan(conn, sid, fork_at_end=agent.startswith("opencode"))
        plan.action = "fork"
        plan.notes.insert(0, f"{agent} cannot be started at a chosen point from outside; this is the closest command: "
                          + ("it copies the whole session, then step back inside it." if agent.startswith("opencode")
                             else "it resumes the whole session."))
        return plan
    if agent != "claude-code":
        raise ForkError(f"forking {agent} sessions at a point is not supported yet; `threadloom resume {sid}` resumes it")
    turn_row = conn.execute(
        "SELECT t.id, t.last_entry_uuid, t.parent_turn_id, e.uuid = t.id FROM entries e "
        "JOIN agent_turns t ON t.id = e.turn_id WHERE e.id = ?",
        (entry_id,),
    ).fetchone()
    if turn_row is None:
        raise ForkError("this record is not part of a conversation turn (nothing to fork from)")
    turn_id, last_uuid, parent_turn, is_prompt = turn_row
    notes = []
    if prompt is not None and is_prompt:
        # "edit this message": keep what came before it, send the new text instead
        if parent_turn is None:
            raise ForkError("this is the first prompt of the session; start a new session instead")
        last_uuid = conn.execute("SELECT last_entry_uuid FROM agent_turns WHERE id = ?", (parent_turn,)).fetchone()[0]
        notes.append("The chosen prompt is replaced by yours: the fork ends just before it.")
    records = _records(conn, sid)
    chosen = select_chain(records, last_uuid, keep_sidechains=bool(is_subagent))
    src_file = conn.execute(
        "SELECT f.path, f.project_key FROM entries e JOIN source_files f ON f.id = e.source_file_id WHERE e.id = ?",
        (chosen[-1][0],),
    ).fetchone()
    project_dir = _project_dir(src_file[0], src_file[1])
    new_sid = checked_id(agent, new_session_id or str(uuidlib.uuid4()), "new session id")
    external_src = sid.split(":", 1)[0] if is_subagent else sid
    # the folder the session was started in, not where its shell was last: Claude Code finds a
    # session only from that folder (and its picker files the fork by its first line's cwd)
    cwd = next((obj["cwd"] for _, obj in chosen if isinstance(obj.get("cwd"), str)), project_path)
    branch = next((obj["gitBranch"] for _, obj in reversed(chosen) if isinstance(obj.get("gitBranch"), str)), None)
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{(now or datetime.now(UTC)).microsecond // 1000:03d}Z"
    mapping: dict[str, str] = {}
    lines: list[bytes] = []
    previous: str | None = None
    kept = [(eid, obj) for eid, obj in chosen if obj.get("type") != "progress"]
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
            rec["timestamp"] = stamp  # the leaf is the newest record, so every resume heuristic picks it
        lines.append(orjson.dumps(rec))
        previous = new_uuid
    base_title = title or "session"
    lines.append(orjson.dumps({"type": "custom-title", "customTitle": f"{base_title} (fork)", "sessionId": new_sid}))
    cut = kept[-1][1]
    command = in_folder(cwd, shell_command(["claude", "--resume", new_sid] + ([prompt] if prompt else [])), notes)
    if prompt:
        notes.append("Passing a first prompt together with --resume is not verified on every Claude Code version.")
    if is_subagent:
        notes.append("This is a subagent's conversation: the fork continues it as a new main session.")
    if any(obj.get("subtype") == "compact_boundary" for _, obj in kept):
        notes.append("The fork starts at the last compaction before this point, as Claude Code itself would load it.")
    notes.append(WORKTREE_NOTE + (f" Recorded git branch then: {branch}." if branch else ""))
    return ForkPlan(
        action="fork", agent=agent, command=command, source_session_id=sid, fork_point=cut.get("uuid"),
        new_session_id=new_sid, path=str(project_dir / f"{new_sid}.jsonl"), cwd=cwd, git_branch=branch,
        notes=notes, lines=lines,
    )


def write_fork(plan: ForkPlan) -> Path:
    """Create the fork file (never overwriting anything) with owner-only permissions."""
    if plan.path is None:
        raise ForkError("this plan writes no file")
    path = Path(plan.path)
    if not path.parent.is_dir():
        raise ForkError(f"the source's folder {path.parent} no longer exists; restore it first (threadloom restore)")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(b"\n".join(plan.lines) + b"\n")
    return path


def native_fork_plan(conn: sqlite3.Connection, entry_ref: str, prompt: str) -> ForkPlan:
    """FORK.md Recipe B: Claude Code forks itself in print mode, truncated at the point, with a new prompt."""
    plan = plan_fork(conn, entry_ref)
    if plan.agent != "claude-code":
        raise ForkError(f"only Claude Code forks itself with a new prompt; fork this {plan.agent} session without "
                        "--native and type the prompt in the new session")
    if _session_row(conn, plan.source_session_id)[4]:
        raise ForkError("Claude Code cannot fork a subagent's conversation itself; fork it without --native "
                        "(threadloom writes the fork as a new main session)")
    sid = checked_id(plan.agent, plan.source_session_id)
    point = checked_id(plan.agent, plan.fork_point, "message uuid")
    notes = ["Runs one model turn with your prompt (print mode), then opens the new session; needs jq."]
    fork = shell_command(["claude", "-p", "--resume", sid, "--fork-session", f"--resume-session-at={point}",
                          "--output-format", "json", prompt])
    cmd = in_folder(plan.cwd, f'NEW=$({fork} | jq -r .session_id) && claude --resume "$NEW"', notes)
    notes.append(WORKTREE_NOTE + (f" Recorded git branch then: {plan.git_branch}." if plan.git_branch else ""))
    return ForkPlan(action="fork-prompt", agent=plan.agent, command=cmd, source_session_id=sid,
                    fork_point=point, cwd=plan.cwd, git_branch=plan.git_branch, notes=notes)


def resume_plan(conn: sqlite3.Connection, session_id: str, *, fork_at_end: bool = False) -> ForkPlan:
    """Resume the whole session, or fork it at its end (`--fork-session`)."""
    sid, agent, _, project_path, is_subagent, _ = _session_row(conn, session_id)
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
    external = conn.execute("SELECT COALESCE(external_id, id) FROM agent_sessions WHERE id = ?", (sid,)).fetchone()[0]
    notes: list[str] = []
    if agent == "codex":
        if fork_at_end:
            command = in_folder(cwd, shell_command(["codex", "fork", checked_id(agent, external)]), notes)
        else:
            folder = usable_folder(cwd, notes)
            command = shell_command(["codex", "resume", checked_id(agent, external)] + (["-C", folder] if folder else []))
    elif agent == "gemini":
        if fork_at_end:
            return _gemini_fork_plan(conn, sid, None)
        command = in_folder(cwd, shell_command(["gemini", "--resume", checked_id(agent, external)]), notes)
    elif is_subagent:
        raise ForkError("a subagent cannot be resumed on its own; fork it at a point instead (threadloom fork)")
    elif agent == "claude-code":
        argv = ["claude", "--resume", checked_id(agent, sid)] + (["--fork-session"] if fork_at_end else [])
        command = in_folder(cwd, shell_command(argv), notes)
    elif agent in ("opencode", "opencode-db"):
        argv = ["opencode", "-s", checked_id(agent, external)] + (["--fork"] if fork_at_end else [])
        command = in_folder(cwd, shell_command(argv), notes)
    elif agent == "cursor-agent":
        if fork_at_end:
            raise ForkError("cursor-agent has no fork; `threadloom resume` gives the command that resumes the chat")
        command = in_folder(cwd, shell_command(["agent", "--resume", checked_id(agent, external)]), notes)
    elif agent == "aider":
        if fork_at_end:
            raise ForkError("Aider has no sessions to fork; fork at a point writes a history copy instead")
        command = in_folder(cwd, shell_command(["aider", "--restore-chat-history"]), notes)
    elif agent == "cline" and not fork_at_end:
        command = in_folder(cwd, shell_command(["cline", "--id", checked_id(agent, external)]), notes)
    else:
        raise ForkError(_NO_COMMAND.get(agent, f"threadloom has no resume command for {agent} sessions"))
    notes.append(WORKTREE_NOTE + (f" Recorded git branch then: {branch}." if branch else ""))
    if agent == "cline":
        notes.insert(0, "`cline --id` resumes Cline CLI sessions; tasks of the VS Code extension resume from its History view.")
    return ForkPlan(action="fork-end" if fork_at_end else "resume", agent=agent, command=command,
                    source_session_id=sid, cwd=cwd, git_branch=branch, notes=notes)


_NO_COMMAND = {
    "cursor": "Cursor IDE chats can only be reopened from Cursor's own chat history; no command opens one",
    "roo-code": "Roo Code tasks resume from the extension's History view (open History, pick the task, Resume)",
    "kilo-code": "Kilo Code tasks resume from the extension's History view (open History, pick the task, Resume)",
    "amazon-q": "Amazon Q /save files are not resumable; `q chat` starts a new conversation",
    "amazon-q-db": "Amazon Q conversations resume with `q chat --resume` from the same folder",
}


def _aider_fork_plan(conn: sqlite3.Connection, sid: str, entry_id: int) -> ForkPlan:
    """Aider restores a whole history file: write a copy of this session cut after the chosen turn."""
    turn = conn.execute(
        "SELECT t.last_entry_uuid FROM entries e JOIN agent_turns t ON t.id = e.turn_id WHERE e.id = ?", (entry_id,)
    ).fetchone()
    cut = None
    if turn and turn[0]:
        row = conn.execute("SELECT id FROM entries WHERE uuid = ? AND session_id = ?", (turn[0], sid)).fetchone()
        cut = row[0] if row else None
    rows = conn.execute(
        "SELECT id, raw, newline FROM entries WHERE session_id = ? ORDER BY source_file_id, byte_offset", (sid,)
    ).fetchall()
    kept: list[bytes] = []
    for eid, raw, newline in rows:
        kept.append(bytes(raw) + (b"\n" if newline else b""))
        if eid == (cut or entry_id):
            break
    notes: list[str] = []
    cwd = usable_folder(_cwd_of(conn, sid), notes)
    if cwd is None:  # the copy is written beside the history: only into a folder known for sure
        raise ForkError(f"cannot fork this Aider history: {notes[0]}")
    name = f".aider.fork-{uuidlib.uuid4().hex[:8]}.chat.history.md"
    command = in_folder(cwd, shell_command(["aider", "--chat-history-file", name, "--restore-chat-history"]), [])
    notes += ["Aider restores the whole history copy (summarised when long); tool runs and git state are not rewound.",
              WORKTREE_NOTE]
    return ForkPlan(
        action="fork", agent="aider", command=command,
        source_session_id=sid, path=str(Path(cwd) / name), cwd=cwd, lines=[b"".join(kept).rstrip(b"\n")],
        notes=notes,
    )


def _cwd_of(conn: sqlite3.Connection, sid: str) -> str | None:
    row = conn.execute("SELECT project_path FROM agent_sessions WHERE id = ?", (sid,)).fetchone()
    return row[0] if row else None


def _codex_fork_plan(conn: sqlite3.Connection, sid: str, entry_id: int) -> ForkPlan:
    """Codex forks whole sessions only (`codex fork`); say how to step back to the chosen turn."""
    external = conn.execute("SELECT COALESCE(external_id, id) FROM agent_sessions WHERE id = ?", (sid,)).fetchone()[0]
    cwd = _cwd_of(conn, sid)
    prompt = conn.execute(
        "SELECT p.content FROM entries e JOIN entries p ON p.uuid = e.turn_id AND p.session_id = e.session_id "
        "WHERE e.id = ?",
        (entry_id,),
    ).fetchone()
    where = f"the prompt after “{one_line(prompt[0], 60)}”" if prompt and prompt[0] else "the chosen turn"
    notes = ["Codex cannot be started at a chosen point from outside: this copies the whole session. In the new "
             f"session press Esc Esc on the empty composer and step back to {where} to cut there."]
    command = in_folder(cwd, shell_command(["codex", "fork", checked_id("codex", external)]), notes)
    notes.append(WORKTREE_NOTE)
    return ForkPlan(action="fork", agent="codex", command=command, source_session_id=sid, cwd=cwd, notes=notes)


def _gemini_messages(conn: sqlite3.Connection, sid: str, cut_entry: int | None) -> list[dict]:
    """The branch's user/gemini messages up to the cut, with later lines of a message merged in."""
    rows = conn.execute(
        "SELECT id, uuid, parent_uuid, raw FROM entries WHERE session_id = ? AND dup_of IS NULL ORDER BY id", (sid,)
    ).fetchall()
    by_uuid = {r[1]: r for r in rows if r[1]}
    cut = next((r for r in rows if r[0] == cut_entry), None) if cut_entry is not None else None
    if cut is None:
        cut = next((r for r in reversed(rows) if r[1]), None)
    chain_ids: set[int] = set()
    node = cut[1] if cut else None
    while node and node in by_uuid and by_uuid[node][0] not in chain_ids:
        chain_ids.add(by_uuid[node][0])
        node = by_uuid[node][2]
    merged: dict[str, dict] = {}
    for eid, _, _, raw in rows:
        if eid not in chain_ids:
            continue
        try:
            obj = orjson.loads(bytes(raw))
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("id"), str) and obj.get("type") in ("user", "gemini"):
            merged[obj["id"]] = {**merged.get(obj["id"], {}), **obj}
    return [m for m in merged.values() if m.get("content")]


def _gemini_fork_plan(conn: sqlite3.Connection, sid: str, entry_id: int | None, now: datetime | None = None) -> ForkPlan:
    """Gemini imports a session file as a new session (`--session-file`): write one cut at the point."""
    import tempfile

    messages = _gemini_messages(conn, sid, entry_id)
    if not messages:
        raise ForkError("no user or Gemini messages to fork on this branch")
    stamp = (now or datetime.now(UTC)).isoformat().replace("+00:00", "Z")
    doc = {"sessionId": "fork", "projectHash": "fork", "startTime": stamp, "lastUpdated": stamp, "messages": messages}
    tag = re.sub(r"[^A-Za-z0-9_-]", "", sid)[:8]  # the name holds no "/" or ".." from the log
    fd, path = tempfile.mkstemp(prefix=f"gemini-fork-{tag}-", suffix=".json")  # created 0600
    with os.fdopen(fd, "wb") as f:
        f.write(orjson.dumps(doc))
    cwd = _cwd_of(conn, sid)
    notes = [f"Wrote {len(messages)} messages to {path}; Gemini imports it as a new session (v0.42+).",
             "Info and error messages are not imported by Gemini."]
    command = in_folder(cwd, shell_command(["gemini", "--session-file", path]), notes)
    notes.append(WORKTREE_NOTE)
    return ForkPlan(action="fork", agent="gemini", command=command, source_session_id=sid,
                    fork_point=messages[-1].get("id"), path=path, cwd=cwd, notes=notes)
