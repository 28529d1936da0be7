"""Read queries the TUI needs beyond `core.query`: projects, the session tree, message pages.

Plain `sqlite3` and dataclasses, no Textual: the interface asks, this module answers. Every list
query selects summary columns only, and message content is read a page at a time so a session
of 20,000 messages opens without reading all of it (PERF.md: first 200 rows in 0.44 ms).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import orjson
from threadloom.core.query import TOOL_CALL_COLUMNS, ToolCall, fill_tool_io, raw_entry
from threadloom.core.text import one_line, task_notice

__all__ = [
    "Branch",
    "MessageRow",
    "ProjectRow",
    "Segment",
    "SessionNode",
    "ToolCallRow",
    "branch_seqs",
    "branches",
    "child_sessions",
    "compaction_segments",
    "rewind_seqs",
    "get_node",
    "jump_targets",
    "list_projects",
    "message_page",
    "project_sessions",
    "raw_entry",
    "session_count",
    "tool_result_extra",
]


@dataclass(slots=True)
class ProjectRow:
    """One working directory with the agents that worked there."""

    path: str
    name: str
    agents: list[str]
    session_count: int
    subagent_count: int
    last_activity: int | None


def list_projects(conn: sqlite3.Connection) -> list[ProjectRow]:
    """Projects with at least one main session, most recently active first."""
    rows = conn.execute(
        "SELECT COALESCE(project_path, ''), max(COALESCE(project, '')), group_concat(DISTINCT source), "
        "sum(is_subagent = 0), sum(is_subagent = 1), max(COALESCE(ended_at, created_at)) "
        "FROM agent_sessions WHERE message_count > 0 GROUP BY COALESCE(project_path, '') "
        "HAVING sum(is_subagent = 0) > 0 ORDER BY max(COALESCE(ended_at, created_at, 0)) DESC"
    ).fetchall()
    out = []
    for path, name, agents, mains, subs, last in rows:
        out.append(
            ProjectRow(
                path,
                name or path or "(no project)",
                sorted((agents or "").split(",")),
                mains or 0,
                subs or 0,
                last,
            )
        )
    return out


def session_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM agent_sessions WHERE message_count > 0").fetchone()[0]


@dataclass(slots=True)
class SessionNode:
    """What a row of the session tree shows, and what decides whether it can expand."""

    id: str
    title: str
    project: str | None
    project_path: str | None
    started_at: int | None
    ended_at: int | None
    message_count: int
    tokens: int
    model: str | None
    kind: str
    agent_type: str | None
    task_description: str | None
    task_status: str | None
    is_warmup: bool
    branch_count: int
    compaction_count: int
    parent_session_id: str | None
    tool_call_id: str | None
    child_count: int = 0

    @property
    def is_subagent(self) -> bool:
        return self.kind != "main" and self.parent_session_id is not None

    @property
    def has_children(self) -> bool:
        return self.child_count > 0 or self.branch_count > 0 or self.compaction_count > 0


_NODE_SELECT = (
    "SELECT s.id, COALESCE(s.title, s.first_prompt, s.task_description, ''), s.project, s.project_path, "
    "s.created_at, s.ended_at, s.message_count, "
    "s.input_tokens + s.output_tokens + s.cache_creation_tokens + s.cache_read_tokens, s.model, s.kind, "
    "s.agent_type, s.task_description, s.task_status, s.is_warmup, s.branch_count, s.compaction_count, "
    "s.parent_session_id, s.tool_call_id, "
    "(SELECT count(*) FROM agent_sessions c WHERE c.parent_session_id = s.id AND c.message_count > 0 "
    "AND (c.is_warmup = 0 OR ?)) FROM agent_sessions s"
)


def _node(row: tuple) -> SessionNode:
    node = SessionNode(*row)
    node.title = " ".join(node.title.split())[:300]
    node.is_warmup = bool(node.is_warmup)
    return node


def project_sessions(
    conn: sqlite3.Connection, project_path: str, *, include_warmup: bool = False
) -> list[SessionNode]:
    """Main sessions of one project, newest first (subagents hang below them)."""
    # a plain equality where it can be one, so the project's rows come through an index
    where = "s.project_path = ?" if project_path else "COALESCE(s.project_path, '') = ?"
    rows = conn.execute(
        _NODE_SELECT + f" WHERE {where} AND s.is_subagent = 0 AND s.message_count > 0 "
        "ORDER BY COALESCE(s.ended_at, s.created_at, 0) DESC, s.id",
        (int(include_warmup), project_path),
    ).fetchall()
    return [_node(r) for r in rows]


def child_sessions(
    conn: sqlite3.Connection, session_id: str, *, include_warmup: bool = False
) -> list[SessionNode]:
    """Subagents spawned by a session (or by a subagent), in the order they started."""
    rows = conn.execute(
        _NODE_SELECT + " WHERE s.parent_session_id = ? AND s.message_count > 0 AND (s.is_warmup = 0 OR ?) "
        "ORDER BY s.created_at, s.id",
        (int(include_warmup), session_id, int(include_warmup)),
    ).fetchall()
    return [_node(r) for r in rows]


def get_node(
    conn: sqlite3.Connection, session_id: str, *, include_warmup: bool = False
) -> SessionNode | None:
    row = conn.execute(_NODE_SELECT + " WHERE s.id = ?", (int(include_warmup), session_id)).fetchone()
    return _node(row) if row else None


def session_source(conn: sqlite3.Connection, session_id: str) -> tuple[str, int, int] | None:
    """The file a session was read from, with the size and mtime (ns) its last ingest saw: a
    reader compares them with the file's own to notice that an agent is still writing it."""
    row = conn.execute(
        "SELECT f.path, f.size, f.mtime_ns FROM agent_sessions s JOIN source_files f ON f.id = s.source_file_id "
        "WHERE s.id = ?",
        (session_id,),
    ).fetchone()
    return (row[0], row[1], row[2]) if row else None


def grown_source(conn: sqlite3.Connection, session_id: str) -> tuple[str, tuple[int, int]] | None:
    """The session's file and its (size, mtime_ns) now, when they differ from what its last
    ingest saw (an agent is still writing it); None when unchanged, gone or not a plain file."""
    source = session_source(conn, session_id)
    if source is None:
        return None
    path, size, mtime_ns = source
    try:
        st = os.stat(path)
    except OSError:  # gone, or a member of a compressed log
        return None
    now = (st.st_size, st.st_mtime_ns)
    return None if now == (size, mtime_ns) else (path, now)


def session_path(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """The chain of session ids from the main session down to `session_id` (for revealing it)."""
    chain = [session_id]
    while True:
        row = conn.execute(
            "SELECT parent_session_id FROM agent_sessions WHERE id = ?", (chain[-1],)
        ).fetchone()
        if not row or not row[0] or row[0] in chain:
            return chain[::-1]
        chain.append(row[0])


@dataclass(slots=True)
class Branch:
    """One path from the first prompt to a leaf of the conversation tree (after a rewind)."""

    number: int
    leaf_turn_id: str
    turn_ids: list[str]
    label: str
    started_at: int | None
    active: bool


def branches(conn: sqlite3.Connection, session_id: str) -> list[Branch]:
    """Every leaf of the turn tree; empty when the conversation never forked."""
    turns = conn.execute(
        "SELECT id, parent_turn_id, sequence, started_at FROM agent_turns WHERE session_id = ? ORDER BY sequence",
        (session_id,),
    ).fetchall()
    if not turns:
        return []
    parent = {t[0]: t[1] for t in turns}
    children: dict[str | None, list[str]] = {}
    for tid, pid, _, _ in turns:
        children.setdefault(pid if pid in parent else None, []).append(tid)
    leaves = [t for t in turns if t[0] not in children]
    if len(leaves) < 2:
        return []
    started = {t[0]: t[3] for t in turns}
    out = []
    for number, (leaf, _, _, _) in enumerate(leaves, 1):
        path = [leaf]
        while parent.get(path[-1]) in parent:
            path.append(parent[path[-1]])
        path.reverse()
        # name the branch by its last turn that has a sibling: where it left the branch nearest to
        # it (three branches rewound below one shared "Start" are told apart by what came after it)
        forks = [
            t for t in path if len(children.get(parent.get(t) if parent.get(t) in parent else None, [])) > 1
        ]
        fork_turn = forks[-1] if forks else path[0]
        out.append(Branch(number, leaf, path, _prompt_text(conn, fork_turn), started.get(fork_turn), False))
    out[-1].active = True  # the branch written last is the one the agent continued
    return out


def _prompt_text(conn: sqlite3.Connection, turn_id: str) -> str:
    row = conn.execute(
        "SELECT content FROM entries WHERE uuid = ? AND content IS NOT NULL LIMIT 1", (turn_id,)
    ).fetchone()
    text = row[0] if row else ""
    notice = task_notice(text)  # a branch is named by the notification's headline, not its result
    return one_line(notice.title if notice else text, 200)


def rewind_seqs(conn: sqlite3.Connection, session_id: str) -> set[int]:
    """Positions of prompts that start a later branch (the user rewound and asked again)."""
    rows = conn.execute(
        "SELECT t.parent_turn_id, t.id, t.sequence FROM agent_turns t JOIN agent_turns p ON p.id = t.parent_turn_id "
        "WHERE t.session_id = ? AND p.child_count >= 2 ORDER BY t.sequence",
        (session_id,),
    ).fetchall()
    seen: set[str] = set()
    later = []
    for parent, turn, _ in rows:
        if parent in seen:
            later.append(turn)
        seen.add(parent)
    if not later:
        return set()
    found = conn.execute(
        "SELECT seq FROM entries WHERE session_id = ? AND seq IS NOT NULL AND uuid IN (SELECT value FROM json_each(?))",
        (session_id, orjson.dumps(later).decode()),
    ).fetchall()
    return {r[0] for r in found}


def branch_seqs(conn: sqlite3.Connection, session_id: str, turn_ids: list[str]) -> list[int]:
    """Message positions of one branch: its turns plus what precedes the first prompt."""
    rows = conn.execute(
        "SELECT seq FROM entries WHERE session_id = ? AND seq IS NOT NULL AND "
        "(turn_id IS NULL OR turn_id IN (SELECT value FROM json_each(?))) ORDER BY seq",
        (session_id, orjson.dumps(turn_ids).decode()),
    ).fetchall()
    return [r[0] for r in rows]


@dataclass(slots=True)
class Segment:
    """A stretch of a session between two compactions."""

    number: int
    start_seq: int
    end_seq: int
    started_at: int | None
    pre_tokens: int | None


def compaction_segments(conn: sqlite3.Connection, session_id: str, message_count: int) -> list[Segment]:
    """Segments split at each compact_boundary; empty when the session was never compacted."""
    rows = conn.execute(
        "SELECT seq, timestamp, raw FROM entries WHERE session_id = ? AND subtype = 'compact_boundary' "
        "AND seq IS NOT NULL ORDER BY seq",
        (session_id,),
    ).fetchall()
    if not rows:
        return []
    first = conn.execute(
        "SELECT timestamp FROM entries WHERE session_id = ? AND seq = 0", (session_id,)
    ).fetchone()
    starts = [(0, first[0] if first else None, None)]
    for seq, ts, raw in rows:
        meta = _loads(raw).get("compactMetadata")
        pre = meta.get("preTokens") if isinstance(meta, dict) else None
        starts.append((seq, ts, pre if isinstance(pre, int) else None))
    out = []
    for i, (seq, ts, pre) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else message_count - 1
        out.append(Segment(i + 1, seq, end, ts, pre))
    return out


# ---------------------------------------------------------------------------- messages


# One tool call: the same row the CLI reads (core.query.ToolCall), named for the viewer.
ToolCallRow = ToolCall


@dataclass(slots=True)
class MessageRow:
    """A message with what the viewer draws: text, thinking, tool calls, images, event fields."""

    entry_id: int
    seq: int
    role: str | None
    entry_type: str | None
    subtype: str | None
    content: str | None
    thinking: str | None
    model: str | None
    timestamp: int | None
    is_meta: bool
    message_id: str | None
    turn_id: str | None
    tokens: int = 0
    tool_calls: list[ToolCallRow] = field(default_factory=list)
    images: list[tuple[str, int]] = field(default_factory=list)  # (media type, bytes)
    event: dict[str, Any] = field(default_factory=dict)  # system fields, compact-summary flag

    @property
    def is_compact_summary(self) -> bool:
        return bool(self.event.get("isCompactSummary"))


_IMAGE = b'"type":"image"'
_COMPACT = b'"isCompactSummary":true'


def message_page(
    conn: sqlite3.Connection, session_id: str, first_seq: int, last_seq: int
) -> list[MessageRow]:
    """Messages with `first_seq <= seq <= last_seq`, their tool calls, token counts and images."""
    rows = conn.execute(
        "SELECT id, seq, role, entry_type, subtype, content, thinking, model, timestamp, is_meta, message_id, "
        # raw is read only where events, images or compaction flags can be: not for tool results,
        # whose lines are the big ones (fill_tool_io reads those of the page's calls)
        "turn_id, CASE WHEN entry_type = 'system' OR (role = 'user' AND (content IS NOT NULL "
        "OR instr(substr(raw, 1, 2048), ?) > 0)) THEN raw END "
        "FROM entries WHERE session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
        (_IMAGE, session_id, first_seq, last_seq),
    ).fetchall()
    out: list[MessageRow] = []
    for r in rows:
        msg = MessageRow(*r[:12])
        msg.is_meta = bool(msg.is_meta)
        raw = r[12]
        if raw is not None and (msg.entry_type == "system" or _IMAGE in raw or _COMPACT in raw):
            _read_event(msg, _loads(raw))
        out.append(msg)
    if not out:
        return out
    by_entry = {m.entry_id: m for m in out}
    for row in conn.execute(
        f"SELECT entry_id, {TOOL_CALL_COLUMNS} FROM agent_tool_calls WHERE session_id = ? "
        "AND entry_id BETWEEN ? AND ? ORDER BY entry_id, tool_number",
        (session_id, min(by_entry), max(by_entry)),
    ):
        msg = by_entry.get(row[0])
        if msg is not None:
            msg.tool_calls.append(ToolCallRow(*row[1:]))
    fill_tool_io(conn, [c for m in out for c in m.tool_calls])
    ids = sorted({m.message_id for m in out if m.message_id})
    if ids:
        for entry_id, total in conn.execute(
            "SELECT entry_id, input_tokens + output_tokens + cache_creation_tokens + cache_read_tokens "
            "FROM agent_usage WHERE message_id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(ids).decode(),),
        ):
            msg = by_entry.get(entry_id)
            if msg is not None:
                msg.tokens = total
    return out


EVENT_KEYS = (
    "compactMetadata",
    "error",
    "level",
    "durationMs",
    "hookInfos",
    "hookErrors",
    "retryAttempt",
    "maxRetries",
    "isCompactSummary",
    "content",
)


def _read_event(msg: MessageRow, obj: dict[str, Any]) -> None:
    for key in EVENT_KEYS:
        if key in obj:
            msg.event[key] = obj[key]
    content = (obj.get("message") or {}).get("content") if isinstance(obj.get("message"), dict) else None
    if isinstance(content, list):
        for block in content:
            blocks = [block]
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and isinstance(block.get("content"), list)
            ):
                blocks = block["content"]
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "image":
                    source = b.get("source") if isinstance(b.get("source"), dict) else {}
                    data = source.get("data") if isinstance(source.get("data"), str) else ""
                    msg.images.append((str(source.get("media_type") or "image"), len(data) * 3 // 4))


def tool_result_extra(conn: sqlite3.Connection, call: ToolCallRow) -> Any:
    """The tool's own structured result (Claude Code's `toolUseResult`): patches, exit codes, agent
    stats, as the agent's adapter reads it (`Adapter.tool_result_extra`).

    Read from the call's own result record: its tool id alone may name calls of other sessions."""
    from threadloom.core.adapters import ADAPTERS

    if call.result_entry_id is None:
        return None
    row = conn.execute(
        "SELECT e.raw, s.source FROM entries e LEFT JOIN agent_sessions s ON s.id = e.session_id WHERE e.id = ?",
        (call.result_entry_id,),
    ).fetchone()
    adapter = ADAPTERS.get(row[1]) if row and row[1] else None
    return adapter.tool_result_extra(_loads(row[0])) if adapter is not None else None


def _loads(raw: bytes | None) -> dict[str, Any]:
    try:
        obj = orjson.loads(raw or b"{}")
    except orjson.JSONDecodeError:
        return {}
    return obj if isinstance(obj, dict) else {}


# ---------------------------------------------------------------------------- palette


@dataclass(slots=True)
class JumpTarget:
    id: str
    title: str
    project: str
    started_at: int | None
    is_subagent: bool


def jump_targets(conn: sqlite3.Connection, limit: int = 20000) -> list[JumpTarget]:
    """Every non-empty session for "jump to session" (title, id and project are searchable)."""
    rows = conn.execute(
        "SELECT id, CASE WHEN is_subagent = 1 THEN COALESCE(task_description, title, first_prompt, '') "
        "ELSE COALESCE(title, first_prompt, '') END, COALESCE(project, ''), created_at, "
        "is_subagent FROM agent_sessions WHERE message_count > 0 AND is_warmup = 0 "
        "ORDER BY COALESCE(ended_at, created_at, 0) DESC LIMIT ?",
        (limit,),
    ).fetchall()
    return [JumpTarget(r[0], " ".join(r[1].split())[:120], r[2], r[3], bool(r[4])) for r in rows]
