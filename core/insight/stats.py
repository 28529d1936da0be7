"""Totals over the archive: tokens, cost, tool calls and changed lines by period, project, model,
agent or session, read from sums the ledger keeps as records land.

Two derived tables hold them (see core/store/models.py): `agent_file_changes`, the lines each editing
call added and removed in each file, and `stats_rollup`, one row per session, model and UTC
quarter hour. The transaction that changes a session's records, or its costs, marks it in
`stats_pending`; `refresh_pending` (run after each ingest, rebuild and repricing) recomputes the
rows of the marked sessions only, so a report never scans the messages.

Days are local days, cut when the report is read, in the time zone of the process that reads it
(the `TZ` environment variable, else the system's; SQLite's `localtime`): every zone's offset from
UTC is a whole number of quarter hours, so quarter-hour rows fall wholly on one local day.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import orjson

from ..adapters.edits import UNKNOWN
from ..adapters.shared import json_text
from ..store.rows import fetch
from ..store.sql import get_meta, like_text, set_meta, transaction

if TYPE_CHECKING:
    from ..adapters.base import Adapter
    from ..adapters.edits import FileEdit

BUCKET_MS = 900_000  # a quarter hour
GROUPINGS = ("day", "week", "month", "project", "model", "agent", "session", "machine")
TIME_GROUPINGS = ("day", "week", "month")

PENDING = "SELECT session_id FROM stats_pending"
UNDATED = "undated"  # the period of what happened in sessions without any time recorded
# how the rollup rows are summed: a change recomputes every session's rows once (2: facts without a
# time of their own count at their session's start; 3: a subagent's rows in its main session's project;
# 4: a fork's copies of its source's records are not counted again)
# 5: every agent's edit tools counted, read by its adapter; 6: a Write over a file an earlier call
# wrote counts its diff against that text (every call's lines are counted again)
STATS_VERSION = "6"
STATS_VERSION_KEY = "stats_version"


def quarter_hour(timestamp: int) -> int:
    """A time's quarter hour, as SQLite's integer division gives it (towards zero)."""
    return timestamp // BUCKET_MS if timestamp >= 0 else -(-timestamp // BUCKET_MS)


def mark_stale(conn: sqlite3.Connection, sessions: Iterable[str]) -> None:
    """Inside the caller's transaction: these sessions' totals are to be recomputed, all of them."""
    mark_since(conn, dict.fromkeys(sessions))


def mark_since(conn: sqlite3.Connection, since: dict[str, int | None]) -> None:
    """Inside the caller's transaction: each session's totals from a quarter hour on are to be
    recomputed (None: all of them): where an append's facts fall, not the whole session."""
    conn.executemany(
        "INSERT INTO stats_pending (session_id, since_bucket) VALUES (?, ?) ON CONFLICT(session_id) DO UPDATE SET "
        "since_bucket = CASE WHEN since_bucket IS NULL OR excluded.since_bucket IS NULL THEN NULL "
        "ELSE min(since_bucket, excluded.since_bucket) END",
        list(since.items()),
    )


# ------------------------------------------------------------------ keeping the sums


def refresh_pending(conn: sqlite3.Connection) -> int:
    """Recompute the file changes and rollup rows of every session marked stale (all of them,
    once, when they were summed by an older STATS_VERSION); returns how many sessions. Run where
    the caller writes (the ingest, under its writer lock)."""
    if get_meta(conn, STATS_VERSION_KEY) != STATS_VERSION:
        with transaction(conn):
            conn.execute("UPDATE stats_pending SET since_bucket = NULL")  # whole, as the changed lines are
            conn.execute("INSERT OR IGNORE INTO stats_pending (session_id) SELECT id FROM agent_sessions")
            # counted again, each session's calls in order: a Write reads what the calls before it left
            conn.execute("DELETE FROM agent_file_changes")
            set_meta(conn, STATS_VERSION_KEY, STATS_VERSION)
    sessions = [r[0] for r in conn.execute(PENDING)]
    if not sessions:
        return 0
    roots = _roots(conn, sessions)
    # the marked sessions' agents: each call is read by its own agent's adapter, and an append
    # need not build every other agent's (a sixth of what one appended line cost)
    agents = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT s.source FROM stats_pending p JOIN agent_sessions s ON s.id = p.session_id"
        )
    ]
    editors = _reply_editors(agents)
    with transaction(conn):
        _whole_where_needed(conn, roots, editors)
        copies = _fork_copies(conn, agents)
        conn.executemany(  # a fork's edits it copied from its source: the source's, not the fork's
            "DELETE FROM agent_file_changes WHERE session_id = ? AND call_id IN "
            "(SELECT id FROM agent_tool_calls WHERE session_id = ? AND entry_id IN (SELECT value FROM json_each(?)))",
            [(sid, sid, orjson.dumps(copy.entries).decode()) for sid, copy in copies.items()],
        )
        changes = _new_changes(conn, agents, copies)
        aider = _aider_changes(conn, editors)
        conn.execute(
            "DELETE FROM agent_file_changes WHERE session_id IN (SELECT session_id FROM stats_pending "
            "JOIN agent_sessions s ON s.id = session_id WHERE s.source IN (SELECT value FROM json_each(?)))",
            (editors,),
        )
        conn.executemany(
            "INSERT OR REPLACE INTO agent_file_changes (session_id, call_id, path, turn_id, tool_name, timestamp, "
            "lines_added, lines_removed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            changes + aider,
        )
        conn.execute(
            "DELETE FROM stats_rollup WHERE session_id IN (SELECT session_id FROM stats_pending WHERE since_bucket IS NULL)"
        )
        conn.execute(
            "DELETE FROM stats_rollup WHERE rowid IN (SELECT r.rowid FROM stats_pending p JOIN stats_rollup r "
            "ON r.session_id = p.session_id WHERE p.since_bucket IS NOT NULL AND r.bucket >= p.since_bucket)"
        )
        conn.executemany(
            "UPDATE stats_pending SET root_session_id = ? WHERE session_id = ?",
            [(r, s) for s, r in roots.items()],
        )
        conn.execute(ROLLUP_SQL, _copies_params(copies))
        conn.execute("DELETE FROM stats_pending")
    return len(sessions)


def _whole_where_needed(conn: sqlite3.Connection, roots: dict[str, str], reply_editors: str) -> None:
    """Inside the refresh's transaction: sums from a quarter hour on only where what every row of
    the session reads is unchanged: an Aider session (its changes are counted again whole), and a
    session whose main session's project is not the one its rows were summed under, are summed
    whole."""
    partial = conn.execute(
        "SELECT p.session_id, s.source FROM stats_pending p JOIN agent_sessions s ON s.id = p.session_id "
        "WHERE p.since_bucket IS NOT NULL"
    ).fetchall()
    whole = []
    editors = set(orjson.loads(reply_editors))
    for session_id, source in partial:
        root = roots.get(session_id, session_id)
        summed = conn.execute(
            "SELECT project_path, project FROM stats_rollup WHERE session_id = ? LIMIT 1", (session_id,)
        ).fetchone()
        now = conn.execute(
            "SELECT COALESCE(r.project_path, s.project_path, ''), COALESCE(r.project, s.project, '') "
            "FROM agent_sessions s LEFT JOIN agent_sessions r ON r.id = ? WHERE s.id = ?",
            (root, session_id),
        ).fetchone()
        if source in editors or summed is None or tuple(summed) != tuple(now):
            whole.append((session_id,))
    conn.executemany("UPDATE stats_pending SET since_bucket = NULL WHERE session_id = ?", whole)


# One row per session, model and quarter hour of the marked sessions, from four kinds of fact:
# API messages (tokens, cost), messages (counted by the ledger as it placed them, in stats_messages),
# tool calls, changed lines. A message takes the model in use when it was sent (one before any, the
# session's), a call or an edit its turn's. cost: sum() of the known costs is NULL
# when none is known, never 0; unpriced_messages counts the unknown ones. A fact its agent recorded
# no time for (Aider writes one per session, in its header) counts at its session's start; only a
# session without any time has rows without a bucket (the "undated" period). A subagent's rows are
# its main session's project's (a Claude Code subagent in a worktree of its own ran for that project).
ROLLUP_SQL = f"""
INSERT INTO stats_rollup (bucket, session_id, model, root_session_id, project_path, project, agent,
    messages, api_messages, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, cost_usd,
    unpriced_messages, tool_calls, failed_tool_calls, lines_added, lines_removed)
SELECT x.bucket, x.session_id, x.model, COALESCE(p.root_session_id, x.session_id),
    COALESCE(r.project_path, s.project_path, ''), COALESCE(r.project, s.project, ''), s.source, sum(x.messages), sum(x.api), sum(x.inp), sum(x.outp), sum(x.cw), sum(x.cr),
    sum(x.cost), sum(x.unpriced), sum(x.calls), sum(x.failed), sum(x.added), sum(x.removed)
FROM (
    SELECT COALESCE(u.timestamp, s.created_at) / {BUCKET_MS} AS bucket, u.session_id, COALESCE(u.model, '') AS model,
        0 AS messages, count(*) AS api, sum(u.input_tokens) AS inp, sum(u.output_tokens) AS outp,
        sum(u.cache_creation_tokens) AS cw, sum(u.cache_read_tokens) AS cr, sum(u.cost_usd) AS cost,
        sum(u.cost_usd IS NULL) AS unpriced, 0 AS calls, 0 AS failed, 0 AS added, 0 AS removed
    FROM stats_pending p JOIN agent_usage u ON u.session_id = p.session_id JOIN agent_sessions s ON s.id = u.session_id
    WHERE (p.since_bucket IS NULL OR COALESCE(u.timestamp, s.created_at) / {BUCKET_MS} >= p.since_bucket)
        AND COALESCE(u.entry_id, 0) NOT IN (SELECT value FROM json_each(:copied_entries))  -- a fork's copies: its source's
    GROUP BY 1, 2, 3
    UNION ALL
    SELECT COALESCE(NULLIF(m.bucket, -1), s.created_at / {BUCKET_MS}), m.session_id,
        COALESCE(NULLIF(m.model, ''), s.model, ''), m.messages, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, 0
    FROM stats_pending p JOIN stats_messages m ON m.session_id = p.session_id JOIN agent_sessions s ON s.id = m.session_id
    WHERE p.since_bucket IS NULL OR COALESCE(NULLIF(m.bucket, -1), s.created_at / {BUCKET_MS}) >= p.since_bucket
    UNION ALL
    -- the messages a fork copied from its source, which the ledger counted as the fork's: taken back
    SELECT COALESCE(NULLIF(json_extract(k.value, '$[1]'), -1), s.created_at / {BUCKET_MS}), json_extract(k.value, '$[0]'),
        COALESCE(NULLIF(json_extract(k.value, '$[2]'), ''), s.model, ''), -(json_extract(k.value, '$[3]')), 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, 0
    FROM json_each(:copied_messages) k JOIN stats_pending p ON p.session_id = json_extract(k.value, '$[0]')
    JOIN agent_sessions s ON s.id = p.session_id
    WHERE p.since_bucket IS NULL
        OR COALESCE(NULLIF(json_extract(k.value, '$[1]'), -1), s.created_at / {BUCKET_MS}) >= p.since_bucket
    UNION ALL
    SELECT COALESCE(c.started_at, s.created_at) / {BUCKET_MS}, c.session_id, COALESCE(t.model, s.model, ''),
        0, 0, 0, 0, 0, 0, NULL, 0, count(*), sum(c.status = 'failed'), 0, 0
    FROM stats_pending p JOIN agent_tool_calls c ON c.session_id = p.session_id JOIN agent_sessions s ON s.id = c.session_id
    LEFT JOIN agent_turns t ON t.id = c.turn_id AND t.session_id = c.session_id
    WHERE (p.since_bucket IS NULL OR COALESCE(c.started_at, s.created_at) / {BUCKET_MS} >= p.since_bucket)
        AND COALESCE(c.entry_id, 0) NOT IN (SELECT value FROM json_each(:copied_entries))  -- a fork's copies: its source's
    GROUP BY 1, 2, 3
    UNION ALL
    SELECT COALESCE(f.timestamp, s.created_at) / {BUCKET_MS}, f.session_id, COALESCE(t.model, s.model, ''),
        0, 0, 0, 0, 0, 0, NULL, 0, 0, 0, sum(f.lines_added), sum(f.lines_removed)
    FROM stats_pending p JOIN agent_file_changes f ON f.session_id = p.session_id JOIN agent_sessions s ON s.id = f.session_id
    LEFT JOIN agent_turns t ON t.id = f.turn_id AND t.session_id = f.session_id
    WHERE p.since_bucket IS NULL OR COALESCE(f.timestamp, s.created_at) / {BUCKET_MS} >= p.since_bucket
    GROUP BY 1, 2, 3
) x JOIN agent_sessions s ON s.id = x.session_id JOIN stats_pending p ON p.session_id = x.session_id
LEFT JOIN agent_sessions r ON r.id = p.root_session_id
GROUP BY x.bucket, x.session_id, x.model
HAVING sum(x.messages) OR sum(x.api) OR sum(x.calls) OR sum(x.added) OR sum(x.removed)
"""


# ------------------------------------------------------------------ a fork's copies


@dataclass(slots=True)
class ForkCopies:
    """What a fork copied from the session it was forked from: the records (by entry id), and the
    messages among them as the ledger counted them, by (quarter hour or -1, model in use)."""

    entries: list[int]
    messages: dict[tuple[int, str], int]


# a record a Claude Code fork copied names its source's (`forkedFrom`: FORK.md 1.4, threadloom's own
# forks too); a Codex fork's copies are the records written up to the second its copy was made, that
# of its first two session_meta records (its own; the source's, copied in the same burst)
FORK_MARK = b'"forkedFrom"'


def _fork_copies(conn: sqlite3.Connection, agents: list[str]) -> dict[str, ForkCopies]:
    """Inside the refresh's transaction: the copies each marked fork holds. A fork's messages,
    tool calls and edits up to its fork point are its source's, counted there; the ledger placed
    and counted them as the fork's too. How a fork's copies are told from its own records is its
    adapter's `fork_copies`."""
    from ..adapters import ADAPTERS, agents_where

    forks = conn.execute(
        "SELECT s.id, s.source FROM stats_pending p JOIN agent_sessions s ON s.id = p.session_id "
        "WHERE s.forked_from_session_id IS NOT NULL AND s.source IN (SELECT value FROM json_each(?))",
        (orjson.dumps(agents_where(lambda a: a.fork_copies is not None, among=agents)).decode(),),
    ).fetchall()
    out: dict[str, ForkCopies] = {}
    for sid, source in forks:
        if ADAPTERS[source].fork_copies == "before-second-meta":
            made = conn.execute(
                "SELECT max(timestamp) FROM (SELECT timestamp FROM entries WHERE session_id = ? "
                "AND entry_type = 'session_meta' ORDER BY id LIMIT 2)",
                (sid,),
            ).fetchone()[0]
            if made is None:
                continue
            copied = "timestamp IS NOT NULL AND timestamp / 1000 <= ?"
            arg: Any = made // 1000
        else:
            copied = (
                "instr(raw, ?) > 0 AND json_valid(CAST(raw AS TEXT)) "
                "AND json_type(CAST(raw AS TEXT), '$.forkedFrom') = 'object'"
            )
            arg = FORK_MARK
        entries: list[int] = []
        messages: dict[tuple[int, str], int] = {}
        model = ""
        # the model in use as the ledger placed each record (the last one named up to it): the
        # fork's own count of a copied message is under that model, and is taken back under it
        for eid, seq, ts, named, is_copy in conn.execute(
            f"SELECT id, seq, timestamp, model, {copied} FROM entries WHERE session_id = ? ORDER BY id",
            (arg, sid),
        ):
            if named and named != "<synthetic>":
                model = named
            if not is_copy:
                continue
            entries.append(eid)
            if seq is not None:
                key = (ts // BUCKET_MS if ts is not None else -1, model)
                messages[key] = messages.get(key, 0) + 1
        if entries:
            out[sid] = ForkCopies(entries, messages)
    return out


def _copies_params(copies: dict[str, ForkCopies]) -> dict[str, str]:
    """ROLLUP_SQL's parameters: the copied messages to take back, the copied records' ids."""
    return {
        "copied_messages": orjson.dumps(
            [
                [sid, bucket, model, n]
                for sid, c in copies.items()
                for (bucket, model), n in c.messages.items()
            ]
        ).decode(),
        "copied_entries": orjson.dumps([e for c in copies.values() for e in c.entries]).decode(),
    }


def _roots(conn: sqlite3.Connection, sessions: list[str]) -> dict[str, str]:
    """The main session each session belongs to: up its parents while it is a subagent (a
    Claude subagent whose parent is not linked yet is named after it: "<root>:agent-…")."""
    parents = {
        sid: (bool(sub), parent)
        for sid, sub, parent in conn.execute(
            "SELECT id, is_subagent, parent_session_id FROM agent_sessions WHERE id IN (SELECT value FROM json_each(?)) "
            "OR id IN (SELECT parent_session_id FROM agent_sessions WHERE id IN (SELECT value FROM json_each(?)))",
            (orjson.dumps(sessions).decode(), orjson.dumps(sessions).decode()),
        )
    }
    roots = {}
    for sid in sessions:
        current, seen = sid, {sid}
        while True:
            found = parents.get(current)
            if found is None:
                found = conn.execute(
                    "SELECT is_subagent, parent_session_id FROM agent_sessions WHERE id = ?", (current,)
                ).fetchone()
                parents[current] = found = (bool(found[0]), found[1]) if found else (False, None)
            is_subagent, parent = found
            if not is_subagent or not parent or parent in seen:
                break
            seen.add(parent)
            current = parent
        if current == sid and parents.get(sid, (False, None))[0] and ":" in sid:
            current = sid.split(":", 1)[0]
        roots[sid] = current
    return roots


# ------------------------------------------------------------------ changed lines


def _new_changes(
    conn: sqlite3.Connection, agents: list[str], copies: dict[str, ForkCopies] | None = None
) -> list[tuple[Any, ...]]:
    """The lines changed by the marked sessions' completed editing calls not counted yet (but the
    calls a fork copied from its source: `copies`); `agents`: those sessions' agents. A Write over
    a file an earlier call of the session wrote or edited counts its diff against that text."""
    copied = {e for c in (copies or {}).values() for e in c.entries}
    from ..adapters import edit_tool_names
    from ..adapters.edits import line_counts

    rows = fetch(
        conn,
        "SELECT c.session_id, c.id, c.tool_name, c.params_json, c.entry_id, c.result_entry_id, c.turn_id, "
        "COALESCE(c.completed_at, c.started_at) AS at, s.source FROM agent_tool_calls c "
        "JOIN agent_sessions s ON s.id = c.session_id "
        "JOIN stats_pending p ON p.session_id = c.session_id "
        f"WHERE (p.since_bucket IS NULL OR COALESCE(c.completed_at, c.started_at) / {BUCKET_MS} >= p.since_bucket) "
        "AND c.status = 'completed' "
        "AND (c.tool_name IN (SELECT value FROM json_each(?)) OR c.params_json LIKE '%*** Begin Patch%') "
        "AND NOT EXISTS (SELECT 1 FROM agent_file_changes f WHERE f.session_id = c.session_id AND f.call_id = c.id) "
        "ORDER BY c.session_id, c.entry_id, c.tool_number",
        (orjson.dumps(sorted(edit_tool_names(agents))).decode(),),
    )
    if copied:
        rows = [r for r in rows if r["entry_id"] not in copied]
    out: list[tuple[Any, ...]] = []
    texts = _FileTexts(conn)
    for row, name, params, extra in _parsed_calls(conn, rows):
        texts.keep_only(row["session_id"])  # the rows come session by session
        edits = call_edits(name, params, extra, agent=row["source"])
        texts.fill_before(row["session_id"], edits, row["entry_id"])
        for path, added, removed in line_counts(edits):
            out.append((row["session_id"], row["id"], path, row["turn_id"], name, row["at"], added, removed))
    return out


def _parsed_calls(
    conn: sqlite3.Connection, rows: list[sqlite3.Row]
) -> Iterator[tuple[sqlite3.Row, str, dict[str, Any], Any]]:
    """Each call row (id, tool_name, params_json, entry_id, result_entry_id, source) with its input
    and what its adapter reads from its result record, parsed 500 at a time."""
    from ..read.query import ToolCall, fill_tool_io

    for start in range(0, len(rows), 500):
        chunk = rows[start : start + 500]
        calls = [
            ToolCall(
                id=r["id"],
                name=r["tool_name"],
                params_json=r["params_json"],
                result_json="",
                status="completed",
                child_session_id=None,
                started_at=None,
                completed_at=None,
                result_entry_id=r["result_entry_id"],
                entry_id=r["entry_id"],
            )
            for r in chunk
        ]
        # the records to parse: a call's own (when the ledger kept no input) and its result's
        wanted = [(r["entry_id"], r["source"]) for r in chunk if r["params_json"] is None]
        records = _records(conn, wanted + [(r["result_entry_id"], r["source"]) for r in chunk])
        for call in calls:
            found = (
                records.get(call.entry_id) if call.params_json is None and call.entry_id is not None else None
            )
            if found is not None:
                adapter, record = found
                params = adapter.tool_input(record, call.id)
                # json_text: an input nested deeper than orjson writes stopped every ingest
                call.params_json = json_text(params) if params is not None else None
        fill_tool_io(conn, [c for c in calls if c.params_json is None])  # what no adapter read cheaply
        for row, call in zip(chunk, calls, strict=True):
            try:
                params = orjson.loads(call.params_json or "{}")
            except orjson.JSONDecodeError:
                continue
            if not isinstance(params, dict):
                continue
            result_entry = row["result_entry_id"]
            result = records.get(result_entry) if result_entry is not None else None
            extra = result[0].edit_result(result[1], call.id) if result is not None else None
            yield row, call.name, params, extra


EARLIER_EDITS = 20  # the calls looked back over for a file's text before a Write that does not say it


class _FileTexts:
    """A session's files' texts, carried along its editing calls in the order they are counted, so
    that a Write over a file whose old text its own records do not give (a subagent's, an older
    Claude Code's) is counted as a diff against what an earlier Write or edit left there."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        # each file's text after the edits counted in this refresh (UNKNOWN until one tells it),
        # and while none has, those edits: what the calls counted before leave is their start
        self.texts: dict[tuple[str, str], Any] = {}
        self.untold: dict[tuple[str, str], list[FileEdit] | None] = {}

    def keep_only(self, session_id: str) -> None:
        """Forget the texts of the sessions counted before this one: a cold ingest's refresh counts
        every session's calls, whose written files would otherwise all be held until its end."""
        if self.texts and next(iter(self.texts))[0] != session_id:
            self.texts.clear()
            self.untold.clear()

    def fill_before(self, session_id: str, edits: list[FileEdit], entry_id: int | None) -> None:
        """Give each whole write in `edits` the file's text before it, where earlier calls tell it;
        each file's text is carried one edit at a time (not replayed from its first edit)."""
        for edit in edits:
            key = (session_id, edit.path)
            text = self.texts.get(key, UNKNOWN)
            untold = self.untold.setdefault(key, [])
            if edit.overwrites_unknown:
                before = text
                if (
                    before is UNKNOWN and untold is not None
                ):  # what the calls counted by earlier refreshes left
                    before = _replay(untold, self._counted_text(session_id, edit.path, entry_id))
                if isinstance(before, str):
                    edit.before = before
            self.texts[key] = text = edit.forward(text)
            if untold is not None:
                if text is UNKNOWN:
                    untold.append(edit)
                else:
                    self.untold[key] = None  # told from here on: an earlier start no longer matters

    def _counted_text(self, session_id: str, path: str, entry_id: int | None) -> Any:
        """The file's text after the session's last editing calls counted before this refresh
        (looking back over EARLIER_EDITS of them at most); UNKNOWN when they do not give it."""

        rows = fetch(
            self.conn,
            "SELECT c.id, c.tool_name, c.params_json, c.entry_id, c.result_entry_id, s.source "
            "FROM agent_file_changes f JOIN agent_tool_calls c ON c.session_id = f.session_id AND c.id = f.call_id "
            "JOIN agent_sessions s ON s.id = f.session_id "
            "WHERE f.session_id = ? AND f.path = ? AND c.entry_id < ? "
            f"ORDER BY c.entry_id DESC, c.tool_number DESC LIMIT {EARLIER_EDITS}",
            (session_id, path, entry_id if entry_id is not None else 1 << 62),
        )
        earlier: list[FileEdit] = []
        for row, name, params, extra in _parsed_calls(self.conn, rows[::-1]):
            earlier += [e for e in call_edits(name, params, extra, agent=row["source"]) if e.path == path]
        return _replay(earlier, UNKNOWN)


def _replay(edits: list[FileEdit], before: Any) -> Any:
    """A file's text after `edits`, from its text `before` them (UNKNOWN where they lose it)."""
    text = before
    for edit in edits:
        text = edit.forward(text)
    return text


def _records(
    conn: sqlite3.Connection, wanted: list[tuple[int | None, str]]
) -> dict[int, tuple[Adapter, Any]]:
    """Records parsed from their raw bytes, with their agent's adapter, by entry id."""
    from ..adapters import ADAPTERS

    by_entry = {eid: agent for eid, agent in wanted if eid is not None}
    out: dict[int, tuple[Adapter, Any]] = {}
    if not by_entry:
        return out
    for eid, raw in conn.execute(
        "SELECT id, raw FROM entries WHERE id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(sorted(by_entry)).decode(),),
    ):
        adapter = ADAPTERS.get(by_entry[eid])
        if adapter is None:
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            out[eid] = (adapter, record)
    return out


def call_edits(
    name: str, params: dict[str, Any], extra: Any = None, agent: str | None = None
) -> list[FileEdit]:
    """The files one editing call changed and how, as its agent's adapter reads it
    (`Adapter.file_edits`); none for a call that edits nothing or of no agent known."""
    from ..adapters import tool_owner

    adapter = tool_owner(agent, name)
    if adapter is None or not adapter.is_edit(name, params):
        return []
    return adapter.file_edits(name, params, extra)


def call_line_counts(
    name: str, params: dict[str, Any], extra: Any = None, agent: str | None = None
) -> list[tuple[str, int, int]]:
    """(file, lines added, lines removed) of one editing call (`call_edits`)."""
    from ..adapters.edits import line_counts

    return line_counts(call_edits(name, params, extra, agent))


def _reply_editors(agents: list[str]) -> str:
    """Those of `agents` whose edits are blocks in their replies (Aider's SEARCH/REPLACE), as JSON."""
    from ..adapters import agents_where

    return orjson.dumps(agents_where(lambda a: a.edits_in_replies, among=agents)).decode()


def _aider_changes(conn: sqlite3.Connection, reply_editors: str) -> list[tuple[Any, ...]]:
    """The marked Aider sessions' SEARCH/REPLACE blocks that an "Applied edit to" line confirms
    (a block Aider could not apply changed nothing), counted per reply and file."""
    sessions = [
        r[0]
        for r in conn.execute(
            f"SELECT id FROM agent_sessions WHERE source IN (SELECT value FROM json_each(?)) AND id IN ({PENDING})",
            (reply_editors,),
        )
    ]
    if not sessions:  # the usual case: nothing to parse, and the renderer (Rich) is not imported
        return []
    from ..adapters.edits import APPLIED_EDIT, EditBlock, edit_blocks
    from ..read.diffs import diff_between

    replies: list[tuple[str, int, str | None, int | None, str]] = []
    applied: dict[tuple[str, str | None], set[str]] = {}
    for sid, eid, turn, ts, role, content in conn.execute(
        "SELECT e.session_id, e.id, e.turn_id, e.timestamp, e.role, e.content FROM entries e "
        "WHERE e.session_id IN (SELECT value FROM json_each(?)) AND e.seq IS NOT NULL AND e.content IS NOT NULL "
        "ORDER BY e.session_id, e.seq",
        (orjson.dumps(sessions).decode(),),
    ):
        if role == "assistant":
            replies.append((sid, eid, turn, ts, content))
        elif role == "system":
            applied.setdefault((sid, turn), set()).update(m.group(1) for m in APPLIED_EDIT.finditer(content))
    out: list[tuple[Any, ...]] = []
    for sid, eid, turn, ts, content in replies:
        counts: dict[str, list[int]] = {}
        for part in edit_blocks(content):
            if not isinstance(part, EditBlock) or part.path not in applied.get((sid, turn), set()):
                continue
            total = counts.setdefault(part.path, [0, 0])
            for line in diff_between(part.old, part.new):
                if line.kind == "added":
                    total[0] += 1
                elif line.kind == "removed":
                    total[1] += 1
        out += [(sid, f"entry-{eid}", p, turn, "SEARCH/REPLACE", ts, a, r) for p, (a, r) in counts.items()]
    return out


@dataclass(slots=True)
class FileChange:
    """A file a session changed, with the lines added and removed and the calls that did it."""

    path: str
    lines_added: int
    lines_removed: int
    calls: list[str]


def session_changes(
    conn: sqlite3.Connection, session_id: str, turn_id: str | None = None
) -> list[FileChange]:
    """The files a session (or one of its turns) changed, most changed first."""
    where, params = "session_id = ?", [session_id]
    if turn_id is not None:
        where += " AND turn_id = ?"
        params.append(turn_id)
    rows = conn.execute(
        f"SELECT path, sum(lines_added), sum(lines_removed), json_group_array(call_id) FROM agent_file_changes "
        f"WHERE {where} GROUP BY path ORDER BY sum(lines_added) + sum(lines_removed) DESC, path",
        params,
    ).fetchall()
    return [FileChange(p, a, r, orjson.loads(c)) for p, a, r, c in rows]


@dataclass(slots=True)
class ChangeCall:
    """One call's changes to one file, with the message that made it, so a reader can be taken
    there: `seq` is None when the call's message is not in the conversation."""

    path: str
    call_id: str
    tool_name: str
    timestamp: int | None
    lines_added: int
    lines_removed: int
    seq: int | None
    entry_id: int | None


def change_calls(conn: sqlite3.Connection, session_id: str, path: str | None = None) -> list[ChangeCall]:
    """The calls that changed the session's files (or the one file `path`), in the order they ran.
    An Aider reply's edits are counted under "entry-<id>" of the reply, which is its message."""
    where, params = "f.session_id = ?", [session_id]
    if path is not None:
        where += " AND f.path = ?"
        params.append(path)
    rows = conn.execute(
        "SELECT f.path, f.call_id, f.tool_name, f.timestamp, f.lines_added, f.lines_removed, e.seq, e.id "
        "FROM agent_file_changes f "
        "LEFT JOIN agent_tool_calls c ON c.session_id = f.session_id AND c.id = f.call_id "
        "LEFT JOIN entries e ON e.id = COALESCE(c.entry_id, "
        "CASE WHEN f.call_id LIKE 'entry-%' THEN CAST(substr(f.call_id, 7) AS INTEGER) END) "
        f"WHERE {where} ORDER BY f.timestamp IS NULL, f.timestamp, e.seq, f.call_id, f.path",
        params,
    ).fetchall()
    return [ChangeCall(*row) for row in rows]


def files_changed(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's changed files for `show --json`: path, lines added and removed, and each
    call that changed it (most changed file first, its calls in the order they ran)."""
    calls: dict[str, list[ChangeCall]] = {}
    for call in change_calls(conn, session_id):
        calls.setdefault(call.path, []).append(call)
    return [
        {
            "path": f.path,
            "added": f.lines_added,
            "removed": f.lines_removed,
            "calls": [
                {
                    "id": c.call_id,
                    "tool": c.tool_name,
                    "timestamp": c.timestamp,
                    "added": c.lines_added,
                    "removed": c.lines_removed,
                    "entry_id": c.entry_id,
                }
                for c in calls.get(f.path, [])
            ],
        }
        for f in session_changes(conn, session_id)
    ]


# ------------------------------------------------------------------ reading the sums


@dataclass(slots=True)
class StatsRow:
    """One line of a report: a period (local day `YYYY-MM-DD`, week by its Monday, month
    `YYYY-MM`), a project, a model, an agent or a session, and its sums."""

    period: str
    sessions: int
    messages: int
    api_messages: int
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    cost_usd: float | None  # None: no message of the row could be priced
    unpriced_messages: int
    tool_calls: int
    failed_tool_calls: int
    lines_added: int
    lines_removed: int
    label: str = ""  # what a reader is shown for the key: a project's name, a session's title
    key: str = ""  # what to open: a project's path, a session's id

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_creation_tokens + self.cache_read_tokens

    @property
    def cost_text(self) -> str:
        """ "$1.23", "$1.23 + ?" when some messages could not be priced, "?" when none could."""
        from ..read.query import money

        if self.cost_usd is None:
            return "?" if self.unpriced_messages else ""
        return money(self.cost_usd) + (" + ?" if self.unpriced_messages else "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_LOCAL = f"x.bucket * {BUCKET_MS // 1000}, 'unixepoch', 'localtime'"
GROUP_SQL = {
    "day": f"date({_LOCAL})",
    "week": f"date({_LOCAL}, 'weekday 0', '-6 days')",  # the week's Monday
    "month": f"strftime('%Y-%m', {_LOCAL})",
    "project": "x.project_path",
    "model": "x.model",
    "agent": "x.agent",
    "session": "x.root_session_id",
    # the machine a session's file came from (pulled from a sync hub), else this one by the name it syncs as
    "machine": "COALESCE((SELECT p.machine FROM agent_sessions s JOIN sync_pulled p ON p.source_file_id = "
    "s.source_file_id WHERE s.id = x.root_session_id), (SELECT value FROM ledger_meta WHERE key = 'sync:machine'), "
    "'(this machine)')",
    "total": "'total'",  # one row: the whole selection (a session counted once)
}
# the sessions a reader is shown (the lists': main sessions with messages), not every root the rows
# name (a subagent whose session was never read, a session of tokens alone): each screen's count is
# the same; their tokens and costs are counted all the same
LISTED_ROOT = (
    "CASE WHEN x.root_session_id IN (SELECT id FROM agent_sessions WHERE is_subagent = 0 "
    "AND message_count > 0) THEN x.root_session_id END"
)
SUMS = (
    f"count(DISTINCT {LISTED_ROOT}) AS sessions, sum(x.messages) AS messages, "
    "sum(x.api_messages) AS api_messages, sum(x.input_tokens) AS input_tokens, "
    "sum(x.output_tokens) AS output_tokens, sum(x.cache_creation_tokens) AS cache_creation_tokens, "
    "sum(x.cache_read_tokens) AS cache_read_tokens, sum(x.cost_usd) AS cost_usd, "
    "sum(x.unpriced_messages) AS unpriced_messages, sum(x.tool_calls) AS tool_calls, "
    "sum(x.failed_tool_calls) AS failed_tool_calls, sum(x.lines_added) AS lines_added, "
    "sum(x.lines_removed) AS lines_removed"
)


def report(
    conn: sqlite3.Connection,
    by: str = "day",
    *,
    since: int | None = None,
    until: int | None = None,
    project: str | None = None,
    agent: str | None = None,
) -> list[StatsRow]:
    """The sums grouped `by` one of GROUPINGS, over the rows from `since` to before `until` (unix
    ms) of the projects matching `project` (name, path, or part of a path, as `sessions --project`)
    and the `agent`. Periods come in time order, the other groupings most expensive first."""
    if by not in GROUP_SQL:  # GROUPINGS, or "total"
        raise ValueError(f"--by takes one of {', '.join(GROUPINGS)}, not {by!r}")
    where: list[str] = ["1"]
    params: list[Any] = []
    if since is not None:
        where.append("x.bucket >= ?")
        params.append(since // BUCKET_MS)
    if until is not None:
        where.append("x.bucket < ?")
        params.append(-(-until // BUCKET_MS))
    if project:
        where.append("(x.project = ? OR x.project_path = ? OR x.project_path LIKE ? ESCAPE '\\')")
        params += [project, project, f"%{like_text(project)}%"]
    if agent:
        where.append("x.agent = ?")
        params.append(agent)
    key = GROUP_SQL[by]
    if by in TIME_GROUPINGS:  # then the sessions without any time, when no range is asked for
        key = f"CASE WHEN x.bucket IS NULL THEN '{UNDATED}' ELSE {key} END"
    order = (
        f"period = '{UNDATED}', period"
        if by in TIME_GROUPINGS
        else "sum(x.cost_usd) IS NULL, sum(x.cost_usd) DESC, "
        "sum(x.input_tokens + x.output_tokens + x.cache_creation_tokens + x.cache_read_tokens) DESC, period"
    )
    rows = fetch(
        conn,
        f"SELECT {key} AS period, {SUMS}, max(x.project) AS project FROM stats_rollup x "
        f"WHERE {' AND '.join(where)} GROUP BY period ORDER BY {order}",
        params,
    )
    out = [_stats_row(r) for r in rows]
    for row, raw in zip(out, rows, strict=True):
        row.key = row.period
        row.label = "(no date)" if by in TIME_GROUPINGS and row.period == UNDATED else row.period
        if by == "project":
            row.label = raw["project"] or row.period or "(no project)"
    if by == "project":
        _tell_apart(out)
    if by == "session":
        titles = _titles(conn, [r.key for r in out])
        for row in out:
            row.label = titles.get(row.key, row.key)
    return out


def _tell_apart(rows: list[StatsRow]) -> None:
    """Projects of one name in several folders (`app` in two homes) get as much of the folder
    above them as tells them apart, "app (alice/work)", or they read as the same project twice."""
    by_label: dict[str, list[StatsRow]] = {}
    for row in rows:
        by_label.setdefault(row.label, []).append(row)
    for label, same in by_label.items():
        if len(same) < 2:
            continue
        parents = [PurePosixPath(r.key).parent.parts for r in same]
        tails = [r.key for r in same]
        for k in range(1, max(len(p) for p in parents) + 1):
            shorter = [str(PurePosixPath(*p[-k:])) if p else "" for p in parents]
            if len(set(shorter)) == len(shorter):
                tails = shorter
                break
        for row, tail in zip(same, tails, strict=True):
            row.label = f"{label} ({tail or '?'})"


def _stats_row(r: sqlite3.Row) -> StatsRow:
    """A row of `report`'s query: the key, the SUMS (NULL sums of counts are 0, of costs None)."""

    def count(name: str) -> int:
        return int(r[name] or 0)

    return StatsRow(
        period=str(r["period"]),
        sessions=count("sessions"),
        messages=count("messages"),
        api_messages=count("api_messages"),
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_creation_tokens=count("cache_creation_tokens"),
        cache_read_tokens=count("cache_read_tokens"),
        cost_usd=r["cost_usd"],
        unpriced_messages=count("unpriced_messages"),
        tool_calls=count("tool_calls"),
        failed_tool_calls=count("failed_tool_calls"),
        lines_added=count("lines_added"),
        lines_removed=count("lines_removed"),
    )


def _titles(conn: sqlite3.Connection, ids: list[str]) -> dict[str, str]:
    """Each session's name as everywhere else (`query.display_title`), for the by-session rows."""
    from types import SimpleNamespace

    from ..read.query import display_title

    found: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        for row in fetch(
            conn,
            "SELECT id, is_subagent, task_description, title, first_prompt FROM agent_sessions "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(ids[start : start + 500]).decode(),),
        ):
            found[row["id"]] = display_title(SimpleNamespace(**dict(row)))[:120]
    return found


def parse_day(value: str, *, end: bool = False, now: float | None = None) -> int:
    """A local day ('2026-03-01', 'today', 'yesterday', '7d', '2w', '3m') as unix ms: its start,
    or with `end` the start of the next day (so `--until` takes its whole day). ValueError when
    the text is none of those."""
    today = datetime.fromtimestamp(time.time() if now is None else now).date()
    text = value.strip().lower()
    m = re.fullmatch(r"(\d+)\s*([dwm])", text)
    if text in ("today", "yesterday"):
        day = today - timedelta(days=1 if text == "yesterday" else 0)
    elif m:
        days = int(m.group(1)) * {"d": 1, "w": 7, "m": 30}[m.group(2)]
        day = today - timedelta(days=days)
    else:
        try:
            day = date.fromisoformat(text)
        except ValueError:
            raise ValueError(f"{value!r} is not a day (2026-03-01, today, yesterday, 7d, 2w, 3m)") from None
    if end:
        day += timedelta(days=1)
    return int(datetime(day.year, day.month, day.day).timestamp() * 1000)
