"""Read API over the ledger for the CLI and the TUI: plain dataclasses, summary columns only."""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson


@dataclass(slots=True)
class SessionSummary:
    id: str
    agent: str
    project: str | None
    project_path: str | None
    title: str | None
    started_at: int | None
    ended_at: int | None
    message_count: int
    is_subagent: bool
    parent_session_id: str | None
    model: str | None
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    kind: str = "main"
    agent_type: str | None = None
    task_description: str | None = None
    task_status: str | None = None
    tool_call_id: str | None = None
    is_warmup: bool = False
    turn_count: int = 0
    tool_call_count: int = 0
    branch_count: int = 0
    compaction_count: int = 0
    git_branch: str | None = None
    forked_from_session_id: str | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_creation_tokens + self.cache_read_tokens

    def as_dict(self) -> dict:
        return asdict(self)


_SESSION_SELECT = (
    "SELECT id, source, project, project_path, title, created_at, ended_at, message_count, is_subagent, "
    "parent_session_id, model, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, kind, "
    "agent_type, task_description, task_status, tool_call_id, is_warmup, turn_count, tool_call_count, "
    "branch_count, compaction_count, git_branch, forked_from_session_id FROM agent_sessions"
)


def _summary(row: tuple) -> SessionSummary:
    s = SessionSummary(*row)
    s.is_subagent = bool(s.is_subagent)
    s.is_warmup = bool(s.is_warmup)
    return s


def list_sessions(
    conn: sqlite3.Connection,
    *,
    project: str | None = None,
    agent: str | None = None,
    include_subagents: bool = True,
    include_empty: bool = False,
) -> list[SessionSummary]:
    """Sessions newest first; `project` matches the project name or path (substring)."""
    where, params = [], []
    if project:
        where.append("(project = ? OR project_path = ? OR project_path LIKE ?)")
        params += [project, project, f"%{project}%"]
    if agent:
        where.append("source = ?")
        params.append(agent)
    if not include_subagents:
        where.append("is_subagent = 0")
    if not include_empty:
        where.append("message_count > 0")
    sql = _SESSION_SELECT + (" WHERE " + " AND ".join(where) if where else "")
    sql += " ORDER BY COALESCE(ended_at, created_at, 0) DESC, id"
    return [_summary(r) for r in conn.execute(sql, params)]


def get_session(conn: sqlite3.Connection, session_id: str) -> SessionSummary | None:
    row = conn.execute(_SESSION_SELECT + " WHERE id = ?", (session_id,)).fetchone()
    return _summary(row) if row else None


class AmbiguousSession(LookupError):
    pass


def resolve_session(conn: sqlite3.Connection, ref: str) -> SessionSummary:
    """A session by full id, unique id prefix, the agent's own id, or a subagent's own id (or its
    prefix: what `threadloom sessions` lists for it); clear errors otherwise."""
    found = get_session(conn, ref)
    if found:
        return found
    escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = conn.execute(
        "SELECT id FROM agent_sessions WHERE id LIKE ? ESCAPE '\\' OR external_id = ? "
        "OR (is_subagent = 1 AND id LIKE ? ESCAPE '\\') ORDER BY is_subagent, id LIMIT 6",
        (escaped + "%", ref, "%:" + escaped + "%"),
    ).fetchall()
    mains = [r[0] for r in rows if ":" not in r[0]]
    candidates = mains if len(mains) == 1 else [r[0] for r in rows]
    if len(candidates) == 1:
        result = get_session(conn, candidates[0])
        if result is None:  # found through the id index but not in the table: only damage does that
            raise sqlite3.DatabaseError(
                f"database disk image is malformed: the session index names {candidates[0]!r}, "
                "the sessions table does not hold it"
            )
        return result
    if not candidates:
        raise LookupError(f"no session matches {ref!r}; `threadloom sessions` lists them")
    raise AmbiguousSession(f"{ref!r} matches several sessions: {', '.join(candidates[:5])}")


def children_of(
    conn: sqlite3.Connection, session_id: str, *, include_warmup: bool = False
) -> list[SessionSummary]:
    sql = _SESSION_SELECT + " WHERE parent_session_id = ?" + ("" if include_warmup else " AND is_warmup = 0")
    return [_summary(r) for r in conn.execute(sql + " ORDER BY created_at, id", (session_id,))]


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    params_json: str | None
    result_json: str | None
    status: str | None
    child_session_id: str | None
    started_at: int | None
    completed_at: int | None
    result_entry_id: int | None = None  # the record the result came in
    entry_id: int | None = None  # the record the call was made in

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.completed_at is None:
            return None
        return max(0, self.completed_at - self.started_at)


@dataclass(slots=True)
class Message:
    entry_id: int
    seq: int
    uuid: str | None
    parent_uuid: str | None
    entry_type: str | None
    subtype: str | None
    role: str | None
    content: str | None
    thinking: str | None
    model: str | None
    timestamp: int | None
    is_meta: bool
    is_sidechain: bool
    turn_id: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)


def messages(conn: sqlite3.Connection, session_id: str, *, offset: int = 0, limit: int = -1) -> list[Message]:
    """A session's messages in order, with the tool calls each one made."""
    rows = conn.execute(
        "SELECT id, seq, uuid, parent_uuid, entry_type, subtype, role, content, thinking, model, timestamp, "
        "is_meta, is_sidechain, turn_id FROM entries WHERE session_id = ? AND seq IS NOT NULL "
        "ORDER BY seq LIMIT ? OFFSET ?",
        (session_id, limit, offset),
    ).fetchall()
    out = [Message(*r) for r in rows]
    if not out:
        return out
    by_entry = {m.entry_id: m for m in out}
    for row in conn.execute(
        f"SELECT entry_id, {TOOL_CALL_COLUMNS} FROM agent_tool_calls WHERE session_id = ? "
        "AND entry_id BETWEEN ? AND ? ORDER BY tool_number",
        (session_id, min(by_entry), max(by_entry)),
    ):
        msg = by_entry.get(row[0])
        if msg is not None:
            msg.tool_calls.append(ToolCall(*row[1:]))
    fill_tool_io(conn, [c for m in out for c in m.tool_calls])
    return out


TOOL_CALL_COLUMNS = (
    "id, tool_name, params_json, result_json, status, child_session_id, started_at, completed_at, result_entry_id, "
    "entry_id"
)


def fill_tool_io(conn: sqlite3.Connection, calls: list[ToolCall]) -> None:
    """Give calls their input and result where the ledger kept no copy of them (an adapter with
    `tool_io_in_record`): the records they came in are normalized again and picked from."""
    wanted = {c.entry_id for c in calls if c.params_json is None and c.entry_id is not None}
    wanted |= {c.result_entry_id for c in calls if c.result_json is None and c.result_entry_id is not None}
    if not wanted:
        return
    from threadloom.core.adapters import adapter_for  # the adapters load on demand (see core.adapters)
    from threadloom.core.adapters.base import FileContext, RawRecord

    inputs: dict[tuple[int, str], str] = {}
    results: dict[tuple[int, str], str] = {}
    contexts: dict[str, FileContext] = {}
    for eid, offset, line, raw, newline, path, agent, kind, project_key in conn.execute(
        "SELECT e.id, e.byte_offset, e.line_number, e.raw, e.newline, f.path, f.agent, f.kind, f.project_key "
        "FROM entries e JOIN source_files f ON f.id = e.source_file_id WHERE e.id IN (SELECT value FROM json_each(?)) "
        "ORDER BY e.id",
        (orjson.dumps(sorted(wanted)).decode(),),
    ):
        try:
            adapter = adapter_for(agent)
        except KeyError:
            continue  # an agent this version no longer reads
        ctx = contexts.get(path)
        if ctx is None:
            ctx = contexts[path] = FileContext(Path(path), kind, project_key)
        rec = adapter.normalize(RawRecord(offset, line, bytes(raw), bool(newline)), ctx)
        for use in rec.tool_uses:
            inputs[(eid, use.id)] = use.input_json
        for result in rec.tool_results:
            # a result without an id (read alone here, it has no call to be matched to): "" keeps the first
            results.setdefault((eid, result.tool_use_id), result.content_json)
    for call in calls:
        if call.params_json is None and call.entry_id is not None:
            call.params_json = inputs.get((call.entry_id, call.id))
        if call.result_json is None and call.result_entry_id is not None:
            key = call.result_entry_id
            call.result_json = results.get((key, call.id)) or results.get((key, ""))


def raw_entry(conn: sqlite3.Connection, entry_id: int) -> bytes | None:
    row = conn.execute("SELECT raw FROM entries WHERE id = ?", (entry_id,)).fetchone()
    return bytes(row[0]) if row else None
