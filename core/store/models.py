"""The ledger schema, declared once with SQLModel.

These classes are the schema of record: `core.store.db` creates the tables from their metadata when a
database is new or its `user_version` is stale. Hot paths (ingest, list views) read and write the
same tables through plain `sqlite3`, because building ORM objects costs 7-30x more per row
(see shared/PERF.md). Table and column names follow the seeds so their SQL runs unchanged.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Index, LargeBinary, UniqueConstraint
from sqlmodel import Field, SQLModel


def _zero() -> int:
    """An integer column that the database itself defaults to 0 (rows are written with raw SQL).

    Typed as the column's value, as SQLModel's own `Field` is, so a model reads as its columns."""
    field: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    return field


class SourceFile(SQLModel, table=True):
    """One file (or database) an agent wrote, and how far threadloom has read it."""

    __tablename__ = "source_files"

    id: int | None = Field(default=None, primary_key=True)
    path: str = Field(unique=True)
    agent: str
    # transcript | subagent | meta | journal | document | decoded | version (a superseded version
    # of another file: its records that a rewrite no longer holds, see core.ingest.pipeline's _Rewrite)
    kind: str = "transcript"
    size: int = 0
    mtime_ns: int = 0
    inode: int | None = None
    bytes_ingested: int = 0
    lines_ingested: int = 0
    # sha256 (128 bits, hex) of the head and the last 64 KiB of the ingested prefix: proves the
    # prefix is unchanged before an append is read, without re-reading a large file.
    content_hash: str | None = None
    # Offset of a last record that was complete JSON but had no newline yet; if the file grows
    # without starting a new line there, the file is read again.
    open_tail_offset: int | None = None
    ends_with_newline: bool = True
    status: str = "ok"  # ok | gone | error | waiting | superseded (kind 'version')
    error: str | None = None
    ingested_at: int | None = None
    project_key: str | None = None
    # with the inode, what tells a file rewritten under the same size and mtime (`touch -r`)
    ctime_ns: int | None = None


class Entry(SQLModel, table=True):
    """The zero-loss master: one row per record read from a source, raw bytes kept verbatim."""

    __tablename__ = "entries"
    __table_args__ = (UniqueConstraint("source_file_id", "byte_offset", name="uq_entries_file_offset"),)

    id: int | None = Field(default=None, primary_key=True)
    source_file_id: int = Field(foreign_key="source_files.id")
    byte_offset: int
    line_number: int
    newline: bool = True  # the record ended with "\n" in its source
    hash: str
    entry_type: str | None = None
    subtype: str | None = None
    known: bool = True  # False: a record type this adapter does not know (kept, shown as such)
    parse_error: str | None = None
    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    ref_uuid: str | None = None  # leafUuid of summaries, messageId of snapshots
    session_id: str | None = None
    agent_id: str | None = None
    timestamp: int | None = None  # unix ms
    is_sidechain: bool = False
    is_meta: bool = False
    role: str | None = None
    content: str | None = None  # searchable text (text blocks, summaries, system text)
    thinking: str | None = None
    tool_text: str | None = None  # tool inputs or outputs as plain text, searched with in:tools
    model: str | None = None
    message_id: str | None = None
    request_id: str | None = None
    seq: int | None = None  # position in its session's messages (agent_messages.sequence)
    turn_id: str | None = None
    dup_of: int | None = None  # an earlier entry with the same uuid in the same session
    # Last on purpose: SQLite reads a row's columns in order, so with the (often large) raw bytes at
    # the end, reading any other column never walks the raw value's overflow pages.
    raw: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class AgentSession(SQLModel, table=True):
    """A conversation: a main session, a subagent, or a sidechain (seed 000 plus totals)."""

    __tablename__ = "agent_sessions"

    id: str = Field(primary_key=True)
    source: str  # claude-code | codex | gemini | ...
    model: str | None = None
    project: str | None = None
    project_path: str | None = None
    created_at: int | None = None
    ended_at: int | None = None
    message_count: int = _zero()
    parent_session_id: str | None = Field(default=None, index=True)
    parent_message_id: str | None = None
    tool_call_id: str | None = None
    task_description: str | None = None
    task_status: str | None = None
    is_subagent: int = _zero()
    context_token_limit: int | None = None
    context_tokens_used: int | None = None
    is_agentic: int = _zero()
    force_mode: str | None = None
    workspace_path: str | None = None
    # threadloom's additions
    external_id: str | None = None  # the agent's own id (sessionId, agentId)
    kind: str = "main"  # main | subagent | sidechain | workflow | teammate | fork
    agent_id: str | None = None
    agent_type: str | None = None
    is_warmup: int = _zero()
    title: str | None = None
    title_source: str | None = None  # custom-title | ai-title | summary | prompt
    first_prompt: str | None = None
    git_branch: str | None = None
    cli_version: str | None = None
    input_tokens: int = _zero()
    output_tokens: int = _zero()
    cache_creation_tokens: int = _zero()
    cache_read_tokens: int = _zero()
    turn_count: int = _zero()
    tool_call_count: int = _zero()
    branch_count: int = _zero()
    compaction_count: int = _zero()
    forked_from_session_id: str | None = None
    cost_usd: float | None = None  # the priced messages' sum; None when none could be priced
    unpriced_messages: int = _zero()  # messages of a model the price table does not know
    spawn_key: str | None = None  # what finds the spawning tool call: an agentId or "run:<id>"
    source_file_id: int | None = None
    updated_at: int | None = None


class AgentTurn(SQLModel, table=True):
    """One user query and the response to it: the fork points of a conversation."""

    __tablename__ = "agent_turns"

    # its prompt's uuid, and its session: a session copied whole (Claude Code's /branch and
    # --fork-session keep every uuid) holds the same turns as its source, each session its own
    id: str = Field(primary_key=True)
    session_id: str = Field(primary_key=True, index=True)
    parent_turn_id: str | None = None
    query_message_ids: str = "[]"
    response_message_id: str | None = None
    model: str | None = None
    token_count: int = _zero()
    timestamp: int | None = None
    has_children: int = _zero()
    tool_call_count: int = _zero()
    started_at: int | None = None
    sequence: int = 0
    child_count: int = _zero()
    last_entry_uuid: str | None = None  # the turn's last record: where a fork at this turn cuts


class AgentToolCall(SQLModel, table=True):
    """A tool_use joined to its tool_result and to the subagent session it spawned.

    Keyed by the provider's tool id *and* the session: forks, side questions and Codex forks
    repeat their source's tool ids, and each session keeps its own calls and results."""

    __tablename__ = "agent_tool_calls"

    id: str = Field(primary_key=True)  # the provider's tool id (seed 000's name); unique per session only
    message_id: str | None = None
    session_id: str = Field(primary_key=True)  # and first in ix_tool_calls_session_entry
    tool_name: str
    tool_number: int = _zero()
    # both NULL where the adapter can re-read them from their records (`tool_io_in_record`, Claude):
    # core.read.query.fill_tool_io derives them from entry_id's / result_entry_id's raw bytes instead
    params_json: str | None = None
    result_json: str | None = None
    status: str | None = None  # completed | failed | rejected | interrupted | pending
    child_session_id: str | None = None
    started_at: int | None = None
    completed_at: int | None = None
    entry_id: int | None = None
    result_entry_id: int | None = None
    turn_id: str | None = None
    child_agent_id: str | None = None


class AgentUsage(SQLModel, table=True):
    """Token usage of one API message, deduplicated across streaming chunks and files."""

    __tablename__ = "agent_usage"

    message_id: str = Field(primary_key=True)
    request_id: str | None = None
    session_id: str = Field(index=True)
    turn_id: str | None = Field(default=None, index=True)
    entry_id: int | None = None
    model: str | None = None
    is_sidechain: int = _zero()
    input_tokens: int = _zero()
    output_tokens: int = _zero()
    cache_creation_tokens: int = _zero()
    cache_read_tokens: int = _zero()
    timestamp: int | None = None  # the message's time (ms): prices change on dates, stats group by day
    recorded_cost_usd: float | None = None  # the cost the agent wrote itself (old Claude Code's costUSD)
    cache_write_1h_tokens: int = _zero()  # of cache_creation_tokens, those kept an hour (priced higher)
    web_searches: int = _zero()  # searches the provider ran for the message, billed apiece
    cost_usd: float | None = None  # None: not priced yet, or a model the price table does not know
    priced: int = _zero()  # 1 once cost_usd is set from the current price data (see core.insight.cost)


class ModelRates(SQLModel, table=True):
    """A model's prices over a period whose first day is `day` (JSON: core.insight.cost.Rates as a list,
    null for a model the table does not know, and the day the period ends, null if open), kept so
    that pricing new messages need not load the whole price table each run."""

    __tablename__ = "model_rates"

    model: str = Field(primary_key=True)
    day: str = Field(primary_key=True)
    rates: str


class StatsRollup(SQLModel, table=True):
    """What one session did in one quarter hour with one model: the sums the stats read.

    Kept by the ledger as records land (core.insight.stats.refresh_pending recomputes the rows of each
    session an ingest or a repricing touched), so a report over the whole archive groups these
    rows instead of scanning messages. The time is a UTC quarter hour (`bucket`, ms // 900,000),
    not a day: every time zone's offset is a whole number of quarter hours, so a report can cut
    local days (or weeks, months) at query time in whatever zone it runs in."""

    __tablename__ = "stats_rollup"

    id: int | None = Field(default=None, primary_key=True)
    bucket: int | None = Field(default=None, index=True)  # None: records without a time
    session_id: str = Field(index=True)
    root_session_id: str  # the main session a subagent belongs to (itself for a main session)
    model: str = ""  # the API message's model; a message or call takes its turn's
    project_path: str = ""
    project: str = ""
    agent: str = ""
    messages: int = _zero()  # user and assistant messages
    api_messages: int = _zero()  # messages with token usage
    input_tokens: int = _zero()
    output_tokens: int = _zero()
    cache_creation_tokens: int = _zero()
    cache_read_tokens: int = _zero()
    cost_usd: float | None = None  # the sum of the known costs; None when none is known
    unpriced_messages: int = _zero()  # API messages whose cost is unknown
    tool_calls: int = _zero()
    failed_tool_calls: int = _zero()
    lines_added: int = _zero()
    lines_removed: int = _zero()


class StatsMessages(SQLModel, table=True):
    """How many messages a session had in a UTC quarter hour with a model, counted by the ledger as
    it places them (so the stats never read the messages again): the `messages` of stats_rollup."""

    __tablename__ = "stats_messages"

    session_id: str = Field(primary_key=True)
    bucket: int = Field(primary_key=True)  # timestamp ms // 900,000; -1: no time
    model: str = Field(primary_key=True)  # the model in use when it was sent ('' before any)
    messages: int = _zero()


class AgentFileChange(SQLModel, table=True):
    """The lines one editing call (or one Aider reply) added to and removed from one file.

    From Edit / MultiEdit / Write / NotebookEdit, Codex's apply_patch and Aider's SEARCH/REPLACE
    blocks; a call that failed (or never got its result) changed nothing and has no row."""

    __tablename__ = "agent_file_changes"

    session_id: str = Field(primary_key=True)
    call_id: str = Field(primary_key=True)  # the tool call's id; Aider: "entry-<id>" of the reply
    path: str = Field(primary_key=True)
    turn_id: str | None = None
    tool_name: str = ""
    timestamp: int | None = None
    lines_added: int = _zero()
    lines_removed: int = _zero()


class StatsPending(SQLModel, table=True):
    """Sessions whose `stats_rollup` rows are out of date: marked in the transaction that changed
    them (the ledger's, the pricing's), cleared by the refresh, so a run that dies in between
    leaves them marked for the next one."""

    __tablename__ = "stats_pending"

    session_id: str = Field(primary_key=True)
    root_session_id: str | None = None  # set by the refresh: the main session it belongs to
    since_bucket: int | None = None  # the quarter hour its rows are summed again from (None: all)


# Secondary indexes are created after a bulk load (see core.store.db.create_indexes); listing them here
# keeps the schema in one place.
def _columns(model: type[SQLModel]) -> Any:
    """A table model's columns (`__table__` is added by SQLModel's metaclass, unseen by type checkers)."""
    return model.__table__.c  # type: ignore[attr-defined]


_entry, _call, _session = _columns(Entry), _columns(AgentToolCall), _columns(AgentSession)
_usage = _columns(AgentUsage)
SECONDARY_INDEXES: list[Index] = [
    Index("ix_entries_session_seq", _entry.session_id, _entry.seq),
    Index("ix_entries_uuid", _entry.uuid),
    # a session's calls, and those of a page of its messages (`show` of 100,000 messages reads 200
    # pages: by session alone each page scanned all of the session's calls)
    Index("ix_tool_calls_session_entry", _call.session_id, _call.entry_id),
    # summaries name the session owning their leafUuid, often in another file: find them all fast
    Index(
        "ix_entries_summary",
        _entry.ref_uuid,
        sqlite_where=_entry.entry_type == "summary",
    ),
    Index("ix_tool_calls_child_agent", _call.child_agent_id),
    Index("ix_tool_calls_entry", _call.entry_id),
    Index("ix_tool_calls_result_entry", _call.result_entry_id),
    Index("ix_sessions_project", _session.project_path),
    # what is left to price: a handful of rows after an ingest, none on a run with nothing new
    Index("ix_usage_unpriced", _usage.message_id, sqlite_where=_usage.priced == 0),
]


class LedgerMeta(SQLModel, table=True):
    """Small facts about the ledger itself (e.g. that the search index needs a rebuild)."""

    __tablename__ = "ledger_meta"

    key: str = Field(primary_key=True)
    value: str | None = None


class SourceRoot(SQLModel, table=True):
    """A folder given with --source, remembered so later launches scan it again."""

    __tablename__ = "source_roots"

    path: str = Field(primary_key=True)
    added_at: int | None = None


# ---------------------------------------------------------------------------- signals (schema 11)


class SessionSignal(SQLModel, table=True):
    """Something a retrospective looks for in a session (a retry loop, an error cascade, a
    rejected call, ...), found by `core.insight.signals` from the derived tables, with the records it
    points at. Derived: brought up to date for a session each time an ingest touches it, from the
    checkpoint its last pass left (signals_state)."""

    __tablename__ = "session_signals"

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(index=True)
    turn_id: str | None = None  # the turn it happened in; None for the whole session
    name: str = Field(index=True)  # retry-loop | error-cascade | ... (core.base.text.SIGNALS)
    severity: str  # low | medium | high
    seq: int | None = None  # where it starts in the session (its first evidence), for ordering
    detail: str  # one sentence saying what was seen, with its numbers
    evidence: str = "[]"  # JSON list of {entry_id, seq, tool_call_id, tool, result_entry_id, result_seq}
