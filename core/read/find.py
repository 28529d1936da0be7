"""Places inside one session, for the viewer's find bar and jumps: text matches, prompts, failures.

The viewer draws only the messages on screen, so finding a word by looking at what it has drawn
would miss most of a 20,000-message session. Here the stored text answers instead: each record's
text, thinking and tool text (`entries.tool_text`: a call's name and input strings on the call's
record, its output on the result's record) are matched in SQL, case-insensitively, and a match
in a result's record is credited to the call it answers, which is where the viewer shows it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import orjson

from ..adapters.shared import strings_of
from ..base.markup import is_typed
from ..store.rows import builder, getter, value
from .archive import SUBAGENTS_BELOW
from .browse import Segment, compaction_segments
from .calls import call_params, result_text
from .query import TOOL_CALL_COLUMNS, ToolCall, fill_tool_io

__all__ = ["Place", "failed_calls", "find_in_session", "prompt_seqs", "session_segments"]

# the order of a message's parts as the viewer draws them: its text, its thinking, its calls
PARTS = ("text", "thinking", "tool")


@dataclass(frozen=True, slots=True)
class Place:
    """One part of one message: its text, its thinking, or one of its tool calls (`call_id`)."""

    seq: int
    entry_id: int
    part: str  # text | thinking | tool
    call_id: str | None = None


_CONTAINS = "threadloom_contains"


def _contains(text: str | None, needle: str) -> bool:
    return text is not None and needle in text.lower()


def _match_sql(column: str, ascii_only: bool) -> str:
    """SQL true when `column` holds the parameter `:needle` (already lower case). SQLite's lower()
    folds ASCII only, which is exact for an ASCII needle; any other needle is matched by Python."""
    if ascii_only:
        return f"COALESCE(instr(lower({column}), :needle) > 0, 0)"
    return f"{_CONTAINS}({column}, :needle)"


def find_in_session(conn: sqlite3.Connection, session_id: str, query: str) -> list[Place]:
    """Every part of the session's messages that holds `query` (any case), in reading order.

    A tool call counts once whether its input, its output or both hold it."""
    needle = query.lower()
    if not needle.strip():
        return []
    ascii_only = needle.isascii()
    if not ascii_only:
        conn.create_function(_CONTAINS, 2, _contains, deterministic=True)
    text, thinking, tools = (_match_sql(c, ascii_only) for c in ("content", "thinking", "tool_text"))
    rows = conn.execute(
        "SELECT id, seq, in_text, in_thinking, in_tools FROM ("
        f"SELECT id, seq, {text} AS in_text, {thinking} AS in_thinking, {tools} AS in_tools "
        "FROM entries WHERE session_id = :session AND (content IS NOT NULL OR thinking IS NOT NULL "
        "OR tool_text IS NOT NULL)) WHERE in_text OR in_thinking OR in_tools",
        {"needle": needle, "session": session_id},
    ).fetchall()
    found: dict[tuple[int, int, int], Place] = {}  # (seq, part, tool number) → place
    tool_records: list[int] = []
    for entry_id, seq, in_text, in_thinking, in_tools in rows:
        if seq is not None and in_text:
            found[(seq, 0, 0)] = Place(seq, entry_id, "text")
        if seq is not None and in_thinking:
            found[(seq, 1, 0)] = Place(seq, entry_id, "thinking")
        if in_tools:
            tool_records.append(entry_id)  # a result's record has no seq of its own: its call has
    for number, seq, call in _calls_holding(conn, session_id, tool_records, needle):
        found[(seq, 2, number)] = Place(seq, call.entry_id or 0, "tool", call.id)
    return [found[key] for key in sorted(found)]


def _calls_holding(
    conn: sqlite3.Connection, session_id: str, records: list[int], needle: str
) -> list[tuple[int, int, ToolCall]]:
    """(tool number, seq of the calling message, call) for each call whose input or output holds
    `needle`, given the records whose tool text does. A record that carries one call's input (or
    one call's output) is that call's; one shared by several calls has each of them checked."""
    if not records:
        return []
    cursor = conn.execute(
        f"SELECT {', '.join('c.' + c.strip() for c in TOOL_CALL_COLUMNS.split(','))}, c.tool_number, "
        "e.seq AS seq FROM agent_tool_calls c JOIN entries e ON e.id = c.entry_id "
        "WHERE c.session_id = ? AND e.seq IS NOT NULL AND (c.entry_id IN (SELECT value FROM json_each(?)) "
        "OR c.result_entry_id IN (SELECT value FROM json_each(?)))",
        (session_id, ids := orjson.dumps(records).decode(), ids),
    )
    build, number_of, seq_of = builder(cursor, ToolCall), getter(cursor, "tool_number"), getter(cursor, "seq")
    calls = [(number_of(row), seq_of(row), build(row)) for row in cursor]
    source = conn.execute("SELECT source FROM agent_sessions WHERE id = ?", (session_id,)).fetchone()
    for _, _, call in calls:
        call.agent = source[0] if source else None  # whose adapter draws the call
    wanted = set(records)
    sharing: dict[tuple[str, int], int] = {}  # (side, record) → how many calls it carries
    for _, _, call in calls:
        for side, record in (("in", call.entry_id), ("out", call.result_entry_id)):
            if record in wanted:
                sharing[(side, record)] = sharing.get((side, record), 0) + 1
    sure: list[tuple[int, int, ToolCall]] = []
    unsure: list[tuple[int, int, ToolCall]] = []
    for number, seq, call in calls:
        sides = [(s, r) for s, r in (("in", call.entry_id), ("out", call.result_entry_id)) if r in wanted]
        (sure if any(sharing[key] == 1 for key in sides) else unsure).append((number, seq, call))
    if unsure:
        fill_tool_io(conn, [call for _, _, call in unsure])
        for number, seq, call in unsure:
            shown = f"{call.name} {strings_of(call_params(call))}\n{result_text(call)}"
            if needle in shown.lower():
                sure.append((number, seq, call))
    return sure


def prompt_seqs(conn: sqlite3.Connection, session_id: str) -> list[int]:
    """The sequence numbers of the prompts the user typed, in order: not tool results, not the
    agent's own notes (meta), not a compaction's summary nor a background task's notification, and
    none of Claude Code's markup but what was typed (`core.base.markup.is_typed`): a `/clear`, a
    command's output, a `!` command's output are no prompts. Only a text opening on a tag is read
    whole (the tags open the text)."""
    rows = conn.execute(
        "SELECT seq, CASE WHEN substr(ltrim(content), 1, 1) = '<' OR substr(ltrim(content), 1, 8) = 'Caveat: ' "
        "THEN content END FROM entries WHERE session_id = ? AND seq IS NOT NULL AND role = 'user' "
        "AND content IS NOT NULL AND is_meta = 0 AND COALESCE(entry_type, 'user') = 'user' "
        "AND substr(ltrim(content), 1, 19) != '<task-notification>' "
        "AND NOT (json_valid(raw) AND COALESCE(json_extract(raw, '$.isCompactSummary'), 0)) ORDER BY seq",
        (session_id,),
    ).fetchall()
    return [seq for seq, marked in rows if marked is None or is_typed(marked)]


def failed_calls(conn: sqlite3.Connection, session_id: str) -> list[Place]:
    """The session's failed tool calls, each at the message that made it, in order."""
    rows = conn.execute(
        "SELECT e.seq, c.entry_id, c.id FROM agent_tool_calls c JOIN entries e ON e.id = c.entry_id "
        "WHERE c.session_id = ? AND c.status = 'failed' AND e.seq IS NOT NULL ORDER BY e.seq, c.tool_number",
        (session_id,),
    ).fetchall()
    return [Place(seq, entry_id, "tool", call_id) for seq, entry_id, call_id in rows]


def subagents_failed_calls(conn: sqlite3.Connection, session_id: str) -> int:
    """How many tool calls failed in the session's subagents (and theirs): where a session with no
    failure of its own had them."""
    row = conn.execute(
        SUBAGENTS_BELOW + "SELECT count(*) FROM agent_tool_calls WHERE status = 'failed' "
        "AND session_id IN (SELECT id FROM below)",
        (session_id,),
    ).fetchone()
    return int(row[0]) if row else 0


def session_segments(conn: sqlite3.Connection, session_id: str, message_count: int) -> list[Segment]:
    """`browse.compaction_segments`, answered from the session's row when it was never compacted
    (most are): the records of a 20,000-message session are not read to find none."""
    if not value(conn, "SELECT compaction_count FROM agent_sessions WHERE id = ?", (session_id,)):
        return []
    return compaction_segments(conn, session_id, message_count)
