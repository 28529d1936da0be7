"""Signals: what a retrospective looks for in a session, found in what the ledger stored.

Each signal names the records it points at (entry ids, their positions in the session, tool call
ids), so a front end can jump to them. They are computed from the derived tables (`entries`,
`agent_tool_calls`, `agent_usage`, `agent_turns`, `agent_sessions`) after each ingest, for the
sessions it touched (and their parents: a subagent's cost counts in its parent's dead ends),
each session recomputed whole; after a rebuild, for every session. Nothing here reads a source
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
from typing import Any

import orjson
from rapidfuzz import fuzz
from threadloom.core.browse import COMPACTION_SUBTYPES, COMPACTION_TYPES, branches
from threadloom.core.db import set_meta
from threadloom.core.query import SessionSummary, ToolCall, fill_tool_io, get_session
from threadloom.core.rows import fetch, values
from threadloom.core.text import SIGNALS_VERSION, SIGNALS_VERSION_KEY, is_bare_command, one_line, task_notice


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
class _Session:
    conn: sqlite3.Connection
    id: str
    messages: list[_Message]
    calls: list[_Call]
    seq_of: dict[int, int]  # entry id → seq
    prompt_of: dict[str, _Message]  # turn id → the prompt that started it
    aborts: list[_Message]  # turns the user stopped, as the agent recorded it (ABORT_SUBTYPES)

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


def _load(conn: sqlite3.Connection, session_id: str) -> _Session:
    # only the columns before the (often large) tool text: a duplicate record has no seq
    messages = [
        _Message(*row)
        for row in conn.execute(
            "SELECT id, seq, uuid, role, entry_type, subtype, is_meta, timestamp, "
            "CASE WHEN role = 'user' THEN substr(content, 1, 4000) END "
            "FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq",
            (session_id,),
        )
    ]
    seq_of = {m.entry_id: m.seq for m in messages}
    calls = [
        _Call(*row)
        for row in conn.execute(
            # not the inputs (params_json: megabytes in a long session): read for failing runs alone
            "SELECT id, tool_name, status, entry_id, result_entry_id, turn_id, child_session_id, NULL "
            "FROM agent_tool_calls WHERE session_id = ? ORDER BY tool_number",
            (session_id,),
        )
    ]
    # calls in the order they were made: by their record's place, then their order within it
    calls.sort(key=lambda c: seq_of.get(c.entry_id, -1) if c.entry_id is not None else -1)
    # a turn's id is its prompt's uuid (or "entry-<id>" for a prompt without one)
    by_uuid = {m.uuid: m for m in messages if m.uuid is not None and m.role == "user"}
    by_id = {f"entry-{m.entry_id}": m for m in messages if m.uuid is None and m.role == "user"}
    prompt_of: dict[str, _Message] = {}
    for (turn_id,) in conn.execute("SELECT id FROM agent_turns WHERE session_id = ?", (session_id,)):
        prompt = by_uuid.get(turn_id) or by_id.get(turn_id)
        if prompt is not None:
            prompt.turn_id = turn_id
            prompt_of[turn_id] = prompt
    prompt_of = dict(sorted(prompt_of.items(), key=lambda item: item[1].seq))
    return _Session(conn, session_id, messages, calls, seq_of, prompt_of, _aborts(conn, session_id, messages))


def _aborts(conn: sqlite3.Connection, session_id: str, messages: list[_Message]) -> list[_Message]:
    """The records of turns the user stopped. Not messages (no seq of their own): each is placed
    at the last message written before it, where the viewer shows the turn ending."""
    rows = conn.execute(
        "SELECT id, turn_id, timestamp, raw FROM entries WHERE session_id = ? AND seq IS NULL "
        "AND subtype IN (SELECT value FROM json_each(?)) ORDER BY id",
        (session_id, orjson.dumps(sorted(ABORT_SUBTYPES)).decode()),
    ).fetchall()
    if not rows:  # nearly every session: no need to order its messages by record
        return []
    found = []
    ordered = sorted((m.entry_id, m.seq) for m in messages)
    ids = [entry_id for entry_id, _ in ordered]
    for entry_id, turn_id, timestamp, raw in rows:
        try:
            record = orjson.loads(bytes(raw))
        except orjson.JSONDecodeError:
            continue
        payload = record.get("payload") if isinstance(record, dict) else None
        reason = payload.get("reason") if isinstance(payload, dict) else None
        if not isinstance(reason, str) or reason not in ABORTS_BY_THE_USER:  # a log's value: any type
            continue
        place = bisect_left(ids, entry_id)
        seq = ordered[place - 1][1] if place > 0 else 0
        found.append(_Message(entry_id, seq, None, None, None, None, 0, timestamp, None, turn_id))
    return found


# ---------------------------------------------------------------------------- finding them


def find_signals(conn: sqlite3.Connection, session_id: str) -> list[Signal]:
    """Every signal of one session, in the order they happened (session-wide ones first)."""
    session = _load(conn, session_id)
    found: list[Signal] = []
    found += _failing_runs(conn, session)
    found += _friction(session)
    found += _thrashing(session)
    found += _dead_ends(conn, session)
    usage = fetch(
        conn,
        "SELECT message_id, entry_id, turn_id, model, input_tokens, output_tokens, cache_creation_tokens, "
        "cache_read_tokens FROM agent_usage WHERE session_id = ? AND is_sidechain = 0 ORDER BY entry_id",
        (session_id,),
    )
    found += _cache_misses(session, usage)
    found += _model_changes(session, usage)
    found += _long_pauses(session, {u["message_id"]: u["output_tokens"] for u in usage})
    found += _repeated_prompts(session)
    found.sort(key=lambda s: (s.seq is not None, s.seq or 0))
    return found


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


def _thrashing(session: _Session) -> list[Signal]:
    """Compactions per hour: the densest window of compactions, when it holds enough of them."""
    marks = [
        m
        for m in session.messages
        if m.timestamp is not None and (m.subtype in COMPACTION_SUBTYPES or m.entry_type in COMPACTION_TYPES)
    ]
    need = int(limit("thrashing_compactions"))
    if len(marks) < need:
        return []
    window = limit("thrashing_window_minutes") * 60_000
    best: list[_Message] = []
    start = 0
    for end in range(len(marks)):
        while (marks[end].timestamp or 0) - (marks[start].timestamp or 0) > window:
            start += 1
        if end - start + 1 > len(best):
            best = marks[start : end + 1]
    if len(best) < need:
        return []
    span_ms = (best[-1].timestamp or 0) - (best[0].timestamp or 0)
    times = [m.timestamp or 0 for m in session.messages if m.timestamp]
    hours = max((max(times) - min(times)) / 3_600_000, 1.0)
    detail = (
        f"{len(best)} compactions within {round(span_ms / 60_000)} min "
        f"({len(marks)} in the session, {len(marks) / hours:.1f} per hour)"
    )
    severity = "high" if len(best) > need else "medium"
    return [
        Signal(
            session.id,
            None,
            "context-thrashing",
            severity,
            detail,
            [session.message_evidence(m) for m in best],
        )
    ]


def _dead_ends(conn: sqlite3.Connection, session: _Session) -> list[Signal]:
    """Cost spent on branches rewound away from, and on subagents whose result never came back."""
    out: list[Signal] = []
    minimum = limit("dead_end_usd")
    abandoned_turns: set[str] = set()
    turn_costs: dict[str | None, float] | None = None
    found = branches(conn, session.id)
    if found:
        kept = set(next(b for b in found if b.active).turn_ids)
        for branch in found:
            if branch.active:
                continue
            turns = [t for t in branch.turn_ids if t not in kept and t not in abandoned_turns]
            abandoned_turns.update(turns)
            if not turns:
                continue
            if turn_costs is None:
                turn_costs = _turn_costs(conn, session)
            cost = sum(turn_costs.get(t, 0.0) for t in turns)
            if cost < minimum:
                continue
            prompts = [session.prompt_of[t] for t in turns if t in session.prompt_of]
            out.append(
                Signal(
                    session.id,
                    turns[0],
                    "abandoned-branch",
                    "high" if cost >= limit("high_usd") else "medium",
                    f"${cost:.2f} spent on {len(turns)} turn{'s' if len(turns) != 1 else ''} of a branch "
                    f"rewound away from (branch {branch.number})",
                    [session.message_evidence(p) for p in prompts],
                )
            )
    later_turns = _turns_in_order(session)
    for call in session.calls:
        if call.child_session_id is None or call.turn_id in abandoned_turns:
            continue  # an abandoned branch's subagents are counted in its cost
        if call.status in ("failed", "interrupted", "rejected"):
            never_back = True
        else:  # still running when the log ends is no dead end; going on to another turn without it is
            never_back = call.result_entry_id is None and later_turns.get(call.turn_id, False)
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
                [session.call_evidence(call)],
            )
        )
    return out


def _turns_in_order(session: _Session) -> dict[str | None, bool]:
    """Turn id → whether another turn began after it."""
    last = max((p.seq for p in session.prompt_of.values()), default=-1)
    return {turn: prompt.seq < last for turn, prompt in session.prompt_of.items()}


def _turn_costs(conn: sqlite3.Connection, session: _Session) -> dict[str | None, float]:
    """Turn id → the cost of its API messages plus that of the subagents it spawned (read once: a
    session rewound fifty times asked it fifty times)."""
    costs: dict[str | None, float] = dict(
        conn.execute(
            "SELECT turn_id, COALESCE(sum(cost_usd), 0) FROM agent_usage WHERE session_id = ? GROUP BY turn_id",
            (session.id,),
        )
    )
    for call in session.calls:
        if call.child_session_id:
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


def _cache_misses(session: _Session, usage: list[sqlite3.Row]) -> list[Signal]:
    """Requests after the first of a turn whose context was mostly not read from the cache.
    Only for sessions whose agent reports cache tokens at all; the first request after a
    compaction or a model change starts a new cache and is not counted."""
    if not any(u["cache_read_tokens"] or u["cache_creation_tokens"] for u in usage):
        return []
    restarts = sorted(
        m.seq
        for m in session.messages
        if m.subtype in COMPACTION_SUBTYPES or m.entry_type in COMPACTION_TYPES
    )
    minimum = limit("cache_miss_context_tokens")
    share = limit("cache_miss_read_share")
    misses: dict[str | None, list[tuple[sqlite3.Row, int]]] = {}
    previous: sqlite3.Row | None = None
    for row in usage:
        before, previous = previous, row
        if before is None or row["turn_id"] is None or before["turn_id"] != row["turn_id"]:
            continue  # the first request of a turn
        if before["model"] != row["model"]:
            continue  # another model has its own cache
        seq, prev_seq = session.seq_of.get(row["entry_id"], -1), session.seq_of.get(before["entry_id"], -1)
        if bisect_left(restarts, seq) != bisect_left(restarts, prev_seq):
            continue  # a compaction between the two starts the context afresh
        context = row["input_tokens"] + row["cache_creation_tokens"] + row["cache_read_tokens"]
        if context >= minimum and row["cache_read_tokens"] < share * context:
            misses.setdefault(row["turn_id"], []).append((row, context - row["cache_read_tokens"]))
    out = []
    for turn_id, rows in misses.items():
        uncached = sum(n for _, n in rows)
        detail = (
            f"{len(rows)} request{'s' if len(rows) != 1 else ''} in the turn sent {uncached:,} context tokens "
            "without reading them from the cache"
        )
        evidence = [
            Evidence(entry_id=row["entry_id"], seq=session.seq_of.get(row["entry_id"]))
            for row, _ in rows
            if row["entry_id"] is not None
        ]
        severity = "high" if uncached >= limit("high_cache_miss_tokens") else "medium"
        out.append(Signal(session.id, turn_id, "cache-miss", severity, detail, evidence))
    return out


def _model_changes(session: _Session, usage: list[sqlite3.Row]) -> list[Signal]:
    """Each point where an API message's model differs from the one before it."""
    out = []
    last: sqlite3.Row | None = None
    for row in usage:
        if (row["model"] or "") in SYNTHETIC_MODELS or row["entry_id"] is None:
            continue
        if last is not None and row["model"] != last["model"]:
            out.append(
                Signal(
                    session.id,
                    row["turn_id"],
                    "model-change",
                    "low",
                    f"the model changed from {last['model']} to {row['model']}",
                    [
                        Evidence(last["entry_id"], session.seq_of.get(last["entry_id"])),
                        Evidence(row["entry_id"], session.seq_of.get(row["entry_id"])),
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


def _repeated_prompts(session: _Session) -> list[Signal]:
    """Prompts sent again in the same session, case, spacing and punctuation aside (short ones
    excepted). Not by similarity: "Migrate imports; watch out for …" and "Migrate reports; watch
    out for …" are 97 % alike and two requests. A prompt echoed before any reply (Aider writes
    `/ask X`, then `X`) is one request, not two."""
    groups: list[list[_Message]] = []
    group_of: dict[str, int] = {}  # normalized text → its group
    replies_before: dict[int, int] = {}  # a prompt's entry id → assistant messages before it
    replies = 0
    for message in session.messages:
        if message.role == "assistant":
            replies += 1
        elif message.turn_id is not None:
            replies_before[message.entry_id] = replies
    for prompt in session.prompt_of.values():
        text = prompt.text or ""
        if (
            prompt.is_meta
            or len(text.strip()) < limit("repeated_prompt_chars")
            or text.lstrip().startswith(INTERRUPTED_TEXT)
        ):
            continue
        norm = " ".join(text.lower().translate(PUNCTUATION_AS_SPACE).split())
        index = group_of.get(norm)
        if index is None:
            group_of[norm] = len(groups)
            groups.append([prompt])
            continue
        group = groups[index]
        if replies_before[prompt.entry_id] > replies_before[group[-1].entry_id]:
            group.append(prompt)
    out = []
    for group in groups:
        if len(group) < 2:
            continue
        first = group[0].text or ""
        if task_notice(first) is not None or is_bare_command(first):
            continue  # not typed by the user, or a bare command; looked at once per repeated text (regexes)
        out.append(
            Signal(
                session.id,
                group[1].turn_id,
                "repeated-prompt",
                "medium" if len(group) > 2 else "low",
                f"the same prompt was sent {len(group)} times",
                [session.message_evidence(p) for p in group],
            )
        )
    return out


# ---------------------------------------------------------------------------- storing them


SessionsDone = Callable[[int, int], None]  # (sessions looked at, of how many): a long pass's progress
PROGRESS_SECONDS = 0.2  # how often a long pass says how far it is


def update(conn: sqlite3.Connection, sessions: Iterable[str], progress: SessionsDone | None = None) -> float:
    """Recompute the signals of `sessions` and of their parent sessions (a subagent's cost is
    its parent's dead end); returns the seconds it took."""
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
    """Recompute every session's signals (after the derived tables were rebuilt, or when the
    signals found were found by an older SIGNALS_VERSION)."""
    started = time.perf_counter()
    sessions = values(conn, "SELECT id FROM agent_sessions ORDER BY id")
    _store(conn, sessions, clear_all=True, progress=progress)
    set_meta(conn, SIGNALS_VERSION_KEY, SIGNALS_VERSION)
    return time.perf_counter() - started


def _store(
    conn: sqlite3.Connection, sessions: list[str], *, clear_all: bool, progress: SessionsDone | None = None
) -> None:
    rows = []
    shown = time.perf_counter()
    for done, session_id in enumerate(sessions):
        if progress is not None and time.perf_counter() - shown > PROGRESS_SECONDS:
            progress(done, len(sessions))
            shown = time.perf_counter()
        for signal in find_signals(conn, session_id):
            evidence = orjson.dumps([asdict(e) for e in signal.evidence]).decode()
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
    conn.execute("BEGIN")
    try:
        if clear_all:
            conn.execute("DELETE FROM session_signals")
        else:
            conn.executemany("DELETE FROM session_signals WHERE session_id = ?", [(s,) for s in sessions])
        conn.executemany(
            "INSERT INTO session_signals (session_id, turn_id, name, severity, seq, detail, evidence) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


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
    from threadloom.core.calls import result_text
    from threadloom.core.render import tool_summary  # Rich, loaded only by what prints

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
    for c in calls:
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
