"""Turns normalized records into sessions, turns, tool calls and usage.

The same code serves the incremental path (new records of one file, state loaded lazily from the
database) and the rebuild path (all records of some sessions replayed from `entries.raw`), so a
schema bump or a rewritten source file always converges to what a fresh ingest would give.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Any

import orjson

from ..adapters.base import (
    Adapter,
    FileContext,
    RawRecord,
    Record,
    SpawnFacts,
    StoredFile,
    disk_name,
    normalized,
)
from ..base.text import folder_name, is_bare_command, project_folder, prompt_title, recased
from ..insight import refresh
from ..insight.stats import BUCKET_MS, mark_since, mark_stale, quarter_hour
from ..store.db import TITLE_TYPES_SQL
from ..store.derived import CHECKPOINTS, REPLAYED_TABLES
from ..store.rows import values
from ..store.sql import transaction

SESSION_COLUMNS = (
    "id",
    "source",
    "model",
    "project",
    "project_path",
    "created_at",
    "ended_at",
    "message_count",
    "parent_session_id",
    "parent_message_id",
    "tool_call_id",
    "task_description",
    "task_status",
    "is_subagent",
    "is_agentic",
    "workspace_path",
    "external_id",
    "kind",
    "agent_id",
    "agent_type",
    "is_warmup",
    "first_prompt",
    "git_branch",
    "cli_version",
    "turn_count",
    "tool_call_count",
    "compaction_count",
    "forked_from_session_id",
    "spawn_key",
    "source_file_id",
    "updated_at",
)
TURN_COLUMNS = (
    "id",
    "session_id",
    "parent_turn_id",
    "query_message_ids",
    "response_message_id",
    "model",
    "timestamp",
    "has_children",
    "tool_call_count",
    "started_at",
    "sequence",
    "child_count",
    "last_entry_uuid",
)
SESSION_INFO_FIELDS = (
    "source",
    "external_id",
    "kind",
    "is_subagent",
    "parent_session_id",
    "agent_id",
    "agent_type",
    "task_description",
    "tool_call_id",
    "spawn_key",
    "parent_message_id",
)
# a session's naming records, found through the partial index ix_entries_titles
TITLES_SQL = (
    "SELECT entry_type, content FROM entries WHERE session_id = ? AND content IS NOT NULL "
    f"AND entry_type IN {TITLE_TYPES_SQL} AND dup_of IS NULL ORDER BY id"
)
TITLE_PRIORITY = ("custom-title", "custom-title-file", "ai-title", "summary", "agent-name")
TOOL_CALL_COLUMNS = (
    "id",
    "message_id",
    "session_id",
    "tool_name",
    "tool_number",
    "params_json",
    "status",
    "started_at",
    "entry_id",
    "turn_id",
    "result_json",
    "completed_at",
    "result_entry_id",
    "child_agent_id",
)
USAGE_COLUMNS = (
    "message_id",
    "request_id",
    "session_id",
    "turn_id",
    "entry_id",
    "model",
    "is_sidechain",
    "input_tokens",
    "output_tokens",
    "cache_creation_tokens",
    "cache_read_tokens",
    "timestamp",
    "recorded_cost_usd",
    "cache_write_1h_tokens",
    "web_searches",
)


@dataclass(slots=True, eq=False)
class SessionState:
    """One agent_sessions row being built (its columns, SESSION_COLUMNS) and what placing records
    in it needs to remember while its file is read."""

    id: str
    source: str | None = None
    model: str | None = None
    project: str | None = None
    project_path: str | None = None
    created_at: int | None = None
    ended_at: int | None = None
    message_count: int = 0
    parent_session_id: str | None = None
    parent_message_id: str | None = None
    tool_call_id: str | None = None
    task_description: str | None = None
    task_status: str | None = None
    is_subagent: int = 0
    is_agentic: int = 0
    workspace_path: str | None = None
    external_id: str | None = None
    kind: str | None = "main"
    agent_id: str | None = None
    agent_type: str | None = None
    is_warmup: int = 0
    first_prompt: str | None = None
    git_branch: str | None = None
    cli_version: str | None = None
    turn_count: int = 0
    tool_call_count: int = 0
    compaction_count: int = 0
    forked_from_session_id: str | None = None
    spawn_key: str | None = None
    source_file_id: int | None = None
    updated_at: int | None = None
    # not stored: the turn new records continue, whether the state came from the database (its
    # records are looked up there too), whether records may be copies of stored ones, the first
    # prompt was a bare command, and each uuid's (entry id, fingerprint) and turn met so far
    last_turn: str | None = None
    loaded_from_db: bool = False
    probe_dups: bool = False
    bare_first: bool = False
    uuids: dict[str, tuple[int, tuple[Any, ...]]] = field(default_factory=dict)
    uuid_turn: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> SessionState:
        return cls(**dict(zip(SESSION_COLUMNS, row, strict=True)))

    def row(self) -> tuple[Any, ...]:
        return _session_row(self)


@dataclass(slots=True, eq=False)
class TurnState:
    """One agent_turns row being built (TURN_COLUMNS)."""

    id: str
    session_id: str
    parent_turn_id: str | None
    query_message_ids: str
    response_message_id: str | None
    model: str | None
    timestamp: int | None
    has_children: int
    tool_call_count: int
    started_at: int | None
    sequence: int
    child_count: int
    last_entry_uuid: str | None

    def row(self) -> tuple[Any, ...]:
        return _turn_row(self)


@dataclass(slots=True, eq=False)
class PendingToolCall:
    """A call met in the file being read (TOOL_CALL_COLUMNS); a result met in the same file
    completes it here, so it is written by one INSERT rather than an INSERT and an UPDATE."""

    id: str
    message_id: str | None
    session_id: str
    tool_name: str
    tool_number: int | None
    params_json: str | None
    status: str
    started_at: int | None
    entry_id: int
    turn_id: str | None
    result_json: str | None = None
    completed_at: int | None = None
    result_entry_id: int | None = None
    child_agent_id: str | None = None

    def row(self) -> tuple[Any, ...]:
        return _tool_call_row(self)


@dataclass(slots=True, eq=False)
class PendingUsage:
    """One API message's token counts (USAGE_COLUMNS); its streaming chunks merge here first."""

    message_id: str
    request_id: str | None
    session_id: str
    turn_id: str | None
    entry_id: int
    model: str | None
    is_sidechain: int
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    timestamp: int | None
    recorded_cost_usd: float | None
    cache_write_1h_tokens: int
    web_searches: int

    def merge(self, other: PendingUsage) -> None:
        """Another record of the same API message, as the upsert in `Ledger.flush` would combine them."""
        if self.timestamp is None or (other.timestamp is not None and other.timestamp < self.timestamp):
            self.timestamp = other.timestamp  # the message's first chunk
        if other.recorded_cost_usd is not None:
            self.recorded_cost_usd = max(self.recorded_cost_usd or 0.0, other.recorded_cost_usd)
        # token counts: streaming chunks repeat or grow them
        self.input_tokens = max(self.input_tokens, other.input_tokens)
        self.output_tokens = max(self.output_tokens, other.output_tokens)
        self.cache_creation_tokens = max(self.cache_creation_tokens, other.cache_creation_tokens)
        self.cache_read_tokens = max(self.cache_read_tokens, other.cache_read_tokens)
        self.cache_write_1h_tokens = max(self.cache_write_1h_tokens, other.cache_write_1h_tokens)
        self.web_searches = max(self.web_searches, other.web_searches)
        if self.is_sidechain == 1 and other.is_sidechain == 0:  # the main chain's copy owns the message
            self.session_id, self.turn_id = other.session_id, other.turn_id
        self.is_sidechain = min(self.is_sidechain, other.is_sidechain)

    def row(self) -> tuple[Any, ...]:
        return _usage_row(self)


# rows for executemany, in the order of their column lists (attrgetter: one C call per row)
_session_row = attrgetter(*SESSION_COLUMNS)
_turn_row = attrgetter(*TURN_COLUMNS)
_tool_call_row = attrgetter(*TOOL_CALL_COLUMNS)
_usage_row = attrgetter(*USAGE_COLUMNS)


class Ledger:
    """Derived-table state for the sessions touched during one ingest run."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.sessions: dict[str, SessionState] = {}
        # by (session, turn id): a session copied whole holds its source's turn ids
        self.turns: dict[tuple[str, str], TurnState] = {}
        self.touched: set[str] = set()
        self.summaries_added = False
        self.titled: set[str] = set()  # sessions a side file of this file titles (Copilot's workspace.yaml)
        self._file_id: int | None = None
        self._keep_tool_io = True
        self._kept_inputs: frozenset[str] = frozenset()
        # new calls by (session, tool id): sessions repeat each other's tool ids (forks, side questions),
        # each keeps its own; a result met in the same file fills its call in place (one INSERT, no UPDATE)
        self._tool_inserts: dict[tuple[str, str], PendingToolCall] = {}
        self._tool_updates: list[tuple[Any, ...]] = []
        self._usage: dict[str, PendingUsage] = {}  # by message id: streaming chunks merged before the upsert
        self._messages: dict[tuple[str, int, str], int] = {}  # new messages by (session, bucket, model)
        self.pending_sessions: set[str] = set()
        # the turns whose API messages this run stored or changed, by session: finalize sums those
        # turns' tokens again, not every turn (an append costs what it adds); a session a killed run
        # left unfinished, or that a replay placed again, has every turn summed
        self.token_turns: dict[str, set[str]] = {}
        self.whole_sessions: set[str] = set(
            values(conn, "SELECT session_id FROM derived_pending WHERE kind = 'finalize'")
        )
        self.all_whole = False
        # the earliest quarter hour each session's facts (API messages, messages, calls) changed in
        # this run: the stats sum that and what follows again (None: every one); and what the sums
        # also read of a session and its turns, as the run found it (a change there: every one)
        self.stats_since: dict[str, int | None] = {}
        self._session_basis: dict[str, tuple[Any, ...]] = {}
        self._turn_basis: dict[tuple[str, str], tuple[str | None, int]] = {}
        self._eid = 0
        # the uuids of the chunk being placed, and which of them the database already holds
        # (asked once per chunk, the first time a record needs the copy check)
        self._chunk_uuids: list[str] | None = None
        self._in_db: set[str] | None = None

    # -------------------------------------------------------------- per file

    def begin_file(
        self, source_file_id: int, keep_tool_io: bool = True, kept_inputs: frozenset[str] = frozenset()
    ) -> None:
        """`keep_tool_io=False`: the file's adapter can re-read a tool call's input and result from
        their records (`tool_io_in_record`), so `params_json` (but for the tools in `kept_inputs`,
        whose input the ledger reads itself) and `result_json` stay NULL rather than copying them."""
        self._file_id = source_file_id
        self._keep_tool_io = keep_tool_io
        self._kept_inputs = kept_inputs
        self._chunk_uuids = self._in_db = None

    def begin_chunk(self, uuids: list[str]) -> None:
        """The uuids of the records about to be placed: whether copies of them are stored is asked
        of the database for all at once rather than record by record (an append to a long
        session probed each of its ~500 new records)."""
        self._chunk_uuids, self._in_db = uuids, None

    def _maybe_stored(self, uuid: str) -> bool:
        if self._chunk_uuids is None:
            return True
        if self._in_db is None:
            self._in_db = {
                r[0]
                for r in self.conn.execute(
                    "SELECT uuid FROM entries WHERE uuid IN (SELECT value FROM json_each(?))",
                    (orjson.dumps(self._chunk_uuids).decode(),),
                )
            }
        return uuid in self._in_db

    def place(self, entry_id: int, rec: Record) -> tuple[int | None, str | None, int | None]:
        """Account for one record; returns its (seq, turn_id, dup_of) for the entries row.

        A record this fails on (a bug, or a shape nobody foresaw) is left out of the derived tables
        with the failure noted in its `parse_error`, rather than failing its whole file."""
        try:
            return self._place(entry_id, rec)
        except Exception as exc:
            note = f"left out of its session: {type(exc).__name__}: {exc}"[:500]
            rec.parse_error = f"{rec.parse_error}; {note}" if rec.parse_error else note
            return None, None, None

    @staticmethod
    def _reach_time(sess: SessionState, sid: str, rec: Record, ts: int) -> None:
        """Widen the session's span to `ts`. A fork starts when it was forked: the newest time of
        its records that name the session it came from (a Claude fork's copies with `forkedFrom`,
        the last one stamped when it was written; Codex's first `session_meta`). Its copies dated
        before that are its source's history, not its activity: a fork made today of a 2025
        session lasted 697 days and began in 2025."""
        marked = bool(rec.forked_from_session_id) and rec.forked_from_session_id != sid
        if marked:
            if sess.created_at is None or ts > sess.created_at:
                sess.created_at = ts
        elif sess.created_at is None or (ts < sess.created_at and not sess.forked_from_session_id):
            sess.created_at = ts
        if sess.ended_at is None or ts > sess.ended_at:
            sess.ended_at = ts

    def _place(self, entry_id: int, rec: Record) -> tuple[int | None, str | None, int | None]:
        sid = rec.session_id
        if sid is None or rec.side_file:
            if sid is not None and rec.title is not None:  # a side file that names its session
                self.titled.add(sid)
            return None, None, None
        sess = self._session(sid, rec)
        self._eid = entry_id
        if rec.uuid:
            # A copy of a record (a resumed session repeats earlier lines with their uuids) is kept
            # in entries but counted once; same uuid with different content is not a copy.
            fingerprint = (rec.entry_type, rec.message_id, rec.content)
            seen = sess.uuids.get(rec.uuid)
            dup = seen[0] if seen is not None and seen[1] == fingerprint else None
            if seen is None and sess.probe_dups and self._maybe_stored(rec.uuid):
                row = self.conn.execute(
                    "SELECT id FROM entries WHERE uuid = ? AND session_id = ? AND dup_of IS NULL AND id < ? "
                    "AND entry_type IS ? AND message_id IS ? AND content IS ? LIMIT 1",
                    (rec.uuid, sid, entry_id, *fingerprint),
                ).fetchone()
                dup = row[0] if row else None
            if dup is not None:
                return None, None, dup
        self.touched.add(sid)
        ts = rec.timestamp
        if ts is not None and rec.entry_type not in ("queue-operation",):
            self._reach_time(sess, sid, rec, ts)
        if rec.cwd and (not sess.project_path or recased(sess.workspace_path, rec.cwd)):
            sess.project_path = project_folder(rec.cwd)
            sess.project = folder_name(sess.project_path)
            sess.workspace_path = rec.cwd
        if rec.git_branch:
            sess.git_branch = rec.git_branch
        if rec.version:
            sess.cli_version = rec.version
        if rec.model and rec.model != "<synthetic>":
            sess.model = rec.model
        if (
            rec.forked_from_session_id
            and not sess.forked_from_session_id
            and rec.forked_from_session_id != sid
        ):
            sess.forked_from_session_id = rec.forked_from_session_id
            if sess.kind == "main":
                sess.kind = "fork"  # shown under the session it was forked from
                sess.parent_session_id = rec.forked_from_session_id
        if rec.session is not None:
            if sess.source == "unknown":  # begun by a record that said nothing of it (a first line cut short)
                sess.source = rec.session.source
            for name in SESSION_INFO_FIELDS:
                value = getattr(rec.session, name)
                if value is None:
                    continue
                current = getattr(sess, name)
                if name == "is_subagent":
                    sess.is_subagent = max(current or 0, value)
                elif current is None or (name == "kind" and current == "main"):
                    setattr(sess, name, value)
        if rec.is_compaction:
            sess.compaction_count += 1
        if rec.title is not None:
            self.summaries_added = True

        seq = None
        if rec.is_message:
            if not sess.message_count:  # its file is the one its first message is in (a subagent's
                sess.source_file_id = self._file_id  # .meta.json may be written before its log)
            seq = sess.message_count
            sess.message_count += 1
            # its count in the stats, by quarter hour and the model in use (this one's, if it has one)
            counted = (sid, ts // BUCKET_MS if ts is not None else -1, sess.model or "")
            self._messages[counted] = self._messages.get(counted, 0) + 1

        turn_id = self._place_in_turn(entry_id, rec, sess)
        if rec.uuid:
            sess.uuids.setdefault(rec.uuid, (entry_id, (rec.entry_type, rec.message_id, rec.content)))
            sess.uuid_turn[rec.uuid] = turn_id

        owner_uuid, owner_entry = rec.uuid, entry_id
        if rec.update_of and rec.tool_uses:
            found = self._entry_of(sess, rec.update_of)
            if found is not None:
                owner_uuid, owner_entry = rec.update_of, found
        for use in rec.tool_uses:
            sess.tool_call_count += 1
            sess.is_agentic = 1
            # a call shown on another record keeps its input: readers re-read inputs from the call's own record
            kept = (
                self._keep_tool_io
                or rec.shortened
                or use.name in self._kept_inputs
                or owner_entry != entry_id
            )
            key = (sid, use.id)
            if key not in self._tool_inserts:
                self._tool_inserts[key] = PendingToolCall(
                    use.id,
                    owner_uuid,
                    sid,
                    use.name,
                    use.number,
                    use.input_json if kept else None,
                    "pending",
                    ts,
                    owner_entry,
                    turn_id,
                )
        for result in rec.tool_results:
            content = result.content_json if self._keep_tool_io or rec.shortened else None
            call = self._tool_inserts.get((sid, result.tool_use_id))
            if call is not None:
                call.result_json, call.completed_at, call.result_entry_id = content, ts, entry_id
                call.status = result.status
                if result.child_agent_id is not None:
                    call.child_agent_id = result.child_agent_id
            else:
                self._tool_updates.append(
                    (content, result.status, ts, entry_id, result.child_agent_id, result.tool_use_id, sid)
                )
        for u in [rec.usage, *rec.more_usage] if rec.usage is not None else rec.more_usage:
            usage = PendingUsage(
                u.message_id,
                u.request_id,
                sid,
                turn_id,
                entry_id,
                u.model or rec.model,
                int(rec.is_sidechain),
                u.input_tokens,
                u.output_tokens,
                u.cache_creation_tokens,
                u.cache_read_tokens,
                rec.timestamp,
                u.cost_usd,
                u.cache_write_1h_tokens,
                u.web_searches,
            )
            seen_usage = self._usage.get(u.message_id)
            if seen_usage is None:
                self._usage[u.message_id] = usage
            else:
                seen_usage.merge(usage)
        return seq, turn_id, None

    def _place_in_turn(self, entry_id: int, rec: Record, sess: SessionState) -> str | None:
        if rec.is_prompt:
            new_turn = rec.uuid or f"entry-{entry_id}"
            parent_turn = self._turn_of(sess, rec.parent_uuid)
            if parent_turn is None and rec.parent_uuid is None and rec.logical_parent_uuid:
                parent_turn = self._turn_of(sess, rec.logical_parent_uuid)
            if rec.uuid is None and rec.parent_uuid is None and rec.logical_parent_uuid is None:
                # a record naming no uuid is in a file with no tree, written in order: not a root
                # (each such prompt read as a branch of its own) but the turn after the last
                parent_turn = sess.last_turn
            parent_turn = self._after_local_commands(sess, parent_turn)
            self.turns[(sess.id, new_turn)] = TurnState(
                id=new_turn,
                session_id=sess.id,
                parent_turn_id=parent_turn,
                query_message_ids=orjson.dumps([rec.uuid] if rec.uuid else []).decode(),
                response_message_id=None,
                model=None,
                timestamp=rec.timestamp,
                has_children=0,
                tool_call_count=0,
                started_at=rec.timestamp,
                sequence=sess.turn_count,
                child_count=0,
                last_entry_uuid=rec.uuid,
            )
            sess.turn_count += 1
            sess.last_turn = new_turn
            if rec.content and (
                sess.first_prompt is None or (sess.bare_first and not is_bare_command(rec.content))
            ):
                # the first prompt names the session, unless it was a bare `/clear`-like command
                sess.bare_first = is_bare_command(rec.content)
                if sess.first_prompt is None:
                    sess.is_warmup = int(rec.content.strip() == "Warmup")
                sess.first_prompt = rec.content[:2000]
            if parent_turn is not None:
                parent = self._turn(sess.id, parent_turn)
                if parent is not None:
                    parent.child_count += 1
                    parent.has_children = 1
            return new_turn
        turn_id = None
        if rec.parent_uuid:
            turn_id = self._turn_of(sess, rec.parent_uuid)
        elif rec.logical_parent_uuid:
            turn_id = self._turn_of(sess, rec.logical_parent_uuid)
        if turn_id is None and rec.parent_uuid is not None:
            turn_id = sess.last_turn
        if turn_id is None and not rec.uuid and rec.is_message:
            turn_id = sess.last_turn
        if turn_id is None:
            return None
        turn = self._turn(sess.id, turn_id)
        if turn is None:
            return turn_id
        if rec.is_message and rec.uuid and not rec.segment_marker:
            turn.last_entry_uuid = rec.uuid
            if rec.timestamp is not None:
                turn.timestamp = max(turn.timestamp or 0, rec.timestamp)
        if rec.role == "assistant":
            turn.response_message_id = rec.uuid
            if rec.model and rec.model != "<synthetic>":
                turn.model = rec.model
        turn.tool_call_count += len(rec.tool_uses)
        return turn_id

    def _after_local_commands(self, sess: SessionState, parent_turn: str | None) -> str | None:
        """The turn a prompt follows: the last of the local commands run just before it (`/doctor`,
        `/status`, `! ls`, no reply) when they all hang off `parent_turn` too. Claude Code gives each
        such command, and the prompt after them, the parent of the caveat it wrote before them: read
        as written, three commands in a row were three branches, rewinds the user never made."""
        turn_id = sess.last_turn
        while turn_id is not None and turn_id != parent_turn:
            turn = self._turn(sess.id, turn_id)
            if turn is None or turn.response_message_id is not None:
                return parent_turn
            from ..base.markup import is_local_command  # its parser loads only where a command may be

            if not is_local_command(self._prompt_text(sess, turn_id)):
                return parent_turn
            if turn.parent_turn_id == parent_turn:
                return sess.last_turn
            turn_id = turn.parent_turn_id
        return parent_turn

    def _prompt_text(self, sess: SessionState, turn_id: str) -> str | None:
        """The text of the prompt that started a turn (a turn is named by its prompt's uuid)."""
        seen = sess.uuids.get(turn_id)
        if seen is not None:
            text: str | None = seen[1][2]
            return text
        row = self.conn.execute(
            "SELECT content FROM entries WHERE uuid = ? AND session_id = ? AND dup_of IS NULL LIMIT 1",
            (turn_id, sess.id),
        ).fetchone()
        return str(row[0]) if row and row[0] is not None else None

    def _entry_of(self, sess: SessionState, uuid: str) -> int | None:
        """The entry id of the (first, uncopied) record with this uuid in the session."""
        seen = sess.uuids.get(uuid)
        if seen is not None:
            return seen[0]
        row = self.conn.execute(
            "SELECT id FROM entries WHERE uuid = ? AND session_id = ? AND dup_of IS NULL AND id < ? ORDER BY id LIMIT 1",
            (uuid, sess.id, self._eid),
        ).fetchone()
        return row[0] if row else None

    def _turn_of(self, sess: SessionState, uuid: str | None) -> str | None:
        if not uuid:
            return None
        cache = sess.uuid_turn
        if uuid in cache:
            return cache[uuid]
        if not sess.loaded_from_db and not sess.probe_dups:
            return None
        row = self.conn.execute(
            "SELECT turn_id FROM entries WHERE uuid = ? AND session_id = ? AND dup_of IS NULL AND id < ? LIMIT 1",
            (uuid, sess.id, self._eid),
        ).fetchone()
        turn_id = row[0] if row else None
        cache[uuid] = turn_id
        return turn_id

    def _turn(self, sid: str, turn_id: str) -> TurnState | None:
        key = (sid, turn_id)
        turn = self.turns.get(key)
        if turn is None:
            cur = self.conn.execute(
                f"SELECT {', '.join(TURN_COLUMNS)} FROM agent_turns WHERE id = ? AND session_id = ?",
                key[::-1],
            )
            row = cur.fetchone()
            if row is None:
                return None
            turn = TurnState(*row)
            self.turns[key] = turn
            self._turn_basis.setdefault(key, (turn.model, turn.tool_call_count))
        return turn

    def _session(self, sid: str, rec: Record) -> SessionState:
        sess = self.sessions.get(sid)
        if sess is not None:
            return sess
        row = self.conn.execute(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM agent_sessions WHERE id = ?", (sid,)
        ).fetchone()
        if row is not None:
            sess = SessionState.from_row(row)
            self._session_basis.setdefault(sid, _stats_basis(sess))
            last = self.conn.execute(
                "SELECT id FROM agent_turns WHERE session_id = ? ORDER BY sequence DESC LIMIT 1", (sid,)
            ).fetchone()
            sess.last_turn = last[0] if last else None
            # a session that already holds records from another file may receive copies of them
            sess.loaded_from_db = sess.probe_dups = True
        else:
            sess = SessionState(
                sid, source=rec.session.source if rec.session else "unknown", source_file_id=self._file_id
            )
        sess.bare_first = bool(sess.first_prompt and is_bare_command(sess.first_prompt))
        self.sessions[sid] = sess
        return sess

    def flush(self) -> None:
        """Write what this file changed (inside the caller's transaction)."""
        conn = self.conn
        for pending in self._tool_inserts.values():
            self._reach(pending.session_id, pending.started_at)
        for *_, tool_use_id, sid in self._tool_updates:  # a result for a call stored before: its status
            started = conn.execute(
                "SELECT started_at FROM agent_tool_calls WHERE id = ? AND session_id = ?", (tool_use_id, sid)
            ).fetchone()
            self._reach(sid, started[0] if started else None)
        for sid, bucket, _ in self._messages:
            self._reach(sid, bucket * BUCKET_MS if bucket != -1 else None)
        for key, turn in self.turns.items():
            model, calls = self._turn_basis.get(key, (turn.model, 0))
            if calls and model != turn.model:  # its calls were counted under the model it had
                self.stats_since[turn.session_id] = None
        if self._tool_inserts:
            conn.executemany(
                f"INSERT OR IGNORE INTO agent_tool_calls ({', '.join(TOOL_CALL_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(TOOL_CALL_COLUMNS))})",
                [call.row() for call in self._tool_inserts.values()],
            )
            self._tool_inserts.clear()
        if self._tool_updates:
            conn.executemany(
                "UPDATE agent_tool_calls SET result_json = ?, status = ?, completed_at = ?, result_entry_id = ?, "
                "child_agent_id = COALESCE(?, child_agent_id) WHERE id = ? AND session_id = ?",
                self._tool_updates,
            )
            self._tool_updates.clear()
        if self._usage:
            self._note_token_turns()
            conn.executemany(
                f"INSERT INTO agent_usage ({', '.join(USAGE_COLUMNS)}) VALUES ({', '.join('?' * len(USAGE_COLUMNS))}) "
                "ON CONFLICT(message_id) DO UPDATE SET "
                "output_tokens = max(output_tokens, excluded.output_tokens), "
                "input_tokens = max(input_tokens, excluded.input_tokens), "
                "cache_creation_tokens = max(cache_creation_tokens, excluded.cache_creation_tokens), "
                "cache_read_tokens = max(cache_read_tokens, excluded.cache_read_tokens), "
                "cache_write_1h_tokens = max(cache_write_1h_tokens, excluded.cache_write_1h_tokens), "
                "web_searches = max(web_searches, excluded.web_searches), "
                "session_id = CASE WHEN is_sidechain = 1 AND excluded.is_sidechain = 0 THEN excluded.session_id ELSE session_id END, "
                "turn_id = CASE WHEN is_sidechain = 1 AND excluded.is_sidechain = 0 THEN excluded.turn_id ELSE turn_id END, "
                "is_sidechain = min(is_sidechain, excluded.is_sidechain), "
                "timestamp = coalesce(min(timestamp, excluded.timestamp), timestamp, excluded.timestamp), "
                "recorded_cost_usd = coalesce(max(recorded_cost_usd, excluded.recorded_cost_usd), "
                "recorded_cost_usd, excluded.recorded_cost_usd), "
                "priced = 0",  # its counts may have grown: priced again (core.insight.cost.price_pending)
                [usage.row() for usage in self._usage.values()],
            )
            self._usage.clear()
        if self._messages:
            conn.executemany(
                "INSERT INTO stats_messages (session_id, bucket, model, messages) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(session_id, bucket, model) DO UPDATE SET messages = messages + excluded.messages",
                [(*key, count) for key, count in self._messages.items()],
            )
            self._messages.clear()
        now = int(time.time() * 1000)
        rows = []
        for sid in self.touched:
            sess = self.sessions[sid]
            sess.updated_at = now
            rows.append(sess.row())
        if rows:
            placeholders = ", ".join("?" * len(SESSION_COLUMNS))
            updates = ", ".join(f"{c} = excluded.{c}" for c in SESSION_COLUMNS if c != "id")
            conn.executemany(
                f"INSERT INTO agent_sessions ({', '.join(SESSION_COLUMNS)}) VALUES ({placeholders}) "
                f"ON CONFLICT(id) DO UPDATE SET {updates}",
                rows,
            )
        if self.turns:
            placeholders = ", ".join("?" * len(TURN_COLUMNS))
            updates = ", ".join(f"{c} = excluded.{c}" for c in TURN_COLUMNS if c not in ("id", "session_id"))
            conn.executemany(
                f"INSERT INTO agent_turns ({', '.join(TURN_COLUMNS)}) VALUES ({placeholders}) "
                f"ON CONFLICT(id, session_id) DO UPDATE SET {updates}",
                [turn.row() for turn in self.turns.values()],
            )
        # marked in the file's own transaction: a run killed before `finalize` leaves them to the next
        conn.executemany(
            "INSERT OR IGNORE INTO derived_pending (kind, session_id) VALUES ('finalize', ?)",
            [(sid,) for sid in self.touched | self.titled],
        )
        if self.summaries_added:
            conn.execute("INSERT OR IGNORE INTO derived_pending (kind, session_id) VALUES ('summaries', '')")
        self.pending_sessions |= self.touched | self.titled
        self.touched = set()
        self.titled = set()
        self._chunk_uuids = self._in_db = None
        self.turns = {}
        # State now lives in the database; a session met again in a later file is reloaded from it
        # and probes for copied records, which keeps memory bounded by the largest file.
        self.sessions = {}

    def _note_token_turns(self) -> None:
        """The turns whose tokens the pending usage rows change: theirs, and the turns the rows they
        update were in (a row moves from a sidechain's turn to the main chain's); and where in time
        they change the stats."""
        for usage in self._usage.values():
            self._reach(usage.session_id, usage.timestamp)
            if usage.turn_id is not None:
                self.token_turns.setdefault(usage.session_id, set()).add(usage.turn_id)
        stored = self.conn.execute(
            "SELECT session_id, turn_id, timestamp FROM agent_usage WHERE message_id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(list(self._usage)).decode(),),
        )
        for session_id, turn_id, timestamp in stored:
            self._reach(session_id, timestamp)
            if turn_id is not None:
                self.token_turns.setdefault(session_id, set()).add(turn_id)
            self.pending_sessions.add(session_id)

    def _reach(self, session_id: str, timestamp: int | None) -> None:
        """A fact of this session at `timestamp` changed (None: at its start, or no time of its own)."""
        if session_id in self.stats_since and self.stats_since[session_id] is None:
            return
        if timestamp is None:
            self.stats_since[session_id] = None
            return
        bucket = quarter_hour(timestamp)
        known = self.stats_since.get(session_id, bucket)
        self.stats_since[session_id] = bucket if known is None else min(known, bucket)

    def rollback(self) -> None:
        """Forget in-memory state after a failed file so the next file reloads from the database."""
        self.sessions.clear()
        self.turns.clear()
        self.touched.clear()
        self._tool_inserts.clear()
        self._tool_updates.clear()
        self._usage.clear()
        self._messages.clear()

    # -------------------------------------------------------------- after all files

    def finalize(self) -> set[str]:
        """Cross-file facts: titles, subagent links, token totals, branch counts."""
        conn = self.conn
        # this run's sessions, and any a run killed before this point left marked (see `flush`)
        left = conn.execute("SELECT kind, session_id FROM derived_pending WHERE kind != 'signals'").fetchall()
        sessions = set(self.pending_sessions) | {sid for kind, sid in left if kind == "finalize"}
        summaries_added = self.summaries_added or any(kind == "summaries" for kind, _ in left)
        self.pending_sessions = set()
        if not sessions and not summaries_added:
            return sessions
        with transaction(conn):
            summaries = _summaries_by_session(conn)
            if summaries_added:
                sessions |= set(summaries)
            _link_subagents(conn, sessions)
            _link_side_questions(conn, sessions)
            for sid in sessions:
                whole = self.all_whole or sid in self.whole_sessions
                _finalize_session(
                    conn, sid, summaries.get(sid), None if whole else self.token_turns.get(sid, set())
                )
            # their totals in the stats (core.insight.stats.refresh_pending), from where their facts changed
            mark_since(conn, {sid: self._stats_reach(conn, sid) for sid in sessions})
            conn.execute("DELETE FROM derived_pending WHERE kind IN ('finalize', 'summaries')")
            # their signals next (`core.ingest.pipeline`), or on the next run if this one is killed first
            conn.executemany(
                "INSERT OR IGNORE INTO derived_pending (kind, session_id) VALUES ('signals', ?)",
                [(sid,) for sid in sessions],
            )
        self.summaries_added = False
        self.sessions.clear()
        self.token_turns.clear()
        self.whole_sessions.clear()
        self.all_whole = False
        self.stats_since.clear()
        self._session_basis.clear()
        self._turn_basis.clear()
        return sessions

    def _stats_reach(self, conn: sqlite3.Connection, sid: str) -> int | None:
        """The quarter hour from which the session's stats are summed again (None: all of them)."""
        basis = self._session_basis.get(sid)
        if self.all_whole or sid in self.whole_sessions or basis is None or sid not in self.stats_since:
            return None  # left by a killed run, replayed, new, or changed in what is not a fact
        row = conn.execute(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM agent_sessions WHERE id = ?", (sid,)
        ).fetchone()
        if row is None or _stats_basis(SessionState.from_row(row)) != basis:
            return None
        return self.stats_since[sid]


def _stats_basis(sess: SessionState) -> tuple[Any, ...]:
    """What the stats read of a session besides its facts: a change there changes every sum."""
    return (
        sess.created_at,
        sess.model,
        sess.project,
        sess.project_path,
        sess.source,
        sess.parent_session_id,
        sess.is_subagent,
    )


TURN_TOKENS = (
    "SELECT turn_id, CAST(total(input_tokens + output_tokens + cache_creation_tokens + cache_read_tokens) AS INTEGER) "
    "FROM agent_usage WHERE session_id = ? AND turn_id IS NOT NULL"
)


def _summaries_by_session(conn: sqlite3.Connection) -> dict[str, str]:
    """The newest summary of each session: the session that owns its leafUuid (any file)."""
    rows = conn.execute(
        "SELECT s.id, s.content, l.session_id FROM entries s JOIN entries l ON l.uuid = s.ref_uuid "
        "WHERE s.entry_type = 'summary' AND s.ref_uuid IS NOT NULL"  # served by ix_entries_summary
    ).fetchall()
    out: dict[str, str] = {}
    # by the summary's row alone: its leaf's uuid may be held by a record of no session too (the
    # line as it was before its file was rewritten), and None does not sort against an id
    for _, content, session_id in sorted(rows, key=lambda row: row[0]):
        if content and session_id:
            out[session_id] = content
    return out


def _finalize_session(
    conn: sqlite3.Connection, sid: str, summary: str | None, token_turns: set[str] | None = None
) -> None:
    """A session's title, token totals, branch count and inherited project; the tokens of the
    turns in `token_turns` (None: of every turn) summed again."""
    row = conn.execute(
        "SELECT first_prompt, project_path, parent_session_id FROM agent_sessions WHERE id = ?", (sid,)
    ).fetchone()
    if row is None:
        return
    first_prompt, project_path, parent = row
    titles: dict[str, str] = {}
    for etype, content in conn.execute(TITLES_SQL, (sid,)):
        titles[etype] = content
    if summary:
        titles["summary"] = summary
    title, source = None, None
    for name in TITLE_PRIORITY:
        if titles.get(name):
            title, source = titles[name], name
            break
    if title is None and first_prompt:
        title, source = prompt_title(first_prompt), "prompt"
    if source == "custom-title-file":
        source = "custom-title"
    tokens = conn.execute(
        # total() rather than sum(): a sum past 64 bits would fail the run ("integer overflow"),
        # while a float past them is cast to the largest integer
        "SELECT CAST(total(input_tokens) AS INTEGER), CAST(total(output_tokens) AS INTEGER), "
        "CAST(total(cache_creation_tokens) AS INTEGER), CAST(total(cache_read_tokens) AS INTEGER) "
        "FROM agent_usage WHERE session_id = ?",
        (sid,),
    ).fetchone()
    # each turn's tokens, written only where they changed: rewriting every turn of a long session
    # made appending to it cost in proportion to the session rather than to what was appended
    if token_turns is None:
        totals = dict(conn.execute(f"{TURN_TOKENS} GROUP BY turn_id", (sid,)))
        counts = conn.execute("SELECT id, token_count FROM agent_turns WHERE session_id = ?", (sid,))
    else:
        wanted = orjson.dumps(sorted(token_turns)).decode()
        totals = dict(
            conn.execute(
                f"{TURN_TOKENS} AND turn_id IN (SELECT value FROM json_each(?)) GROUP BY turn_id",
                (sid, wanted),
            )
        )
        counts = conn.execute(
            "SELECT id, token_count FROM agent_turns WHERE id IN (SELECT value FROM json_each(?)) AND session_id = ?",
            (wanted, sid),
        )
    changed = [
        (totals.get(turn_id, 0), turn_id, sid) for turn_id, count in counts if totals.get(turn_id, 0) != count
    ]
    if changed:
        conn.executemany("UPDATE agent_turns SET token_count = ? WHERE id = ? AND session_id = ?", changed)
    branch_points, roots = conn.execute(
        "SELECT COALESCE(sum(child_count >= 2), 0), COALESCE(sum(parent_turn_id IS NULL), 0) FROM agent_turns "
        "WHERE session_id = ?",
        (sid,),
    ).fetchone()
    if roots >= 2:
        branch_points += 1
    if not project_path and parent:
        inherited = conn.execute(
            "SELECT project, project_path FROM agent_sessions WHERE id = ?", (parent,)
        ).fetchone()
        if inherited and inherited[1]:
            conn.execute(
                "UPDATE agent_sessions SET project = ?, project_path = ?, workspace_path = ? WHERE id = ?",
                (inherited[0], inherited[1], inherited[1], sid),
            )
    conn.execute(
        "UPDATE agent_sessions SET title = ?, title_source = ?, input_tokens = ?, output_tokens = ?, "
        "cache_creation_tokens = ?, cache_read_tokens = ?, branch_count = ? WHERE id = ?",
        (title, source, *tokens, branch_points, sid),
    )


def _norm(text: str | None) -> str:
    return prompt_title(text or "").strip()


# The calls a subagent of `root` can have been spawned by: the root session's and its subagents'
# ("<root>:…"). A subagent's copy of one of the root's own calls (a side question repeats the
# conversation before it, tool ids included) spawned nothing and is left out.
TREE_CALLS = (
    "SELECT c.id, c.session_id, c.message_id, c.params_json, c.status FROM agent_tool_calls c "
    "WHERE (c.session_id = ? OR (c.session_id > ? AND c.session_id < ? AND NOT EXISTS ("
    "SELECT 1 FROM agent_tool_calls r WHERE r.id = c.id AND r.session_id = ?)))"
)
# the same calls with their tool's name and result (`Adapter.spawned_agents`)
TREE_CALLS_RESULT = TREE_CALLS.replace("c.status FROM", "c.status, c.tool_name, c.result_json FROM", 1)


def _spawner(agent: str | None) -> Adapter | None:
    """The adapter that says which of a subagent's parent's calls can have started it: its own
    agent's (one agent's spawn tool can be another's ordinary tool)."""
    from ..adapters import ADAPTERS

    return ADAPTERS.get(agent) if agent else None


def _tree_args(root: str) -> tuple[str, str, str, str]:
    return root, root + ":", root + ";", root


def _link_subagents(conn: sqlite3.Connection, touched: set[str]) -> None:
    """Join subagent sessions to the Task/Agent (or Workflow) call that spawned them.

    Link priority (FORMATS.md §1.7): the meta file's toolUseId, then the agentId the tool result
    reported, then the Task prompt equal to the subagent's first prompt.
    """
    roots = {sid.split(":", 1)[0] for sid in touched}
    if not roots:
        return
    found: dict[str, tuple[Any, ...]] = {}
    columns = "id, tool_call_id, spawn_key, first_prompt, agent_id, parent_session_id, task_status, source"
    for root in roots:
        # Claude subagents are named "<root>:agent-…" (a range on the primary key, not a LIKE scan);
        # other agents' subagents keep their own ids and name their parent, so look both ways.
        for row in conn.execute(
            f"SELECT {columns} FROM agent_sessions WHERE is_subagent = 1 AND id > ? AND id < ? "
            f"UNION SELECT {columns} FROM agent_sessions WHERE is_subagent = 1 AND (parent_session_id = ? OR id = ?)",
            (root + ":", root + ";", root, root),
        ):
            found[row[0]] = row
    if not found:
        return
    # a subagent whose call already points at it with the final status it has needs nothing: a
    # long session with a hundred subagents asked ~300 questions per append otherwise
    calls = {
        (r[0], r[1]): (r[2], r[3], r[4])
        for r in conn.execute(
            "SELECT session_id, id, child_session_id, status, tool_name FROM agent_tool_calls "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (orjson.dumps([row[1] for row in found.values() if row[1]]).decode(),),
        )
    }
    for (
        sid,
        tool_call_id,
        spawn_key,
        first_prompt,
        agent_id,
        parent_sid,
        task_status,
        agent,
    ) in found.values():
        adapter = _spawner(agent)
        linked = calls.get((parent_sid, tool_call_id)) if tool_call_id else None
        # a call that started several (a swarm) points at one of them; the others point at it
        several = linked is not None and adapter is not None and linked[2] in adapter.swarm_tools
        if (
            linked is not None
            and (linked[0] == sid or (several and linked[0] is not None))
            and linked[1] == task_status
            and task_status != "pending"
        ):
            continue
        root = parent_sid if ":" not in sid and parent_sid else sid.split(":", 1)[0]
        call = None
        if tool_call_id:
            call = conn.execute(
                f"{TREE_CALLS} AND c.id = ? ORDER BY c.session_id <> ?, c.session_id LIMIT 1",
                (*_tree_args(root), tool_call_id, root),
            ).fetchone()
        keys = [k for k in (spawn_key, agent_id) if k]
        for key in keys:
            if call is not None:
                break
            call = conn.execute(
                f"{TREE_CALLS} AND c.child_agent_id = ? ORDER BY c.started_at, c.session_id LIMIT 1",
                (*_tree_args(root), key),
            ).fetchone()
        if call is None and agent_id and adapter is not None and adapter.swarm_tools:
            # one call that started several subagents at once, whose result names each
            for candidate in conn.execute(
                f"{TREE_CALLS_RESULT} AND c.tool_name IN (SELECT value FROM json_each(?)) "
                "ORDER BY c.started_at, c.session_id",
                (*_tree_args(root), orjson.dumps(sorted(adapter.swarm_tools)).decode()),
            ):
                if agent_id in adapter.spawned_agents(candidate[6]):
                    call, several = candidate[:5], True
                    break
        if call is None and first_prompt and adapter is not None and adapter.spawn_tools:
            wanted = _norm(first_prompt)
            for candidate in conn.execute(
                f"{TREE_CALLS} AND c.tool_name IN (SELECT value FROM json_each(?)) "
                "AND (c.child_session_id IS NULL OR c.child_session_id = ?) ORDER BY c.started_at, c.session_id",
                (*_tree_args(root), orjson.dumps(sorted(adapter.spawn_tools)).decode(), sid),
            ):
                try:
                    params = orjson.loads(candidate[3] or "{}")
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(params, dict):
                    continue
                prompt = adapter.spawn_facts(params).prompt
                if prompt is not None and _norm(prompt) == wanted:
                    call = candidate
                    break
        if call is None or call[1] == sid:
            continue
        call_id, call_session, message_id, params_json, status = call
        try:
            params = orjson.loads(params_json or "{}")
        except orjson.JSONDecodeError:
            params = {}
        facts = (
            adapter.spawn_facts(params) if adapter is not None and isinstance(params, dict) else SpawnFacts()
        )
        description, agent_type, teammate = facts.description, facts.agent_type, facts.teammate
        conn.execute(
            "UPDATE agent_sessions SET tool_call_id = ?, parent_session_id = ?, parent_message_id = ?, "
            "task_description = COALESCE(task_description, ?), agent_type = COALESCE(agent_type, ?), "
            "task_status = ?, kind = CASE WHEN kind != 'subagent' THEN kind WHEN ? THEN 'teammate' "
            "WHEN ? THEN 'fork' ELSE kind END WHERE id = ?",  # a fork of its caller's conversation
            (call_id, call_session, message_id, description, agent_type, status, teammate, facts.fork, sid),
        )
        conn.execute(  # a call that started several points at the first linked
            "UPDATE agent_tool_calls SET child_session_id = CASE WHEN ? THEN COALESCE(child_session_id, ?) "
            "ELSE ? END WHERE id = ? AND session_id = ?",
            (several, sid, sid, call_id, call_session),
        )
        mark_stale(conn, [sid])  # its main session, in the stats, may be another now


def _link_side_questions(conn: sqlite3.Connection, touched: set[str]) -> None:
    """Hang each side question under the message of its parent session it was asked after.

    No call spawns one: its question names the record it follows, which is the parent's message
    when the conversation was copied before it; otherwise the parent's last message before the
    question's time is taken."""
    rows = []
    for root in {sid.split(":", 1)[0] for sid in touched}:  # a parent read later than its side question too
        rows += conn.execute(
            "SELECT s.id, s.parent_session_id, s.parent_message_id, t.started_at FROM agent_sessions s "
            "LEFT JOIN agent_turns t ON t.session_id = s.id AND t.sequence = 0 "
            "WHERE s.id > ? AND s.id < ? AND s.agent_type = 'side question' AND s.parent_session_id IS NOT NULL",
            (root + ":", root + ";"),
        ).fetchall()
    for sid, parent, message, asked_at in rows:
        if (
            message
            and conn.execute(
                "SELECT 1 FROM entries WHERE uuid = ? AND session_id = ? AND seq IS NOT NULL LIMIT 1",
                (message, parent),
            ).fetchone()
        ):
            continue
        found = None
        if asked_at is not None:
            found = conn.execute(
                "SELECT uuid FROM entries WHERE session_id = ? AND seq IS NOT NULL AND uuid IS NOT NULL "
                "AND timestamp <= ? ORDER BY seq DESC LIMIT 1",
                (parent, asked_at),
            ).fetchone()
        conn.execute(
            "UPDATE agent_sessions SET parent_message_id = ? WHERE id = ?", (found[0] if found else None, sid)
        )


def finish_derived(
    conn: sqlite3.Connection,
    changed: set[str] | frozenset[str] = frozenset(),
    *,
    on_signals: refresh.SessionsDone | None = None,
    on_embed: refresh.SessionsDone | None = None,
    timings: dict[str, float] | None = None,
) -> set[str]:
    """What is derived from the records, of a writer's `changed` sessions (finalized already) and of
    any a writer killed after committing its records left marked: titles and totals, costs, the
    stats' sums, episodes, signals. Every writer (ingest, sync, index) ends with it under the writer
    lock, so whichever runs next finishes a killed one's work. Returns every session finished;
    `timings` gets the signals' seconds ("signals") beside the episodes'."""
    changed = set(changed) | Ledger(conn).finalize()
    seconds = refresh.finish(conn, changed, on_signals=on_signals, on_embed=on_embed, timings=timings)
    if timings is not None:
        timings["signals"] = seconds
    return changed


# ------------------------------------------------------------------ rebuild


class ReplayCancelled(Exception):
    """A replay stopped between two files because its caller asked; its transaction is undone."""


# (files replayed, files to replay, bytes replayed, bytes to replay), after each file
ReplayProgress = Callable[[int, int, int, int], None]


def rebuild_derived(
    conn: sqlite3.Connection,
    sessions: set[str] | None = None,
    *,
    progress: ReplayProgress | None = None,
    cancel: threading.Event | None = None,
) -> set[str]:
    """Recompute derived tables (all, or for `sessions`) by replaying `entries.raw` in order.

    Raises ReplayCancelled, with nothing changed, when `cancel` is set during the replay."""
    with transaction(conn):
        ledger = Ledger(conn)
        replay(conn, ledger, sessions, progress=progress, cancel=cancel)
    return ledger.finalize()


def _stored_bytes(conn: sqlite3.Connection, file_id: int) -> bytes:
    """A file as the archive holds it (its current records), for a replay's adapters."""
    from ..read.archive import file_bytes

    return file_bytes(conn, file_id)[0]


def _kept_with(conn: sqlite3.Connection, session_id: str, name: str) -> dict[str, bytes]:
    """A session's side files of that name as the archive keeps them, for a replay's adapters."""
    from ..read.archive import kept_with

    return kept_with(conn, session_id, name)


def _archived(conn: sqlite3.Connection, pattern: str, starting: bytes | None) -> dict[str, list[bytes]]:
    """The archive's files matching a glob, as their records, for a replay's adapters."""
    from ..read.archive import archived_records

    return archived_records(conn, pattern, starting)


def _replay_order(
    conn: sqlite3.Connection, file_ids: list[int], files: dict[int, tuple[str, str, str, str | None]]
) -> list[int]:
    """`file_ids` with each agent's files put in the order its adapter reads them (`replay_order`),
    in the places its files held: a session's files are one agent's, the others stay where they are.
    An adapter that keeps the stored order is not asked (nothing built, nothing read)."""
    from ..adapters import adapter_for

    places: dict[str, list[int]] = {}
    for i, file_id in enumerate(file_ids):
        places.setdefault(files[file_id][1], []).append(i)
    ordered = list(file_ids)
    for agent, slots in places.items():
        adapter = adapter_for(agent)
        if type(adapter).replay_order is Adapter.replay_order:
            continue
        stored = [
            StoredFile(
                file_ids[i],
                Path(disk_name(files[file_ids[i]][0])),
                files[file_ids[i]][2],
                partial(_stored_bytes, conn, file_ids[i]),
            )
            for i in slots
        ]
        order = [f.id for f in adapter.replay_order(stored)]
        if sorted(order) != sorted(f.id for f in stored):
            raise ValueError(f"the {agent} adapter's replay order left out or repeated a file")
        for i, file_id in zip(slots, order, strict=True):
            ordered[i] = file_id
    return ordered


def replay(
    conn: sqlite3.Connection,
    ledger: Ledger,
    sessions: set[str] | None,
    *,
    progress: ReplayProgress | None = None,
    cancel: threading.Event | None = None,
) -> None:
    """Inside the caller's transaction: clear and re-derive the given sessions (None: all)."""
    from ..adapters import adapter_for

    if sessions is None:
        ledger.all_whole = True
        for table in REPLAYED_TABLES + CHECKPOINTS:
            conn.execute(f"DELETE FROM {table}")
        conn.execute("UPDATE entries SET seq = NULL, turn_id = NULL, dup_of = NULL")
        # a superseded version of a file (kind 'version') is in no session: its records stay as they are
        file_ids = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT source_file_id FROM entries WHERE source_file_id NOT IN "
                "(SELECT id FROM source_files WHERE kind = 'version') ORDER BY source_file_id"
            )
        ]
    else:
        sessions = {s for s in sessions if s is not None}
        ledger.whole_sessions |= sessions
        file_ids_set: set[int] = set()
        for sid in sessions:
            conn.execute("DELETE FROM agent_sessions WHERE id = ?", (sid,))
            conn.execute("DELETE FROM agent_turns WHERE session_id = ?", (sid,))
            conn.execute("DELETE FROM agent_tool_calls WHERE session_id = ?", (sid,))
            conn.execute("DELETE FROM agent_usage WHERE session_id = ?", (sid,))
            conn.execute("DELETE FROM agent_file_changes WHERE session_id = ?", (sid,))
            conn.execute("DELETE FROM stats_rollup WHERE session_id = ?", (sid,))
            conn.execute("DELETE FROM stats_messages WHERE session_id = ?", (sid,))
            for table in CHECKPOINTS:
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (sid,))
            conn.execute(
                "UPDATE entries SET seq = NULL, turn_id = NULL, dup_of = NULL WHERE session_id = ?", (sid,)
            )
            file_ids_set.update(
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT source_file_id FROM entries WHERE session_id = ?", (sid,)
                )
            )
        # files in the order they were first seen, so a rewritten file keeps its place; which copy of
        # a duplicated record counts is decided by entry id, whatever the replay order
        file_ids = sorted(file_ids_set)
    # then each agent's files in the order its adapter reads them today (an archive stored in an
    # older order replays as a fresh ingest reads the same files)
    files = {
        file_id: conn.execute(
            "SELECT path, agent, kind, project_key FROM source_files WHERE id = ?", (file_id,)
        ).fetchone()
        for file_id in file_ids
    }
    file_ids = _replay_order(conn, file_ids, files)
    sizes: dict[int, int] = {}
    if progress is not None:
        sizes = dict(conn.execute("SELECT id, bytes_ingested FROM source_files"))
    bytes_total, bytes_done = sum(sizes.get(f) or 0 for f in file_ids), 0
    for done, file_id in enumerate(file_ids):
        if cancel is not None and cancel.is_set():
            raise ReplayCancelled
        if progress is not None:
            progress(done, len(file_ids), bytes_done, bytes_total)
            bytes_done += sizes.get(file_id) or 0
        path, agent, kind, project_key = files[file_id]
        adapter = adapter_for(agent)
        ctx = FileContext(
            Path(disk_name(path)),
            kind,
            project_key,
            stored=partial(_stored_bytes, conn, file_id),
            kept_with=partial(_kept_with, conn),
            archived=partial(_archived, conn),
        )
        ledger.begin_file(
            file_id, keep_tool_io=not adapter.tool_io_in_record, kept_inputs=adapter.kept_inputs
        )
        updates = []
        rows = conn.execute(
            "SELECT id, byte_offset, line_number, raw, newline FROM entries WHERE source_file_id = ? ORDER BY byte_offset",
            (file_id,),
        ).fetchall()
        for eid, offset, line_number, raw, newline in rows:
            rec = normalized(adapter, RawRecord(offset, line_number, bytes(raw), bool(newline)), ctx)
            if sessions is not None and rec.session_id not in sessions:
                continue
            seq, turn_id, dup_of = ledger.place(eid, rec)
            updates.append(
                (
                    rec.session_id,
                    seq,
                    turn_id,
                    dup_of,
                    rec.content,
                    rec.thinking,
                    rec.tool_text,
                    rec.entry_type,
                    rec.subtype,
                    int(rec.known),
                    int(rec.is_meta),
                    rec.role,
                    rec.timestamp,
                    rec.model,
                    rec.ref_uuid,
                    eid,
                )
            )
        # what a record is and says is re-derived from its raw bytes too, so a newer adapter
        # refreshes it (a record it now knows, a side file it now reads a title from, an undo and
        # the message it took back from); the ids that link records (uuids, parents) stay as they
        # were read: what people wrote on them (tags, notes) follows them
        conn.executemany(
            "UPDATE entries SET session_id = ?, seq = ?, turn_id = ?, dup_of = ?, content = ?, thinking = ?, "
            "tool_text = ?, entry_type = ?, subtype = ?, known = ?, is_meta = ?, role = ?, timestamp = ?, "
            "model = ?, ref_uuid = ? WHERE id = ?",
            updates,
        )
        ledger.flush()
    if progress is not None:
        progress(len(file_ids), len(file_ids), bytes_total, bytes_total)
