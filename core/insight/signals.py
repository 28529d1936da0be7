"""Signals: what a retrospective looks for in a session, found in what the ledger stored.

Each signal names the records it points at (entry ids, their positions in the session, tool call
ids), so a front end can jump to them. They are computed from the derived tables (`entries`,
`agent_tool_calls`, `agent_usage`, `agent_turns`, `agent_sessions`) after each ingest, for the
sessions it touched (and their parents: a subagent's cost counts in its parent's dead ends),
from its checkpoint (see `_Carry`): an append reads the turn it continued and what it added,
not the session; after a rebuild, every session whole. Nothing here reads a source
file, and only tool inputs of failing runs are parsed again (`query.fill_tool_io`).

Every threshold is in THRESHOLDS below, each with the reason for its value.
"""

from __future__ import annotations

import sqlite3
import string
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from hashlib import blake2b
from typing import Any

import orjson

from ..base.text import SIGNALS_VERSION, SIGNALS_VERSION_KEY, is_bare_command, one_line, task_notice
from ..read.browse import COMPACTION_SUBTYPES, COMPACTION_TYPES, abandoned_turns
from ..read.query import SessionSummary, ToolCall, fill_tool_io, get_session
from ..store.rows import fetch, values
from ..store.sql import set_meta, transaction


@dataclass(frozen=True, slots=True)
class Threshold:
    value: float
    why: str


# ---------------------------------------------------------------------------- the one table of thresholds

THRESHOLDS: dict[str, Threshold] = {
    "retry_loop_calls": Threshold(
        3,
        "one failure and one retry is ordinary; a third identical attempt means the agent is not "
        "learning from the error",
    ),
    "retry_loop_similarity": Threshold(
        85,
        "rapidfuzz ratio (0-100) of two inputs: above it the inputs differ by a flag or a typo, "
        "not by approach",
    ),
    "error_cascade_calls": Threshold(
        3,
        "three failing calls of different kinds in a row is a stretch where nothing works, not a "
        "single mistake corrected",
    ),
    "thrashing_compactions": Threshold(
        2,
        "a second compaction inside the window means the context refilled to the limit right after "
        "being summarized",
    ),
    "thrashing_window_minutes": Threshold(
        60,
        "filling a 200k-token context normally takes hours of work; twice in an hour is churn",
    ),
    "dead_end_usd": Threshold(
        0.25,
        "below a quarter dollar an abandoned attempt is noise next to a session's usual cost",
    ),
    "cache_miss_context_tokens": Threshold(
        20_000,
        "a small context re-read without the cache costs little; above this a miss is worth seeing",
    ),
    "cache_miss_read_share": Threshold(
        0.5,
        "within a turn each request repeats the previous one's prefix, so most of the context "
        "should be read from the cache; under half was re-sent or re-written",
    ),
    "long_pause_seconds": Threshold(
        180,
        "extended thinking usually answers within a minute or two; three minutes before a reply is "
        "a stall, a retried API error or a very long think",
    ),
    "repeated_prompt_chars": Threshold(
        20,
        "short prompts (continue, yes, run the tests) repeat by nature; longer ones repeated mean "
        "the first answer did not land",
    ),
    "high_count": Threshold(5, "a loop, cascade or friction repeated this often is marked high"),
    "high_usd": Threshold(5.0, "a dead end costing this much is marked high"),
    "high_pause_seconds": Threshold(900, "a quarter of an hour waiting for a reply is marked high"),
    "high_cache_miss_tokens": Threshold(
        200_000, "a turn that re-sent this many context tokens uncached paid for a whole context again"
    ),
}


def limit(name: str) -> float:
    """A threshold's value (a KeyError for a name not in THRESHOLDS)."""
    return THRESHOLDS[name].value


# the signals, each with a sentence for help texts and the README

INTERRUPTED_TEXT = "[Request interrupted by user"
# Codex writes an event rather than a text when a turn is cut short: the user stopped it (Esc) or
# sent a new prompt over it; a review that ended is not the user stopping anything
ABORT_SUBTYPES = frozenset({"turn_aborted"})
ABORTS_BY_THE_USER = frozenset({"interrupted", "replaced"})
# what two prompts may differ in and still be the same prompt: case, spacing, ASCII punctuation
PUNCTUATION_AS_SPACE = str.maketrans(string.punctuation, " " * len(string.punctuation))
SYNTHETIC_MODELS = frozenset({"<synthetic>", ""})


@dataclass(slots=True)
class Evidence:
    """A record a signal points at: a message, or a tool call (its call and its result)."""

    entry_id: int
    seq: int | None
    tool_call_id: str | None = None
    tool: str | None = None
    result_entry_id: int | None = None
    result_seq: int | None = None


@dataclass(slots=True)
class Signal:
    session_id: str
    turn_id: str | None
    name: str
    severity: str  # low | medium | high
    detail: str
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def seq(self) -> int | None:
        return next((e.seq for e in self.evidence if e.seq is not None), None)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["seq"] = self.seq
        return data


# ---------------------------------------------------------------------------- what is read


@dataclass(slots=True)
class _Message:
    entry_id: int
    seq: int
    uuid: str | None
    role: str | None
    entry_type: str | None
    subtype: str | None
    is_meta: int
    timestamp: int | None
    text: str | None  # user text only (prompts, interruptions): other text is never needed
    turn_id: str | None = None  # known for prompts; `_Session.turns_of` finds it for the others


@dataclass(slots=True)
class _Call:
    id: str
    tool: str
    status: str | None
    entry_id: int | None
    result_entry_id: int | None
    turn_id: str | None
    child_session_id: str | None
    params_json: str | None


@dataclass(slots=True)
class _Usage:
    """One API message's tokens, as `agent_usage` keeps them, and its record's place (-1: unknown)."""

    message_id: str
    entry_id: int | None
    turn_id: str | None
    model: str | None
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    is_sidechain: int
    seq: int = -1


class _CutCrossed(Exception):
    """Something past a checkpoint's cut belongs with what lies before it: the session is read whole."""


@dataclass(slots=True)
class _Session:
    """What the per-turn detectors read of a session: its records from `start` on (a seq; 0 is the
    whole session, more is the part after a checkpoint's cut)."""

    conn: sqlite3.Connection
    id: str
    start: int
    messages: list[_Message]
    calls: list[_Call]
    seq_of: dict[int, int]  # entry id → seq
    prompt_of: dict[str, _Message]  # turn id → the prompt that started it
    aborts: list[_Message]  # turns the user stopped, as the agent recorded it (ABORT_SUBTYPES)
    usage: list[_Usage]  # the main chain's API messages, in record order
    usage_entries: list[
        int | None
    ]  # the entry ids of every usage row, of either chain (a checkpoint counts them)

    def turns_of(self, messages: list[_Message]) -> dict[int, tuple[str | None, str | None]]:
        """Entry id → (turn id, API message id) of a few messages: read apart, because those columns
        sit after the tool text in each row, and reading them for every record walks its pages."""
        ids = orjson.dumps([m.entry_id for m in messages]).decode()
        rows = self.conn.execute(
            "SELECT id, turn_id, message_id FROM entries WHERE id IN (SELECT value FROM json_each(?))", (ids,)
        )
        return {entry_id: (turn_id, message_id) for entry_id, turn_id, message_id in rows}

    def call_evidence(self, call: _Call) -> Evidence:
        return Evidence(
            entry_id=call.entry_id or 0,
            seq=self.seq_of.get(call.entry_id) if call.entry_id is not None else None,
            tool_call_id=call.id,
            tool=call.tool,
            result_entry_id=call.result_entry_id,
            result_seq=self.seq_of.get(call.result_entry_id) if call.result_entry_id is not None else None,
        )

    def message_evidence(self, message: _Message) -> Evidence:
        return Evidence(entry_id=message.entry_id, seq=message.seq)

    def check_turn(self, turn_id: str | None) -> None:
        """Past a cut, every call, result and notice belongs to a turn that starts past it."""
        if self.start and turn_id not in self.prompt_of:
            raise _CutCrossed(turn_id)


CALL_COLUMNS = "id, tool_name, status, entry_id, result_entry_id, turn_id, child_session_id, NULL"
USAGE_COLUMNS = (
    "message_id, entry_id, turn_id, model, input_tokens, output_tokens, cache_creation_tokens, "
    "cache_read_tokens, is_sidechain"
)


def _load(conn: sqlite3.Connection, session_id: str, start: int = 0, start_entry: int = 0) -> _Session:
    """The session's records from seq `start` on (whose entry id is `start_entry`)."""
    # only the columns before the (often large) tool text: a duplicate record has no seq
    messages = [
        _Message(*row)
        for row in conn.execute(
            "SELECT id, seq, uuid, role, entry_type, subtype, is_meta, timestamp, "
            "CASE WHEN role = 'user' THEN substr(content, 1, 4000) END "
            "FROM entries WHERE session_id = ? AND seq >= ? ORDER BY seq",
            (session_id, start),
        )
    ]
    seq_of = {m.entry_id: m.seq for m in messages}
    # not the inputs (params_json: megabytes in a long session): read for failing runs alone
    if start:  # the calls of the records past the cut (entry ids grow with seq: see _next_cut)
        call_rows = conn.execute(
            f"SELECT {CALL_COLUMNS} FROM agent_tool_calls WHERE entry_id >= ? AND session_id = ? "
            "ORDER BY tool_number",
            (start_entry, session_id),
        )
        usage_rows = conn.execute(
            f"SELECT {USAGE_COLUMNS} FROM agent_usage WHERE session_id = ? AND entry_id >= ? ORDER BY entry_id",
            (session_id, start_entry),
        )
    else:
        call_rows = conn.execute(
            f"SELECT {CALL_COLUMNS} FROM agent_tool_calls WHERE session_id = ? ORDER BY tool_number",
            (session_id,),
        )
        usage_rows = conn.execute(
            f"SELECT {USAGE_COLUMNS} FROM agent_usage WHERE session_id = ? ORDER BY entry_id", (session_id,)
        )
    calls = [_Call(*row) for row in call_rows]
    # calls in the order they were made: by their record's place, then their order within it
    calls.sort(key=lambda c: seq_of.get(c.entry_id, -1) if c.entry_id is not None else -1)
    every_usage = [_Usage(*row) for row in usage_rows]
    usage = [u for u in every_usage if not u.is_sidechain]
    for u in usage:
        u.seq = seq_of.get(u.entry_id, -1) if u.entry_id is not None else -1
    # a turn's id is its prompt's uuid (or "entry-<id>" for a prompt without one)
    by_uuid = {m.uuid: m for m in messages if m.uuid is not None and m.role == "user"}
    by_id = {f"entry-{m.entry_id}": m for m in messages if m.uuid is None and m.role == "user"}
    if start:
        turn_rows = conn.execute(
            "SELECT id FROM agent_turns WHERE id IN (SELECT value FROM json_each(?)) AND session_id = ?",
            (orjson.dumps([*by_uuid, *by_id]).decode(), session_id),
        )
    else:
        turn_rows = conn.execute("SELECT id FROM agent_turns WHERE session_id = ?", (session_id,))
    prompt_of: dict[str, _Message] = {}
    for (turn_id,) in turn_rows:
        prompt = by_uuid.get(turn_id) or by_id.get(turn_id)
        if prompt is not None:
            prompt.turn_id = turn_id
            prompt_of[turn_id] = prompt
    prompt_of = dict(sorted(prompt_of.items(), key=lambda item: item[1].seq))
    aborts = _aborts(conn, session_id, messages, start_entry)
    session = _Session(
        conn,
        session_id,
        start,
        messages,
        calls,
        seq_of,
        prompt_of,
        aborts,
        usage,
        [u.entry_id for u in every_usage],
    )
    if start:
        for call in calls:
            session.check_turn(call.turn_id)
            if call.entry_id not in seq_of:
                raise _CutCrossed(call.id)
        for u in usage:
            if u.turn_id is not None:
                session.check_turn(u.turn_id)
            if u.seq < 0:
                raise _CutCrossed(u.message_id)
        for abort in aborts:
            session.check_turn(abort.turn_id)
    return session


def _aborts(
    conn: sqlite3.Connection, session_id: str, messages: list[_Message], start_entry: int = 0
) -> list[_Message]:
    """The records of turns the user stopped: at their own line in the viewer, or (one an older
    reading kept as no message, no seq of its own) at the last message written before it."""
    from ..adapters import agents_where

    agent = conn.execute("SELECT source FROM agent_sessions WHERE id = ?", (session_id,)).fetchone()
    # only an agent that writes them has its sessions read for them (the read scans the session)
    if agent is None or not agents_where(lambda a: a.writes_aborts, among=[agent[0]]):
        return []
    rows = conn.execute(
        "SELECT id, turn_id, timestamp, raw, seq FROM entries WHERE session_id = ? AND id >= ? "
        "AND subtype IN (SELECT value FROM json_each(?)) ORDER BY id",
        (session_id, start_entry, orjson.dumps(sorted(ABORT_SUBTYPES)).decode()),
    ).fetchall()
    if not rows:  # nearly every session: no need to order its messages by record
        return []
    found = []
    ordered = sorted((m.entry_id, m.seq) for m in messages)
    ids = [entry_id for entry_id, _ in ordered]
    for entry_id, turn_id, timestamp, raw, own_seq in rows:
        try:
            record = orjson.loads(bytes(raw))
        except orjson.JSONDecodeError:
            continue
        payload = record.get("payload") if isinstance(record, dict) else None
        reason = payload.get("reason") if isinstance(payload, dict) else None
        if not isinstance(reason, str) or reason not in ABORTS_BY_THE_USER:  # a log's value: any type
            continue
        place = bisect_left(ids, entry_id)
        seq = own_seq if own_seq is not None else ordered[place - 1][1] if place > 0 else 0
        found.append(_Message(entry_id, seq, None, None, None, None, 0, timestamp, None, turn_id))
    return found


# ---------------------------------------------------------------------------- what a checkpoint carries


@dataclass(slots=True)
class _Carry:
    """What a pass knows of a session's records before a cut, for the detectors that look across
    it: every compaction, the first and last times, the replies so far, the last usage rows the
    pairwise detectors compare the next one with, whether the turns so far form one line (no
    branch), and how many calls, usage rows and turns lie before the cut. Saved with the cut (the
    prompts before it are kept in signals_prompts), it lets the next pass read only the records
    from the cut on; an empty one is where a whole pass starts."""

    compactions: list[list[Any]] = field(default_factory=list)  # [entry id, seq, timestamp | None]
    first_ts: int | None = None
    last_ts: int | None = None
    replies: int = 0  # assistant messages
    last_usage: list[Any] | None = None  # the last main-chain usage row (its _Usage fields)
    last_model: list[Any] | None = None  # the last one with a real model and a record
    calls: int = 0
    usage_rows: int = 0
    turns: int = 0
    linear: bool = True  # every turn so far continues the one before it
    last_turn: str | None = None

    def add_messages(self, messages: Iterable[_Message]) -> None:
        for m in messages:
            if m.subtype in COMPACTION_SUBTYPES or m.entry_type in COMPACTION_TYPES:
                self.compactions.append([m.entry_id, m.seq, m.timestamp])
            if m.timestamp:
                self.first_ts = m.timestamp if self.first_ts is None else min(self.first_ts, m.timestamp)
                self.last_ts = m.timestamp if self.last_ts is None else max(self.last_ts, m.timestamp)
            if m.role == "assistant":
                self.replies += 1

    def add_usage(self, rows: Iterable[_Usage]) -> None:
        for row in rows:
            self.last_usage = _usage_fields(row)
            if (row.model or "") not in SYNTHETIC_MODELS and row.entry_id is not None:
                self.last_model = self.last_usage

    def add_turns(self, turns: list[tuple[str, str | None]], known: set[str]) -> None:
        """Turns (id, parent) in the order they began; `known`: every turn of the session."""
        for turn_id, parent in turns:
            if self.turns == 0:
                self.linear = parent not in known
            elif parent != self.last_turn:
                self.linear = False
            self.turns += 1
            self.last_turn = turn_id

    def previous_usage(self) -> _Usage | None:
        return _Usage(*self.last_usage) if self.last_usage is not None else None

    def previous_model(self) -> _Usage | None:
        return _Usage(*self.last_model) if self.last_model is not None else None

    def dump(self) -> bytes:
        return orjson.dumps({name: getattr(self, name) for name in self.__slots__})

    @classmethod
    def load(cls, blob: bytes) -> _Carry:
        return cls(**orjson.loads(blob))


def _usage_fields(row: _Usage) -> list[Any]:
    return [getattr(row, name) for name in _Usage.__slots__]


# ---------------------------------------------------------------------------- finding them


@dataclass(slots=True)
class _Checkpoint:
    """Where the last pass over a session could cut it, and what it knew before the cut."""

    cut: int  # a seq: the prompt of a turn, with nothing before it that a later record can change
    cut_entry: int  # that prompt's entry id
    seen_id: int  # the largest entry id when it was taken: results stored since are new
    carry: _Carry
    prompts: list[_Member] = field(default_factory=list)  # the grouped prompts newly before the cut
    whole: bool = False  # taken by a whole pass: the session's stored prompts are replaced


CHECKPOINT_FORMAT = f"{SIGNALS_VERSION}.2"  # a checkpoint of another format is not read

# the per-turn detectors' signals: each lies wholly before a checkpoint's cut or ends after it
LOCAL_SIGNALS = frozenset(
    {"retry-loop", "error-cascade", "rejected", "interrupted", "cache-miss", "model-change", "long-pause"}
)
# the order stored signals are listed in when they start at one record
SIGNAL_ORDER = (
    "retry-loop",
    "error-cascade",
    "rejected",
    "interrupted",
    "context-thrashing",
    "abandoned-branch",
    "unused-subagent",
    "cache-miss",
    "model-change",
    "long-pause",
    "repeated-prompt",
)


def _order(signal: Signal) -> tuple[Any, ...]:
    """One order for a session's signals however they were found: by where they start, then by kind."""
    rank = SIGNAL_ORDER.index(signal.name) if signal.name in SIGNAL_ORDER else len(SIGNAL_ORDER)
    evidence = orjson.dumps(signal.evidence)  # orjson writes a dataclass as asdict() would, faster
    return (signal.seq is not None, signal.seq or 0, rank, signal.detail, evidence)


def _checkpoint(conn: sqlite3.Connection, session_id: str) -> _Checkpoint | None:
    """The session's checkpoint, when what lies before its cut is as it was when it was taken."""
    row = conn.execute(
        "SELECT cut, cut_entry, seen_id, format, carry FROM signals_state WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None or row[3] != CHECKPOINT_FORMAT:
        return None
    cut, cut_entry, seen_id, _, blob = row
    # the record at the cut is still the one it was taken at (a replay re-places records and drops
    # the checkpoint: this is the second line of defence)
    at_cut = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND seq = ?", (session_id, cut)
    ).fetchone()
    if at_cut is None or at_cut[0] != cut_entry:
        return None
    # a call before the cut whose result came since has a new status
    late = conn.execute(  # by the results stored since (their index), not every call of the session
        "SELECT 1 FROM agent_tool_calls WHERE result_entry_id > ? AND +session_id = ? "
        "AND (entry_id < ? OR entry_id IS NULL) LIMIT 1",
        (seen_id, session_id, cut_entry),
    ).fetchone()
    if late is not None:
        return None
    try:
        carry = _Carry.load(bytes(blob))
    except (orjson.JSONDecodeError, TypeError):  # not what this format writes: read the session whole
        return None
    return _Checkpoint(cut, cut_entry, seen_id, carry)


def _find(
    conn: sqlite3.Connection, session_id: str, checkpoint: _Checkpoint | None
) -> tuple[list[Signal], _Checkpoint | None]:
    """The session's signals and its next checkpoint: from `checkpoint` on (the signals before its
    cut as stored), or whole when it is None."""
    seen_id = conn.execute("SELECT COALESCE(max(id), 0) FROM entries").fetchone()[0]
    if checkpoint is None:
        session, carry, kept = _load(conn, session_id), _Carry(), []
    else:
        session = _load(conn, session_id, checkpoint.cut, checkpoint.cut_entry)
        carry = checkpoint.carry
        calls, usage_rows = conn.execute(
            "SELECT (SELECT count(*) FROM agent_tool_calls WHERE session_id = ?1), "
            "(SELECT count(*) FROM agent_usage WHERE session_id = ?1)",
            (session_id,),
        ).fetchone()
        if calls != carry.calls + len(session.calls) or usage_rows != carry.usage_rows + len(
            session.usage_entries
        ):
            raise _CutCrossed("a call or usage row was placed before the cut")
        kept = _stored_before(conn, session_id, checkpoint.cut)
    found: list[Signal] = []
    found += _failing_runs(conn, session)
    found += _friction(session)
    found += _cache_misses(session, carry)
    found += _model_changes(session, carry.previous_model())
    found += _long_pauses(session, {u.message_id: u.output_tokens for u in session.usage})
    prompts = _PromptGroups(session, carry.replies)
    turns, known = _turns(session, carry)
    # the next cut, and what is known before it
    cut = _next_cut(session, found)
    after = len(session.messages)
    following = None
    if cut is not None:
        after = bisect_left([m.seq for m in session.messages], cut.seq)
        cut_entry = cut.entry_id
        carry.add_messages(session.messages[:after])
        carry.add_usage(u for u in session.usage if u.entry_id is not None and u.entry_id < cut_entry)
        carry.calls += sum(1 for c in session.calls if c.entry_id is not None and c.entry_id < cut_entry)
        carry.usage_rows += sum(1 for e in session.usage_entries if e is None or e < cut_entry)
        split = next((i for i, (turn_id, _) in enumerate(turns) if turn_id == cut.turn_id), len(turns))
        carry.add_turns(turns[:split], known)
        turns = turns[split:]
        following = _Checkpoint(
            cut.seq,
            cut_entry,
            seen_id,
            _Carry.load(carry.dump()),
            prompts.before(cut.seq),
            checkpoint is None,
        )
    carry.add_messages(session.messages[after:])
    carry.add_turns(turns, known)
    found += _thrashing(session, carry)
    found += _dead_ends(conn, session, carry.linear)
    repeated = prompts.signals()
    found += repeated
    if checkpoint is not None:
        # the repeated prompts whose text came again past the cut were found again; the others stand
        kept += _stored_repeats(conn, session_id, exclude=prompts.recounted_firsts())
    every = kept + found
    every.sort(key=_order)
    return every, following


def _turns(session: _Session, carry: _Carry) -> tuple[list[tuple[str, str | None]], set[str]]:
    """The turns past the cut (id, parent), in the order they began, and the ids of every turn of
    the session as far as a line of turns needs them; when those past the cut are not all the
    session's turns after the carry's (a turn with no prompt read), the carry is told it branched."""
    if session.start == 0:
        rows = session.conn.execute(
            "SELECT id, parent_turn_id FROM agent_turns WHERE session_id = ? ORDER BY sequence", (session.id,)
        ).fetchall()
        return [(r[0], r[1]) for r in rows], {r[0] for r in rows}
    rows = session.conn.execute(
        "SELECT id, parent_turn_id FROM agent_turns WHERE id IN (SELECT value FROM json_each(?)) "
        "AND session_id = ? ORDER BY sequence",
        (orjson.dumps(list(session.prompt_of)).decode(), session.id),
    ).fetchall()
    total = session.conn.execute(
        "SELECT count(*) FROM agent_turns WHERE session_id = ?", (session.id,)
    ).fetchone()[0]
    if total != carry.turns + len(rows):
        carry.linear = False
    turns = [(r[0], r[1]) for r in rows]
    known = {t for t, _ in turns}
    if carry.last_turn is not None:
        known.add(carry.last_turn)
    return turns, known


def _next_cut(session: _Session, found: list[Signal]) -> _Message | None:
    """The last prompt a checkpoint can cut the session at: nothing before it that a later record
    changes (no run of failing calls reaching it, no refusal its notice would join), every record
    before it stored before every record from it on (entry ids grow with seq there), and every
    signal placed. None when the session cannot be cut (it is read whole next time)."""
    if any(e.seq is None for s in found for e in s.evidence):
        return None
    if any(c.entry_id not in session.seq_of for c in session.calls) or any(u.seq < 0 for u in session.usage):
        return None
    messages = session.messages
    if not messages:
        return None
    suffix_min = [0] * len(messages)
    low = None
    for i in range(len(messages) - 1, -1, -1):
        low = messages[i].entry_id if low is None else min(low, messages[i].entry_id)
        suffix_min[i] = low
    prefix_max: list[int] = []
    high = -1
    for m in messages:
        prefix_max.append(high)
        high = max(high, m.entry_id)
    call_seqs = [session.seq_of[c.entry_id] for c in session.calls if c.entry_id is not None]
    seqs = [m.seq for m in messages]
    for prompt in reversed(session.prompt_of.values()):
        i = bisect_left(seqs, prompt.seq)
        if prefix_max[i] >= prompt.entry_id or suffix_min[i] < prompt.entry_id:
            continue
        if (prompt.text or "").lstrip().startswith(INTERRUPTED_TEXT):
            continue
        before = bisect_left(call_seqs, prompt.seq)
        if before > 0 and session.calls[before - 1].status == "failed":
            continue
        return prompt
    return None if session.start == 0 else messages[0]


def _stored_before(conn: sqlite3.Connection, session_id: str, cut: int) -> list[Signal]:
    """The per-turn signals stored for the session that end before the cut: what a pass from the
    cut on keeps."""
    kept = []
    for stored in session_signals(conn, session_id):
        if stored.name not in LOCAL_SIGNALS:
            continue
        if max((e.seq for e in stored.evidence if e.seq is not None), default=-1) >= cut:
            continue
        kept.append(
            Signal(
                stored.session_id,
                stored.turn_id,
                stored.name,
                stored.severity,
                stored.detail,
                stored.evidence,
            )
        )
    return kept


def _severity(count: float, high: str) -> str:
    return "high" if count >= limit(high) else "medium"


def _failing_runs(conn: sqlite3.Connection, session: _Session) -> list[Signal]:
    """Retry loops (one tool, near-identical input, failing N times running) and error cascades
    (N failing calls in a row that are not all one retry loop)."""
    runs: list[list[_Call]] = []
    current: list[_Call] = []
    for call in session.calls:
        if call.status == "failed":
            current.append(call)
            continue
        if current:
            runs.append(current)
        current = []
    if current:
        runs.append(current)
    out: list[Signal] = []
    need_loop = int(limit("retry_loop_calls"))
    need_cascade = int(limit("error_cascade_calls"))
    candidates = [run for run in runs if len(run) >= min(need_loop, need_cascade)]
    _fill_inputs(conn, session.id, [c for run in candidates for c in run])
    for run in candidates:
        loops = [loop for loop in _loops(run) if len(loop) >= need_loop]
        for loop in loops:
            out.append(
                Signal(
                    session.id,
                    loop[0].turn_id,
                    "retry-loop",
                    _severity(len(loop), "high_count"),
                    f"{loop[0].tool} failed {len(loop)} times in a row with near-identical input",
                    [session.call_evidence(c) for c in loop],
                )
            )
        whole_loop = len(loops) == 1 and len(loops[0]) == len(run)
        if len(run) >= need_cascade and not whole_loop:
            tools = sorted({c.tool for c in run})
            out.append(
                Signal(
                    session.id,
                    run[0].turn_id,
                    "error-cascade",
                    _severity(len(run), "high_count"),
                    f"{len(run)} tool calls failed in a row ({', '.join(tools)})",
                    [session.call_evidence(c) for c in run],
                )
            )
    return out


def _loops(run: list[_Call]) -> list[list[_Call]]:
    """A run of failing calls cut where the tool or the input changes."""
    from rapidfuzz import fuzz  # 7 ms to import, for the sessions with failing calls in a row

    similarity = limit("retry_loop_similarity")
    loops: list[list[_Call]] = [[run[0]]]
    for call in run[1:]:
        last = loops[-1][-1]
        near = call.tool == last.tool and fuzz.ratio(_gist(call), _gist(last)) >= similarity
        if near:
            loops[-1].append(call)
        else:
            loops.append([call])
    return loops


def _gist(call: _Call) -> str:
    """A call's input as compared for a retry: without the `description` the model writes for the
    user (Claude's Bash), which it rewords at each attempt of the same command."""
    text = call.params_json or ""
    try:
        params = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text[:2000]
    if isinstance(params, dict):
        params.pop("description", None)
        text = orjson.dumps(params, option=orjson.OPT_SORT_KEYS).decode()
    return text[:2000]


def _fill_inputs(conn: sqlite3.Connection, session_id: str, calls: list[_Call]) -> None:
    """Read the inputs of these calls alone: as the ledger keeps them, else (Claude's, kept only in
    the records) from their records."""
    if not calls:
        return
    kept = dict(
        conn.execute(
            "SELECT id, params_json FROM agent_tool_calls WHERE session_id = ? "
            "AND id IN (SELECT value FROM json_each(?)) AND params_json IS NOT NULL",
            (session_id, orjson.dumps(sorted({c.id for c in calls})).decode()),
        ).fetchall()
    )
    for call in calls:
        call.params_json = kept.get(call.id)
    wanted = [
        ToolCall(c.id, c.tool, None, "", c.status, None, None, None, None, c.entry_id)
        for c in calls
        if c.params_json is None and c.entry_id is not None
    ]
    if not wanted:
        return
    fill_tool_io(conn, wanted)
    inputs = {(t.entry_id, t.id): t.params_json for t in wanted}
    for call in calls:
        if call.params_json is None:
            call.params_json = inputs.get((call.entry_id, call.id))


def _friction(session: _Session) -> list[Signal]:
    """Rejected and interrupted tool calls, and interrupted replies, one signal per turn and kind.
    Claude Code follows a refused call with an interruption notice: that notice is part of the
    refusal, not an interruption of its own."""
    by_turn: dict[tuple[str, str | None], list[Evidence]] = {}
    rejected_results: set[int] = set()
    for call in session.calls:
        if call.status in ("rejected", "interrupted"):
            by_turn.setdefault((call.status, call.turn_id), []).append(session.call_evidence(call))
            if call.status == "rejected" and call.result_entry_id is not None:
                rejected_results.add(call.result_entry_id)
    notices: list[tuple[str, _Message]] = []
    previous: _Message | None = None
    for message in session.messages:
        if message.role == "user" and (message.text or "").lstrip().startswith(INTERRUPTED_TEXT):
            after_refusal = previous is not None and previous.entry_id in rejected_results
            notices.append(("rejected" if after_refusal else "interrupted", message))
        previous = message
    turns = session.turns_of([m for _, m in notices]) if notices else {}
    for kind, message in notices:
        turn_id = turns.get(message.entry_id, (None, None))[0]
        session.check_turn(turn_id)
        by_turn.setdefault((kind, turn_id), []).append(session.message_evidence(message))
    for abort in session.aborts:
        by_turn.setdefault(("interrupted", abort.turn_id), []).append(session.message_evidence(abort))
    out = []
    for (kind, turn_id), evidence in by_turn.items():
        calls = [e for e in evidence if e.tool_call_id is not None]
        what = ", ".join(sorted({e.tool or "" for e in calls}))
        if kind == "rejected":
            detail = f"the user refused {len(calls)} tool call{'s' if len(calls) != 1 else ''} ({what})"
        elif calls:
            detail = f"the user interrupted {len(calls)} tool call{'s' if len(calls) != 1 else ''} ({what})"
        else:
            detail = "the user interrupted the reply"
        severity = "high" if len(calls) >= limit("high_count") else ("medium" if calls else "low")
        out.append(Signal(session.id, turn_id, kind, severity, detail, evidence))
    return out


def _thrashing(session: _Session, carry: _Carry) -> list[Signal]:
    """Compactions per hour: the densest window of compactions, when it holds enough of them."""
    marks = [(entry_id, seq, ts) for entry_id, seq, ts in carry.compactions if ts is not None]
    need = int(limit("thrashing_compactions"))
    if len(marks) < need:
        return []
    window = limit("thrashing_window_minutes") * 60_000
    best: list[tuple[int, int, int]] = []
    start = 0
    for end in range(len(marks)):
        while marks[end][2] - marks[start][2] > window:
            start += 1
        if end - start + 1 > len(best):
            best = marks[start : end + 1]
    if len(best) < need:
        return []
    span_ms = best[-1][2] - best[0][2]
    spanned = (
        (carry.last_ts - carry.first_ts) if carry.first_ts is not None and carry.last_ts is not None else 0
    )
    hours = max(spanned / 3_600_000, 1.0)
    detail = (
        f"{len(best)} compactions within {round(span_ms / 60_000)} min "
        f"({len(marks)} in the session, {len(marks) / hours:.1f} per hour)"
    )
    severity = "high" if len(best) > need else "medium"
    evidence = [Evidence(entry_id=entry_id, seq=seq) for entry_id, seq, _ in best]
    return [Signal(session.id, None, "context-thrashing", severity, detail, evidence)]


def _dead_ends(conn: sqlite3.Connection, session: _Session, linear: bool) -> list[Signal]:
    """Cost spent on branches rewound away from, and on subagents whose result never came back.
    `linear`: the turns form one line, so there is no branch to look for."""
    out: list[Signal] = []
    minimum = limit("dead_end_usd")
    abandoned: set[str] = set()
    turn_costs: dict[str | None, float] | None = None
    spawning = _spawning_calls(conn, session)
    costly: list[tuple[int, list[str], float]] = []  # (branch number, its abandoned turns, their cost)
    rewound = [] if linear else abandoned_turns(conn, session.id)
    for number, turns in rewound:
        abandoned.update(turns)
        if turn_costs is None:
            turn_costs = _turn_costs(conn, session.id, spawning, [t for _, turns in rewound for t in turns])
        cost = sum(turn_costs.get(t, 0.0) for t in turns)
        if cost >= minimum:
            costly.append((number, turns, cost))
    # their prompts looked up at once (past a cut, a lookup each was most of an append's cost)
    prompts = _prompts(session, [t for _, turns, _ in costly for t in turns])
    for number, turns, cost in costly:
        out.append(
            Signal(
                session.id,
                turns[0],
                "abandoned-branch",
                "high" if cost >= limit("high_usd") else "medium",
                f"${cost:.2f} spent on {len(turns)} turn{'s' if len(turns) != 1 else ''} of a branch "
                f"rewound away from (branch {number})",
                [
                    Evidence(entry_id=entry_id, seq=seq)
                    for entry_id, seq in (prompts[t] for t in turns if t in prompts)
                ],
            )
        )
    last = max((p.seq for p in session.prompt_of.values()), default=-1)
    earlier = _prompts(session, [c.turn_id for c in spawning if c.turn_id is not None])
    for call in spawning:
        if call.child_session_id is None or call.turn_id in abandoned:
            continue  # an abandoned branch's subagents are counted in its cost
        if call.status in ("failed", "interrupted", "rejected"):
            never_back = True
        else:  # still running when the log ends is no dead end; going on to another turn without it is
            began = earlier.get(call.turn_id) if call.turn_id is not None else None
            never_back = call.result_entry_id is None and began is not None and began[1] < last
        if not never_back:
            continue
        cost = _subagent_cost(conn, call.child_session_id)
        if cost < minimum:
            continue
        why = call.status if call.status in ("failed", "interrupted", "rejected") else "never returned"
        out.append(
            Signal(
                session.id,
                call.turn_id,
                "unused-subagent",
                "high" if cost >= limit("high_usd") else "medium",
                f"${cost:.2f} spent on a subagent whose result was not used ({call.tool} {why})",
                [_evidence_of(session, call)],
            )
        )
    return out


def _spawning_calls(conn: sqlite3.Connection, session: _Session) -> list[_Call]:
    """The session's calls that spawned a subagent (all of them, past a cut or not)."""
    if session.start == 0:
        return [c for c in session.calls if c.child_session_id is not None]
    return [
        _Call(*row)
        for row in conn.execute(
            f"SELECT {CALL_COLUMNS} FROM agent_tool_calls WHERE session_id = ? AND child_session_id IS NOT NULL",
            (session.id,),
        )
    ]


def _evidence_of(session: _Session, call: _Call) -> Evidence:
    """A call's evidence, its records placed whether or not they lie past the cut."""
    evidence = session.call_evidence(call)
    missing = [
        entry_id
        for entry_id in (call.entry_id, call.result_entry_id)
        if entry_id is not None and entry_id not in session.seq_of
    ]
    if missing:
        seqs = dict(
            session.conn.execute(
                "SELECT id, seq FROM entries WHERE id IN (SELECT value FROM json_each(?))",
                (orjson.dumps(missing).decode(),),
            )
        )
        if call.entry_id is not None and evidence.seq is None:
            evidence.seq = seqs.get(call.entry_id)
        if call.result_entry_id is not None and evidence.result_seq is None:
            evidence.result_seq = seqs.get(call.result_entry_id)
    return evidence


def _prompts(session: _Session, turn_ids: list[str]) -> dict[str, tuple[int, int]]:
    """Turn id → (entry id, seq) of the prompt that started it: past the cut as read, before it
    looked up (a turn's id is its prompt's uuid, or "entry-<id>"; the last such prompt counts)."""
    out = {
        t: (session.prompt_of[t].entry_id, session.prompt_of[t].seq)
        for t in turn_ids
        if t in session.prompt_of
    }
    wanted = sorted({t for t in turn_ids if t not in out})
    if not wanted or session.start == 0:
        return out
    listed = set(
        values(
            session.conn,
            "SELECT id FROM agent_turns WHERE id IN (SELECT value FROM json_each(?)) AND +session_id = ?",
            (orjson.dumps(wanted).decode(), session.id),
        )
    )
    uuids = [t for t in wanted if t in listed]
    for uuid, entry_id, seq in session.conn.execute(
        # by uuid (a few rows), not by session (all of them): `+` keeps the session's index out of it
        "SELECT uuid, id, seq FROM entries WHERE uuid IN (SELECT value FROM json_each(?)) AND +session_id = ? "
        "AND seq IS NOT NULL AND role = 'user' ORDER BY seq",
        (orjson.dumps(uuids).decode(), session.id),
    ):
        out[uuid] = (entry_id, seq)
    by_id = {int(t[6:]): t for t in uuids if t not in out and t.startswith("entry-") and t[6:].isdigit()}
    for entry_id, seq in session.conn.execute(
        "SELECT id, seq FROM entries WHERE id IN (SELECT value FROM json_each(?)) AND session_id = ? "
        "AND seq IS NOT NULL AND role = 'user' AND uuid IS NULL",
        (orjson.dumps(sorted(by_id)).decode(), session.id),
    ):
        out[by_id[entry_id]] = (entry_id, seq)
    return out


def _turn_costs(
    conn: sqlite3.Connection, session_id: str, spawning: list[_Call], turn_ids: list[str]
) -> dict[str | None, float]:
    """Turn id → the cost of its API messages plus that of the subagents it spawned, for the
    `turn_ids` (read once: a session rewound fifty times asked it fifty times; and only theirs: the
    rest of a long session's usage is never summed)."""
    wanted = set(turn_ids)
    costs: dict[str | None, float] = dict(
        conn.execute(
            # by turn (its index), not by session (all of its rows): `+` keeps the session's index out
            "SELECT turn_id, COALESCE(sum(cost_usd), 0) FROM agent_usage "
            "WHERE turn_id IN (SELECT value FROM json_each(?)) AND +session_id = ? GROUP BY turn_id",
            (orjson.dumps(sorted(wanted)).decode(), session_id),
        )
    )
    for call in spawning:
        if call.child_session_id and call.turn_id in wanted:
            costs[call.turn_id] = costs.get(call.turn_id, 0.0) + _subagent_cost(conn, call.child_session_id)
    return costs


def _subagent_cost(conn: sqlite3.Connection, session_id: str) -> float:
    """A subagent's cost with that of the subagents it spawned in turn (unknown costs count 0)."""
    total = conn.execute(
        "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM agent_sessions s JOIN tree "
        "ON s.parent_session_id = tree.id) SELECT COALESCE(sum(s.cost_usd), 0) FROM agent_sessions s "
        "JOIN tree ON tree.id = s.id",
        (session_id,),
    ).fetchone()[0]
    return float(total)


def _cache_misses(session: _Session, carry: _Carry) -> list[Signal]:
    """Requests after the first of a turn whose context was mostly not read from the cache.
    Only for sessions whose agent reports cache tokens at all; the first request after a
    compaction or a model change starts a new cache and is not counted."""
    usage = session.usage
    previous = carry.previous_usage()
    if not any(u.cache_read_tokens or u.cache_creation_tokens for u in usage):
        return []
    restarts = sorted(
        [seq for _, seq, _ in carry.compactions]
        + [
            m.seq
            for m in session.messages
            if m.subtype in COMPACTION_SUBTYPES or m.entry_type in COMPACTION_TYPES
        ]
    )
    minimum = limit("cache_miss_context_tokens")
    share = limit("cache_miss_read_share")
    misses: dict[str | None, list[tuple[_Usage, int]]] = {}
    for row in usage:
        before, previous = previous, row
        if before is None or row.turn_id is None or before.turn_id != row.turn_id:
            continue  # the first request of a turn
        if before.model != row.model:
            continue  # another model has its own cache
        if bisect_left(restarts, row.seq) != bisect_left(restarts, before.seq):
            continue  # a compaction between the two starts the context afresh
        context = row.input_tokens + row.cache_creation_tokens + row.cache_read_tokens
        if context >= minimum and row.cache_read_tokens < share * context:
            misses.setdefault(row.turn_id, []).append((row, context - row.cache_read_tokens))
    out = []
    for turn_id, rows in misses.items():
        uncached = sum(n for _, n in rows)
        detail = (
            f"{len(rows)} request{'s' if len(rows) != 1 else ''} in the turn sent {uncached:,} context tokens "
            "without reading them from the cache"
        )
        evidence = [
            Evidence(entry_id=row.entry_id, seq=session.seq_of.get(row.entry_id))
            for row, _ in rows
            if row.entry_id is not None
        ]
        severity = "high" if uncached >= limit("high_cache_miss_tokens") else "medium"
        out.append(Signal(session.id, turn_id, "cache-miss", severity, detail, evidence))
    return out


def _model_changes(session: _Session, last: _Usage | None) -> list[Signal]:
    """Each point where an API message's model differs from the one before it."""
    out = []
    for row in session.usage:
        if (row.model or "") in SYNTHETIC_MODELS or row.entry_id is None:
            continue
        if last is not None and row.model != last.model:
            out.append(
                Signal(
                    session.id,
                    row.turn_id,
                    "model-change",
                    "low",
                    f"the model changed from {last.model} to {row.model}",
                    [
                        Evidence(last.entry_id or 0, last.seq if last.seq >= 0 else None),
                        Evidence(row.entry_id, session.seq_of.get(row.entry_id)),
                    ],
                )
            )
        last = row
    return out


def _long_pauses(session: _Session, output_tokens: dict[str, int]) -> list[Signal]:
    """Gaps longer than the threshold between a message and the assistant message after it (the
    model's time: thinking, generating, retrying; a tool's run time ends before its result)."""
    minimum = limit("long_pause_seconds") * 1000
    pauses: list[tuple[_Message, _Message]] = []
    previous: _Message | None = None
    for message in session.messages:
        if message.timestamp is None:
            continue
        if (
            previous is not None
            and message.role == "assistant"
            and previous.timestamp is not None
            and message.timestamp - previous.timestamp >= minimum
        ):
            pauses.append((previous, message))
        previous = message
    if not pauses:
        return []
    found = session.turns_of([m for _, m in pauses])
    out = []
    for before, message in pauses:
        turn_id, message_id = found.get(message.entry_id, (None, None))
        gap = ((message.timestamp or 0) - (before.timestamp or 0)) / 1000
        tokens = output_tokens.get(message_id or "")
        reply = f" before a reply of {tokens:,} output tokens" if tokens is not None else " before a reply"
        out.append(
            Signal(
                session.id,
                turn_id,
                "long-pause",
                "high" if gap >= limit("high_pause_seconds") else "medium",
                f"{_duration(gap)}{reply}",
                [session.message_evidence(before), session.message_evidence(message)],
            )
        )
    return out


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


_Member = tuple[
    int, int, int, str | None, int
]  # a grouped prompt: (text key, entry id, seq, turn id, replies before it)


class _PromptGroups:
    """Prompts sent again in the same session, case, spacing and punctuation aside (short ones
    excepted). Not by similarity: "Migrate imports; watch out for …" and "Migrate reports; watch
    out for …" are 97 % alike and two requests. A prompt echoed before any reply (Aider writes
    `/ask X`, then `X`) is one request, not two.

    The prompts before the cut are kept in signals_prompts, by their text's hash; a pass reads the
    groups of the texts sent again past the cut, and finds their signals again."""

    def __init__(self, session: _Session, replies: int) -> None:
        self.session = session
        minimum = limit("repeated_prompt_chars")
        past: list[_Member] = []  # (key, entry id, seq, turn id, replies before)
        for m in session.messages:
            if m.role == "assistant":
                replies += 1
                continue
            text = m.text or ""
            if (
                m.turn_id is None
                or m.is_meta
                or len(text.strip()) < minimum
                or text.lstrip().startswith(INTERRUPTED_TEXT)
            ):
                continue
            norm = " ".join(text.lower().translate(PUNCTUATION_AS_SPACE).split())
            key = int.from_bytes(blake2b(norm.encode(), digest_size=8).digest(), "big", signed=True)
            past.append((key, m.entry_id, m.seq, m.turn_id, replies))
        self.groups: dict[int, list[tuple[int, int, str | None, int]]] = {}
        if session.start and past:
            for key, entry_id, seq, turn_id, before in session.conn.execute(
                "SELECT key, entry_id, seq, turn_id, replies FROM signals_prompts WHERE session_id = ? "
                "AND key IN (SELECT value FROM json_each(?)) ORDER BY seq",
                (session.id, orjson.dumps(sorted({p[0] for p in past})).decode()),
            ):
                self.groups.setdefault(key, []).append((entry_id, seq, turn_id, before))
        self.members: list[_Member] = []  # the grouped ones past the cut
        for key, entry_id, seq, turn_id, before in past:
            group = self.groups.setdefault(key, [])
            if not group or before > group[-1][3]:
                group.append((entry_id, seq, turn_id, before))
                self.members.append((key, entry_id, seq, turn_id, before))

    def before(self, cut: int) -> list[_Member]:
        """The grouped prompts past the old cut and before the new one: stored with the checkpoint."""
        return [member for member in self.members if member[2] < cut]

    def recounted_firsts(self) -> set[int]:
        """The first prompts (entry ids) of the groups found again."""
        return {group[0][0] for group in self.groups.values() if group}

    def signals(self) -> list[Signal]:
        groups = [group for group in self.groups.values() if len(group) >= 2]
        if not groups:
            return []
        firsts = orjson.dumps([group[0][0] for group in groups]).decode()
        texts = dict(
            self.session.conn.execute(
                "SELECT id, substr(content, 1, 4000) FROM entries WHERE id IN (SELECT value FROM json_each(?))",
                (firsts,),
            )
        )
        out = []
        for group in groups:
            first = texts.get(group[0][0]) or ""
            if task_notice(first) is not None or is_bare_command(first):
                continue  # not typed by the user, or a bare command; looked at once per repeated text (regexes)
            out.append(
                Signal(
                    self.session.id,
                    group[1][2],
                    "repeated-prompt",
                    "medium" if len(group) > 2 else "low",
                    f"the same prompt was sent {len(group)} times",
                    [Evidence(entry_id=entry_id, seq=seq) for entry_id, seq, _, _ in group],
                )
            )
        return out


def _stored_repeats(conn: sqlite3.Connection, session_id: str, exclude: set[int]) -> list[Signal]:
    """The stored repeated-prompt signals of groups not found again."""
    return [
        Signal(s.session_id, s.turn_id, s.name, s.severity, s.detail, s.evidence)
        for s in session_signals(conn, session_id)
        if s.name == "repeated-prompt" and s.evidence and s.evidence[0].entry_id not in exclude
    ]


# ---------------------------------------------------------------------------- storing them


SessionsDone = Callable[[int, int], None]  # (sessions looked at, of how many): a long pass's progress
PROGRESS_SECONDS = 0.2  # how often a long pass says how far it is


def update(conn: sqlite3.Connection, sessions: Iterable[str], progress: SessionsDone | None = None) -> float:
    """Bring the signals of `sessions` and of their parent sessions (a subagent's cost is its
    parent's dead end) up to date, each from its checkpoint; returns the seconds it took."""
    started = time.perf_counter()
    wanted = {s for s in sessions if s}
    if not wanted:
        return 0.0
    parents = values(
        conn,
        "SELECT DISTINCT parent_session_id FROM agent_sessions WHERE parent_session_id IS NOT NULL "
        "AND id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(sorted(wanted)).decode(),),
    )
    _store(conn, sorted(wanted | set(parents)), clear_all=False, progress=progress)
    return time.perf_counter() - started


def rebuild(conn: sqlite3.Connection, progress: SessionsDone | None = None) -> float:
    """Recompute every session's signals whole (after the derived tables were rebuilt, or when the
    signals found were found by an older SIGNALS_VERSION)."""
    started = time.perf_counter()
    sessions = values(conn, "SELECT id FROM agent_sessions ORDER BY id")
    _store(conn, sessions, clear_all=True, progress=progress)
    set_meta(conn, SIGNALS_VERSION_KEY, SIGNALS_VERSION)
    return time.perf_counter() - started


def session_pass(
    conn: sqlite3.Connection, session_id: str, *, whole: bool = False
) -> tuple[list[Signal], _Checkpoint | None]:
    """One session's signals and its next checkpoint: from its checkpoint when it has a usable one
    (what an append added, and the turn it continued), else whole."""
    checkpoint = None if whole else _checkpoint(conn, session_id)
    if checkpoint is not None:
        try:
            return _find(conn, session_id, checkpoint)
        except _CutCrossed:
            pass
    return _find(conn, session_id, None)


def _store(
    conn: sqlite3.Connection, sessions: list[str], *, clear_all: bool, progress: SessionsDone | None = None
) -> None:
    rows = []
    checkpoints = []
    replaced: list[str] = []  # sessions whose stored prompts go (read whole, or with no checkpoint)
    members: list[tuple[Any, ...]] = []
    shown = time.perf_counter()
    for done, session_id in enumerate(sessions):
        if progress is not None and time.perf_counter() - shown > PROGRESS_SECONDS:
            progress(done, len(sessions))
            shown = time.perf_counter()
        found, checkpoint = session_pass(conn, session_id, whole=clear_all)
        for signal in found:
            evidence = orjson.dumps(signal.evidence).decode()
            rows.append(
                (
                    signal.session_id,
                    signal.turn_id,
                    signal.name,
                    signal.severity,
                    signal.seq,
                    signal.detail,
                    evidence,
                )
            )
        if checkpoint is None or checkpoint.whole:
            replaced.append(session_id)
        if checkpoint is not None:
            members += [(session_id, *member) for member in checkpoint.prompts]
            checkpoints.append(
                (
                    session_id,
                    checkpoint.cut,
                    checkpoint.cut_entry,
                    checkpoint.seen_id,
                    CHECKPOINT_FORMAT,
                    checkpoint.carry.dump(),
                )
            )
    with transaction(conn):
        if clear_all:
            conn.execute("DELETE FROM session_signals")
            conn.execute("DELETE FROM signals_state")
            conn.execute("DELETE FROM signals_prompts")
        else:
            conn.executemany("DELETE FROM session_signals WHERE session_id = ?", [(s,) for s in sessions])
            conn.executemany("DELETE FROM signals_state WHERE session_id = ?", [(s,) for s in sessions])
            conn.executemany("DELETE FROM signals_prompts WHERE session_id = ?", [(s,) for s in replaced])
        conn.executemany(
            "INSERT INTO session_signals (session_id, turn_id, name, severity, seq, detail, evidence) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.executemany(
            "INSERT INTO signals_state (session_id, cut, cut_entry, seen_id, format, carry) VALUES (?, ?, ?, ?, ?, ?)",
            checkpoints,
        )
        conn.executemany(
            "INSERT INTO signals_prompts (session_id, key, entry_id, seq, turn_id, replies) VALUES (?, ?, ?, ?, ?, ?)",
            members,
        )


# ---------------------------------------------------------------------------- reading them


@dataclass(slots=True)
class StoredSignal:
    """A signal as stored: what the CLI and the TUI read."""

    session_id: str
    turn_id: str | None
    name: str
    severity: str
    seq: int | None
    detail: str
    evidence: list[Evidence]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def session_signals(conn: sqlite3.Connection, session_id: str) -> list[StoredSignal]:
    """A session's stored signals, in the order they happened (session-wide ones first)."""
    out = []
    for row in fetch(
        conn,
        "SELECT session_id, turn_id, name, severity, seq, detail, evidence FROM session_signals "
        "WHERE session_id = ? ORDER BY seq IS NOT NULL, seq, id",
        (session_id,),
    ):
        evidence = [Evidence(**item) for item in orjson.loads(row["evidence"])]
        out.append(
            StoredSignal(
                row["session_id"],
                row["turn_id"],
                row["name"],
                row["severity"],
                row["seq"],
                row["detail"],
                evidence,
            )
        )
    return out


def signal_counts(
    conn: sqlite3.Connection, session_ids: Iterable[str] | None = None
) -> dict[str, dict[str, int]]:
    """Session id → signal name → how many, for `session_ids` (None: every session with signals)."""
    if session_ids is None:
        rows = conn.execute("SELECT session_id, name, count(*) FROM session_signals GROUP BY 1, 2")
    else:
        rows = conn.execute(
            "SELECT session_id, name, count(*) FROM session_signals WHERE session_id IN "
            "(SELECT value FROM json_each(?)) GROUP BY 1, 2",
            (orjson.dumps(list(session_ids)).decode(),),
        )
    out: dict[str, dict[str, int]] = {}
    for session_id, name, count in rows:
        out.setdefault(session_id, {})[name] = count
    return out


def ranked_sessions(conn: sqlite3.Connection, limit: int = 20) -> list[tuple[SessionSummary, dict[str, int]]]:
    """The sessions with the most signals (ties: the newest first), each with its count by name."""
    ids = values(
        conn,
        "SELECT g.session_id FROM session_signals g JOIN agent_sessions s ON s.id = g.session_id "
        "GROUP BY g.session_id ORDER BY count(*) DESC, max(COALESCE(s.ended_at, s.created_at, 0)) DESC, "
        "g.session_id LIMIT ?",
        (limit,),
    )
    counts = signal_counts(conn, ids)
    out = []
    for session_id in ids:
        session = get_session(conn, session_id)
        if session is not None:
            out.append((session, counts.get(session_id, {})))
    return out


def excerpts(
    conn: sqlite3.Connection, session_id: str, found: list[StoredSignal]
) -> dict[tuple[int, str | None], str]:
    """(entry id, tool call id) → a one-line excerpt of each piece of evidence: a call's gist and
    its result's first line, or a message's text. Escaped of terminal sequences (`one_line`)."""
    from ..read.calls import result_text, tool_summary

    items = [e for s in found for e in s.evidence]
    calls = [
        ToolCall(
            e.tool_call_id, e.tool or "", None, None, None, None, None, None, e.result_entry_id, e.entry_id
        )
        for e in items
        if e.tool_call_id is not None
    ]
    stored = {
        (r["id"], r["entry_id"]): r
        for r in fetch(
            conn,
            "SELECT id, entry_id, params_json, result_json FROM agent_tool_calls WHERE session_id = ? AND id IN "
            "(SELECT value FROM json_each(?))",
            (session_id, orjson.dumps([c.id for c in calls]).decode()),
        )
    }
    source = conn.execute("SELECT source FROM agent_sessions WHERE id = ?", (session_id,)).fetchone()
    for c in calls:
        c.agent = source[0] if source else None  # whose adapter gives a call its gist
        row = stored.get((c.id, c.entry_id))
        if row is not None:
            c.params_json, c.result_json = row["params_json"], row["result_json"]
    fill_tool_io(conn, calls)
    out: dict[tuple[int, str | None], str] = {}
    for c in calls:
        result = one_line(result_text(c), 80)
        out[(c.entry_id or 0, c.id)] = tool_summary(c) + (f"  → {result}" if result else "")
    texts = dict(
        conn.execute(
            # a record without text (Codex's turn_aborted, compacted) says what it is: "(turn aborted)"
            "SELECT id, substr(COALESCE(content, thinking, tool_text, "
            "'(' || replace(COALESCE(subtype, entry_type), '_', ' ') || ')', ''), "
            "1, 400) FROM entries "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (orjson.dumps([e.entry_id for e in items if e.tool_call_id is None]).decode(),),
        )
    )
    for e in items:
        if e.tool_call_id is None:
            out[(e.entry_id, None)] = one_line(texts.get(e.entry_id), 100)
    return out
