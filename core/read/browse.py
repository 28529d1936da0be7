"""Read queries the TUI needs beyond `core.read.query`: projects, the session tree, message pages.

Plain `sqlite3` and dataclasses, no Textual: the interface asks, this module answers. Every list
query selects summary columns only, and message content is read a page at a time so a session
of 20,000 messages opens without reading all of it (PERF.md: first 200 rows in 0.44 ms). The
tree's sessions are `core.read.query.SessionSummary`, its tool calls `core.read.query.ToolCall` (both
exported here too, for the TUI); columns are read by name (`core.store.rows`).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from typing import Any

import orjson

from ..adapters import ADAPTERS, agents_where
from ..adapters.base import disk_name
from ..base.text import one_line, readable, task_notice
from ..store.rows import builder, fetch, fetch_one, getter, value, values
from .query import (
    MessageRow,
    SessionSummary,
    ToolCall,
    attach_hooks,
    attach_tool_calls,
    main_sql,
    money,
    raw_entry,
    read_sessions,
    session_select,
    subagent_sql,
    title_sql,
)

__all__ = [
    "Branch",
    "MessageRow",
    "ProjectRow",
    "Segment",
    "SessionSummary",
    "ToolCall",
    "abandoned_turns",
    "branch_seqs",
    "branches",
    "call_subagents",
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
    "withdrawn_seqs",
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
    # its sessions' and subagents' totals, as the ledger keeps them on each session
    tokens: int = 0
    cost_usd: float | None = None  # None: no message could be priced
    unpriced_messages: int = 0

    @property
    def cost_text(self) -> str:
        """ "$1.23", "$1.23 + ?" when some messages could not be priced, "?" when none could."""
        if self.cost_usd is None:
            return "?" if self.unpriced_messages else ""
        return money(self.cost_usd) + (" + ?" if self.unpriced_messages else "")


def list_projects(conn: sqlite3.Connection) -> list[ProjectRow]:
    """Projects with at least one main session, most recently active first. Their tokens and cost
    are the stats' (core.insight.stats): their subagents' included wherever those ran (a Claude Code
    subagent in a worktree of its own has that folder as its own project)."""
    main, subagent = main_sql(), subagent_sql()
    rows = fetch(
        conn,
        "SELECT COALESCE(project_path, '') AS path, max(COALESCE(project, '')) AS name, "
        f"group_concat(DISTINCT source) AS agents, sum({main}) AS mains, sum({subagent}) AS subagents, "
        "max(COALESCE(ended_at, created_at)) AS last_activity "
        "FROM agent_sessions WHERE message_count > 0 GROUP BY COALESCE(project_path, '') "
        f"HAVING sum({main}) > 0 ORDER BY max(COALESCE(ended_at, created_at, 0)) DESC",
    )
    totals = {
        r["path"]: r
        for r in fetch(
            conn,
            "SELECT project_path AS path, sum(cost_usd) AS cost_usd, sum(unpriced_messages) AS unpriced, "
            "CAST(total(input_tokens + output_tokens + cache_creation_tokens + cache_read_tokens) AS INTEGER) "
            "AS tokens FROM stats_rollup GROUP BY project_path",
        )
    }
    out = []
    for r in rows:
        total = totals.get(r["path"])
        out.append(
            ProjectRow(
                path=r["path"],
                name=r["name"] or r["path"] or "(no project)",
                agents=sorted((r["agents"] or "").split(",")),
                session_count=r["mains"] or 0,
                subagent_count=r["subagents"] or 0,
                last_activity=r["last_activity"],
                tokens=(total["tokens"] or 0) if total else 0,
                cost_usd=total["cost_usd"] if total else None,
                unpriced_messages=(total["unpriced"] or 0) if total else 0,
            )
        )
    return out


def session_count(conn: sqlite3.Connection) -> int:
    count: int = value(conn, "SELECT count(*) FROM agent_sessions WHERE message_count > 0")
    return count


# ---------------------------------------------------------------------------- the session tree


TREE_PROMPT_CHARS = 300  # of a session's first prompt, read for the tree (its filter matches them)

# a tree row's title: what names the session (`core.read.query.title_sql`), and its first prompt's
# start, which the list's filter reads (all 2,000 characters of thousands of sessions made a large
# project's list a third slower to read)
_TREE_SELECT = session_select(
    title=title_sql("s."),
    first_prompt=f"substr(s.first_prompt, 1, {TREE_PROMPT_CHARS})",
    more=", (SELECT count(*) FROM agent_sessions c WHERE c.parent_session_id = s.id AND c.message_count > 0 "
    "AND (c.is_warmup = 0 OR ?)) AS child_count"
    # signals (schema 11): the row's badge
    ", (SELECT count(*) FROM session_signals g WHERE g.session_id = s.id) AS signal_count",
)


def _tree_sessions(cursor: sqlite3.Cursor) -> list[SessionSummary]:
    """Sessions of a `_TREE_SELECT` query, each title on one line and cut as its row shows it."""
    out = read_sessions(cursor)
    for s in out:
        s.title = " ".join((s.title or "").split())[:300]
    return out


def project_sessions(
    conn: sqlite3.Connection, project_path: str, *, include_warmup: bool = False
) -> list[SessionSummary]:
    """Main sessions of one project, newest first (subagents hang below them)."""
    # a plain equality where it can be one, so the project's rows come through an index
    where = "s.project_path = ?" if project_path else "COALESCE(s.project_path, '') = ?"
    cursor = conn.execute(
        _TREE_SELECT + f" WHERE {where} AND {main_sql('s.')} AND s.message_count > 0 "
        "ORDER BY COALESCE(s.ended_at, s.created_at, 0) DESC, s.id",
        (int(include_warmup), project_path),
    )
    return _tree_sessions(cursor)


def child_sessions(
    conn: sqlite3.Connection, session_id: str, *, include_warmup: bool = False
) -> list[SessionSummary]:
    """Subagents spawned by a session (or by a subagent), in the order they started."""
    cursor = conn.execute(
        _TREE_SELECT + " WHERE s.parent_session_id = ? AND s.message_count > 0 AND (s.is_warmup = 0 OR ?) "
        "ORDER BY s.created_at, s.id",
        (int(include_warmup), session_id, int(include_warmup)),
    )
    return _tree_sessions(cursor)


def call_subagents(
    conn: sqlite3.Connection, session_id: str, call_id: str, *, include_warmup: bool = False
) -> list[SessionSummary]:
    """The subagents one call of a session started (a swarm's several, `Adapter.swarm_tools`), in
    the order they started, as the session tree lists them: each one's task (a swarm's item) is its
    title."""
    cursor = conn.execute(
        _TREE_SELECT + " WHERE s.parent_session_id = ? AND s.tool_call_id = ? AND s.message_count > 0 "
        "ORDER BY s.created_at, s.id",
        (int(include_warmup), session_id, call_id),
    )
    return _tree_sessions(cursor)


def _count_subagents(conn: sqlite3.Connection, session_id: str, calls: list[ToolCall]) -> None:
    """Give each call of `calls` that started a subagent the number it started (`subagent_count`),
    as `call_subagents` lists them."""
    ids = [c.id for c in calls if c.child_session_id]
    if not ids:
        return
    counts = dict(
        conn.execute(
            "SELECT tool_call_id, count(*) FROM agent_sessions WHERE parent_session_id = ? "
            "AND message_count > 0 AND tool_call_id IN (SELECT value FROM json_each(?)) GROUP BY tool_call_id",
            (session_id, orjson.dumps(ids).decode()),
        ).fetchall()
    )
    for call in calls:
        call.subagent_count = counts.get(call.id, 0)


def get_node(
    conn: sqlite3.Connection, session_id: str, *, include_warmup: bool = False
) -> SessionSummary | None:
    found = _tree_sessions(conn.execute(_TREE_SELECT + " WHERE s.id = ?", (int(include_warmup), session_id)))
    return found[0] if found else None


def session_source(conn: sqlite3.Connection, session_id: str) -> tuple[str, int, int] | None:
    """The file a session was read from, with the size and mtime (ns) its last ingest saw: a
    reader compares them with the file's own to notice that an agent is still writing it."""
    row = fetch_one(
        conn,
        "SELECT f.path, f.size, f.mtime_ns FROM agent_sessions s JOIN source_files f ON f.id = s.source_file_id "
        "WHERE s.id = ?",
        (session_id,),
    )
    return (disk_name(row["path"]), row["size"], row["mtime_ns"]) if row else None


def archive_version(conn: sqlite3.Connection) -> int:
    """A number that changes whenever another connection (a watch, a CLI ingest, a sync, a worker of
    the same app) has written to the archive since this connection last asked: what a reader
    holding it open checks to know its screens are stale (SQLite's data_version)."""
    row = conn.execute("PRAGMA data_version").fetchone()
    return int(row[0]) if row else 0


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
        parent = value(conn, "SELECT parent_session_id FROM agent_sessions WHERE id = ?", (chain[-1],))
        if not parent or parent in chain:
            return chain[::-1]
        chain.append(parent)


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
    turns = fetch(
        conn,
        "SELECT id, parent_turn_id, started_at FROM agent_turns WHERE session_id = ? ORDER BY sequence",
        (session_id,),
    )
    if not turns:
        return []
    parent = {t["id"]: t["parent_turn_id"] for t in turns}
    children: dict[str | None, list[str]] = {}
    for tid, pid in parent.items():
        children.setdefault(pid if pid in parent else None, []).append(tid)
    leaves = [tid for tid in parent if tid not in children]
    if len(leaves) < 2:
        return []
    started = {t["id"]: t["started_at"] for t in turns}
    with_siblings = {t for kids in children.values() if len(kids) > 1 for t in kids}
    out = []
    for number, leaf in enumerate(leaves, 1):
        path = [leaf]
        while parent.get(path[-1]) in parent:
            path.append(parent[path[-1]])
        # name the branch by its last turn that has a sibling: where it left the branch nearest to
        # it (three branches rewound below one shared "Start" are told apart by what came after it)
        fork_turn = next((t for t in path if t in with_siblings), path[-1])
        path.reverse()
        out.append(
            Branch(
                number=number,
                leaf_turn_id=leaf,
                turn_ids=path,
                label=_prompt_text(conn, fork_turn),
                started_at=started.get(fork_turn),
                active=False,
            )
        )
    out[-1].active = True  # the branch written last is the one the agent continued
    return out


def _turn_tree(conn: sqlite3.Connection, session_id: str) -> tuple[dict[str, str | None], list[str]]:
    """A session's turns as a tree: each turn's parent, in the order they were written, and the
    turns no other follows (the ends of its branches, the one continued last)."""
    parent: dict[str, str | None] = dict(
        conn.execute(
            "SELECT id, parent_turn_id FROM agent_turns WHERE session_id = ? ORDER BY sequence", (session_id,)
        ).fetchall()
    )
    has_child = {pid for pid in parent.values() if pid in parent}
    return parent, [tid for tid in parent if tid not in has_child]


def abandoned_turns(conn: sqlite3.Connection, session_id: str) -> list[tuple[int, list[str]]]:
    """Each branch rewound away from (all but the last written, numbered as `branches` numbers
    them) with its turns that neither the continued branch nor an earlier one holds, root first;
    empty when the conversation never forked. What `branches` gives, without listing each path
    whole: a walk up from a leaf stops at the first turn a branch already counted holds, so the
    whole tree is walked once (a 100k-message session rewound 150 times: ~0.25 s to ~10 ms)."""
    parent, leaves = _turn_tree(conn, session_id)
    if len(leaves) < 2:
        return []
    held: set[str] = set()

    def climb(leaf: str) -> list[str]:
        path: list[str] = []
        turn: str | None = leaf
        while turn in parent and turn not in held:
            held.add(turn)
            path.append(turn)
            turn = parent[turn]
        return path[::-1]

    climb(leaves[-1])  # the branch written last is the one the agent continued
    return [(number, turns) for number, leaf in enumerate(leaves[:-1], 1) if (turns := climb(leaf))]


def _prompt_text(conn: sqlite3.Connection, turn_id: str) -> str:
    text = value(
        conn, "SELECT content FROM entries WHERE uuid = ? AND content IS NOT NULL LIMIT 1", (turn_id,)
    )
    text = text if text is not None else ""
    notice = task_notice(text)  # a branch is named by the notification's headline, not its result
    # Claude Code's markup as what it stands for: `! uv run pytest`, not `<bash-input>uv run…`
    return one_line(notice.title if notice else readable(text), 200)


def rewind_seqs(conn: sqlite3.Connection, session_id: str) -> set[int]:
    """Positions of prompts that start a later branch (the user rewound and asked again)."""
    rows = fetch(
        conn,
        "SELECT t.parent_turn_id, t.id FROM agent_turns t JOIN agent_turns p ON p.id = t.parent_turn_id "
        "AND p.session_id = t.session_id "
        "WHERE t.session_id = ? AND p.child_count >= 2 ORDER BY t.sequence",
        (session_id,),
    )
    seen: set[str] = set()
    later = []
    for row in rows:
        if row["parent_turn_id"] in seen:
            later.append(row["id"])
        seen.add(row["parent_turn_id"])
    if not later:
        return set()
    return set(
        values(
            conn,
            "SELECT seq FROM entries WHERE session_id = ? AND seq IS NOT NULL AND uuid IN (SELECT value FROM json_each(?))",
            (session_id, orjson.dumps(later).decode()),
        )
    )


def _writes_undos(agent: str | None) -> bool:
    """Whether `agent`'s logs hold undo records: a session of another is not scanned for them (every
    open of a session and every growth of one followed: 60 ms cold, 20 warm, for the bench's 23,000
    records). Only that agent's adapter is built."""
    return agent is not None and bool(agents_where(lambda a: a.writes_undos, among=[agent]))


# a session's undos and the first message each withdrew (its `ref_uuid`): through ix_entries_undo,
# so no other condition on the undo's row (one on `seq` has the session's every row read instead);
# the message by its uuid (`+` keeps the session's index out: through it, each undo read the session
# in order up to the message it names)
UNDOS_SQL = (
    "SELECT u.seq, (SELECT min(w.seq) FROM entries w WHERE +w.session_id = u.session_id AND w.uuid = u.ref_uuid) "
    "FROM entries u WHERE u.session_id = ? AND u.subtype = 'undo'"
)


def withdrawn_seqs(conn: sqlite3.Connection, session_id: str) -> frozenset[int]:
    """Positions of the messages taken back out of the model's context, which the log still holds:
    those of a branch the user rewound away from (Claude Code's rewinds, a Codex rollback: a branch
    that left the one continued at a turn both hold; a tree of its own, a log with no tree, is no
    rewind anyone recorded), and those an undo withdrew (a system message of subtype `undo`
    naming the first of them in `ref_uuid`: from that message to the undo)."""
    withdrawn: set[int] = set()
    agent = value(conn, "SELECT source FROM agent_sessions WHERE id = ?", (session_id,))
    undos = [] if not _writes_undos(agent) else conn.execute(UNDOS_SQL, (session_id,)).fetchall()
    for undo, first in undos:
        if undo is not None and first is not None and first < undo:
            withdrawn.update(range(first, undo))
    turns = _rewound_turns(conn, session_id)
    if turns:
        withdrawn.update(
            values(
                conn,
                "SELECT seq FROM entries WHERE session_id = ? AND seq IS NOT NULL "
                "AND turn_id IN (SELECT value FROM json_each(?))",
                (session_id, orjson.dumps(sorted(turns)).decode()),
            )
        )
    return frozenset(withdrawn)


def _rewound_turns(conn: sqlite3.Connection, session_id: str) -> set[str]:
    """The turns of the branches rewound away from at a turn the continued branch (the one written
    last) holds too: each turn off that branch whose ancestors meet it."""
    if (
        value(
            conn, "SELECT 1 FROM agent_turns WHERE session_id = ? AND child_count >= 2 LIMIT 1", (session_id,)
        )
        is None
    ):
        return set()
    parent, leaves = _turn_tree(conn, session_id)
    continued: set[str] = set()
    turn: str | None = leaves[-1] if leaves else None
    while turn in parent and turn not in continued:
        continued.add(turn)
        turn = parent[turn]
    meets: dict[str, bool] = {tid: True for tid in continued}  # whether a turn's ancestors meet it
    for tid in parent:
        path: list[str] = []
        turn = tid
        while turn in parent and turn not in meets and turn not in path:
            path.append(turn)
            turn = parent[turn]
        answer = meets.get(turn, False) if turn is not None else False
        for step in path:
            meets[step] = answer
    return {tid for tid, meet in meets.items() if meet and tid not in continued}


def branch_seqs(conn: sqlite3.Connection, session_id: str, turn_ids: list[str]) -> list[int]:
    """Message positions of one branch: its turns plus what precedes the first prompt."""
    return values(
        conn,
        "SELECT seq FROM entries WHERE session_id = ? AND seq IS NOT NULL AND "
        "(turn_id IS NULL OR turn_id IN (SELECT value FROM json_each(?))) ORDER BY seq",
        (session_id, orjson.dumps(turn_ids).decode()),
    )


@dataclass(slots=True)
class Segment:
    """A stretch of a session between two compactions."""

    number: int
    start_seq: int
    end_seq: int
    started_at: int | None
    pre_tokens: int | None


# the records that mark a compaction: Claude Code's boundary, OpenCode's and the Cline SDK's summary,
# Cline's and Roo's condense messages (by subtype), Codex's `compacted` item (by record type)
COMPACTION_SUBTYPES = frozenset({"compact_boundary", "compaction_summary", "condense_context", "condense"})
COMPACTION_TYPES = frozenset({"compacted"})


def compaction_segments(conn: sqlite3.Connection, session_id: str, message_count: int) -> list[Segment]:
    """Segments split at each compaction (COMPACTION_SUBTYPES, COMPACTION_TYPES); empty when the
    session was never compacted. A session that opens on a summary starts no segment there."""
    rows = fetch(
        conn,
        # Claude Code's boundary alone says how full the context was (compactMetadata): only its
        # record is read, not a Codex history of megabytes
        "SELECT seq, timestamp, CASE WHEN subtype = 'compact_boundary' THEN raw END AS raw "
        "FROM entries WHERE session_id = ? AND seq > 0 "
        "AND (subtype IN (SELECT value FROM json_each(?)) OR entry_type IN (SELECT value FROM json_each(?))) "
        "ORDER BY seq",
        (
            session_id,
            orjson.dumps(sorted(COMPACTION_SUBTYPES)).decode(),
            orjson.dumps(sorted(COMPACTION_TYPES)).decode(),
        ),
    )
    if not rows:
        return []
    first = value(conn, "SELECT timestamp FROM entries WHERE session_id = ? AND seq = 0", (session_id,))
    starts: list[tuple[int, int | None, int | None]] = [(0, first, None)]  # (seq, timestamp, pre tokens)
    for row in rows:
        meta = _loads(row["raw"]).get("compactMetadata")
        pre = meta.get("preTokens") if isinstance(meta, dict) else None
        starts.append((row["seq"], row["timestamp"], pre if isinstance(pre, int) else None))
    out = []
    for i, (seq, ts, pre) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else message_count - 1
        out.append(Segment(number=i + 1, start_seq=seq, end_seq=end, started_at=ts, pre_tokens=pre))
    return out


# ---------------------------------------------------------------------------- messages


def message_page(
    conn: sqlite3.Connection, session_id: str, first_seq: int, last_seq: int
) -> list[MessageRow]:
    """Messages with `first_seq <= seq <= last_seq`, their tool calls, token counts, and the event
    fields and images their agent's adapter reads from their records."""
    source = value(conn, "SELECT source FROM agent_sessions WHERE id = ?", (session_id,))
    adapter = ADAPTERS.get(source) if source else None
    cursor = conn.execute(
        "SELECT id AS entry_id, seq, uuid, parent_uuid, role, entry_type, subtype, content, thinking, model, "
        "timestamp, is_meta, is_sidechain, "
        # raw is read only where events, images or compaction flags can be: not for tool results,
        # whose lines are the big ones (fill_tool_io reads those of the page's calls)
        "message_id, turn_id, CASE WHEN entry_type = 'system' OR (role = 'user' AND content IS NOT NULL) "
        "OR ((role = 'user' OR ?) AND instr(substr(raw, 1, 2048), ?) > 0) THEN raw END AS raw "
        "FROM entries WHERE session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
        (
            bool(adapter and adapter.images_in_replies),
            adapter.image_marker if adapter else b"\0",
            session_id,
            first_seq,
            last_seq,
        ),
    )
    build, raw_of = builder(cursor, MessageRow), getter(cursor, "raw")  # a page is a hot loop: by index
    out: list[MessageRow] = []
    for r in cursor.fetchall():
        msg = build(r)
        msg.is_meta, msg.is_sidechain = bool(msg.is_meta), bool(msg.is_sidechain)
        raw = raw_of(r)
        extras = adapter.message_extras(raw, msg.entry_type) if raw is not None and adapter else None
        if extras is not None:
            msg.event, msg.images = extras.event, extras.images
        out.append(msg)
    if not out:
        return out
    by_entry = {m.entry_id: m for m in out}
    attach_tool_calls(conn, session_id, by_entry, "entry_id, tool_number")
    if adapter is not None and adapter.swarm_tools:  # a call that may have started several subagents
        swarms = [c for m in out for c in m.tool_calls if c.name in adapter.swarm_tools]
        _count_subagents(conn, session_id, swarms)
    attach_hooks(conn, session_id, out)
    ids = sorted({m.message_id for m in out if m.message_id})
    if ids:
        for row in fetch(
            conn,
            "SELECT entry_id, input_tokens + output_tokens + cache_creation_tokens + cache_read_tokens AS tokens "
            "FROM agent_usage WHERE message_id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(ids).decode(),),
        ):
            owner = by_entry.get(row["entry_id"])
            if owner is not None:
                owner.tokens = row["tokens"]
    return out


def tool_result_extra(conn: sqlite3.Connection, call: ToolCall) -> Any:
    """The tool's own structured result (Claude Code's `toolUseResult`): patches, exit codes, agent
    stats, as the agent's adapter reads it (`Adapter.tool_result_extra`).

    Read from the call's own result record: its tool id alone may name calls of other sessions."""
    if call.result_entry_id is None:
        return None
    row = fetch_one(
        conn,
        "SELECT e.raw, s.source FROM entries e LEFT JOIN agent_sessions s ON s.id = e.session_id WHERE e.id = ?",
        (call.result_entry_id,),
    )
    adapter = ADAPTERS.get(row["source"]) if row is not None and row["source"] else None
    if row is None or adapter is None:
        return None
    record = _loads(row["raw"])
    if call.name in adapter.edit_tools or call.name in adapter.write_tools:
        return adapter.edit_result(record, call.id)  # what its edit reading takes (`file_edits`)
    return adapter.tool_result_extra(record)


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
    cursor = conn.execute(
        f"SELECT id, {title_sql('')} AS title, COALESCE(project, '') AS project, "
        f"created_at AS started_at, {subagent_sql()} AS is_subagent FROM agent_sessions "
        "WHERE message_count > 0 AND is_warmup = 0 ORDER BY COALESCE(ended_at, created_at, 0) DESC LIMIT ?",
        (limit,),
    )
    build = builder(cursor, JumpTarget)  # every session of the archive: by index, not by name
    out = [build(row) for row in cursor]
    for t in out:
        t.title = " ".join(t.title.split())[:120]
        t.is_subagent = bool(t.is_subagent)
    return out
