"""Read API over the ledger for the CLI and the TUI: plain dataclasses, summary columns only.

Sessions are `SessionSummary` (the CLI's list and the TUI's tree alike), tool calls `ToolCall`;
rows are read by column name (`core.store.rows`), and what a subagent is is decided by `subagent_sql`
alone. `core.read.browse` adds what only the TUI asks (the tree, message pages, branches).
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_left
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..base.markup import HookRun, hook_runs
from ..base.text import flat, human_tokens, prompt_title
from ..store.db import MACHINE_KEY, WHO_KEY
from ..store.rows import builder, fetch_one, values
from ..store.sql import like_text

if TYPE_CHECKING:
    from ..adapters.base import ImageRef

# ---------------------------------------------------------------------------- subagents


def subagent_sql(alias: str = "") -> str:
    """The one test of a subagent, as SQL on agent_sessions (`alias`: its alias with the dot).

    A subagent is what ingest flagged as one from the agent's own records (a Claude agent file
    or sidechain, a spawned Codex thread, a Roo subtask, ...): a session of its own that another
    session started. A fork names the session it came from as its parent but is not a subagent;
    a subagent whose parent was never found still is. `SessionSummary.is_subagent` is this flag."""
    return f"{alias}is_subagent = 1"


def main_sql(alias: str = "") -> str:
    """Not a subagent (see `subagent_sql`), in the form the sessions' indexes can use."""
    return f"{alias}is_subagent = 0"


# ---------------------------------------------------------------------------- sessions


@dataclass(slots=True)
class SessionSummary:
    """One session as the CLI lists it and the TUI's tree shows it: summary columns only.

    `title` is the stored title (None without one), except from the tree's queries
    (`core.read.browse`), which give a session without one its first prompt or task, on one line: what
    its row shows. `child_count` is read by those queries only."""

    id: str
    agent: str
    project: str | None
    project_path: str | None
    title: str | None
    started_at: int | None
    ended_at: int | None
    message_count: int
    is_subagent: bool  # see subagent_sql
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
    cost_usd: float | None = None  # its priced messages' sum (core.insight.cost); None when none is priced
    unpriced_messages: int = 0  # messages of models the price table does not know
    first_prompt: str | None = None  # the first thing the user asked (up to 2,000 characters)
    file_path: str | None = None  # the agent's file it was read from (a database for some agents)
    child_count: int = 0  # non-empty sessions naming it their parent (subagents, forks): the tree's only
    signal_count: int = 0  # its signals (core.insight.signals): the tree's only, for its badge
    has_usage: bool = (
        True  # whether its agent recorded any token counts (an agent_usage row, its or its source's)
    )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_creation_tokens + self.cache_read_tokens

    @property
    def cost_text(self) -> str:
        """The cost as a reader wants it: "$1.23", "$1.23 + ?" when some messages could not be
        priced, "?" when none could, "" for a session with no API messages."""
        if self.cost_usd is None:
            return "?" if self.unpriced_messages else ""
        return money(self.cost_usd) + (" + ?" if self.unpriced_messages else "")

    @property
    def tokens_text(self) -> str:
        """Its tokens as a reader wants them: "215k", "0" only when its usage records say 0, "?"
        when its agent recorded none (Amazon Q, Cursor): not a count of nothing."""
        return human_tokens(self.total_tokens) if self.has_usage else "?"

    @property
    def tokens(self) -> int:
        """`total_tokens`, by the name the tree's rows use."""
        return self.total_tokens

    @property
    def duration_ms(self) -> int | None:
        """From its first record to its last; None when either time is unknown."""
        if self.started_at is None or self.ended_at is None:
            return None
        return max(0, self.ended_at - self.started_at)

    @property
    def last_activity(self) -> int | None:
        """When it was last written to: what "recent" sorts by and what a list row shows."""
        return self.ended_at or self.started_at

    @property
    def machine(self) -> str | None:
        """The machine its file came from when it was pulled from a sync hub (core.ingest.sync: its file is
        named under core.store.db.MIRROR_ROOT, then the machine), else None: this machine's own."""
        from ..store.db import MIRROR_ROOT

        path = self.file_path or ""
        if not path.startswith(MIRROR_ROOT + "/"):
            return None
        return path[len(MIRROR_ROOT) + 1 :].split("/", 1)[0] or None

    @property
    def has_children(self) -> bool:
        """Whether its row in the tree expands: subagents, branches or compaction segments below it."""
        return self.child_count > 0 or self.branch_count > 0 or self.compaction_count > 0

    def as_dict(self) -> dict[str, Any]:
        """The fields `threadloom sessions --json` prints, in their order (not the tree's count),
        then its duration."""
        out = {name: getattr(self, name) for name in SESSION_JSON_FIELDS}
        out["duration_ms"] = self.duration_ms
        return out


UNTITLED = "(untitled)"
UNTITLED_SUBAGENT = "(subagent)"


def title_sql(alias: str = "s.") -> str:
    """The one SQL expression of what names a session in a list, on agent_sessions (`alias`: its
    alias with the dot): a subagent by the task it was given, else its title, else its first
    prompt; any other session by its title, else its first prompt, else a task. '' when it has
    none of them. `display_title` is the same rule in Python."""
    a = alias
    return (
        f"CASE WHEN {a}is_subagent = 1 THEN COALESCE(NULLIF(trim({a}task_description), ''), "
        f"NULLIF(trim({a}title), ''), NULLIF(trim({a}first_prompt), ''), '') "
        f"ELSE COALESCE(NULLIF(trim({a}title), ''), NULLIF(trim({a}first_prompt), ''), "
        f"NULLIF(trim({a}task_description), ''), '') END"
    )


def display_title(session: Any) -> str:
    """What names a session wherever one is shown (the tree, the lists, `show`, exports, the
    palettes, the fork picker), on one line: the rule of `title_sql`, read from a session's
    `is_subagent`, `task_description`, `title` and `first_prompt` (those it has); a prompt is
    titled as the ledger titles one (`core.base.text.prompt_title`). Whatever in it a terminal would act
    on is drawn as text (`core.base.text.flat`). "(untitled)", "(subagent)" when it has no name at all."""
    subagent = bool(getattr(session, "is_subagent", False))
    task = getattr(session, "task_description", None)
    title = getattr(session, "title", None)
    prompt = getattr(session, "first_prompt", None)
    for text in (task, title) if subagent else (title,):
        if text and text.strip():
            return flat(text)
    if prompt and prompt.strip():
        return flat(prompt_title(prompt))
    if not subagent and task and task.strip():
        return flat(task)
    return UNTITLED_SUBAGENT if subagent else UNTITLED


def money(usd: float) -> str:
    """$0.0042, $0.42, $4.20, $1,234: cents once a cent matters, two significant digits below it,
    and under a hundredth of a cent only that (never `2.8e-05`)."""
    if usd >= 1000:
        return f"${usd:,.0f}"
    if usd >= 0.01 or usd == 0:
        return f"${usd:.2f}"
    if usd < 0.0001:
        return "<$0.0001"
    return f"${usd:.2g}"


SESSION_JSON_FIELDS = tuple(
    f.name for f in fields(SessionSummary) if f.name not in ("child_count", "signal_count", "has_usage")
)

# the columns of SessionSummary, named as its fields, on agent_sessions `s`; {title} is its title
_SESSION_COLUMNS = (
    "s.id, s.source AS agent, s.project, s.project_path, {title} AS title, s.created_at AS started_at, "
    "s.ended_at, s.message_count, s.is_subagent, s.parent_session_id, s.model, s.input_tokens, "
    "s.output_tokens, s.cache_creation_tokens, s.cache_read_tokens, s.kind, s.agent_type, "
    "s.task_description, s.task_status, s.tool_call_id, s.is_warmup, s.turn_count, s.tool_call_count, "
    "s.branch_count, s.compaction_count, s.git_branch, s.forked_from_session_id, s.cost_usd, "
    "s.unpriced_messages, {first_prompt} AS first_prompt, "
    "(SELECT f.path FROM source_files f WHERE f.id = s.source_file_id) AS file_path, "
    # a fork's copies leave their usage with its source (counted once): a fork of a session that
    # counts tokens (or of a fork of one) counts its own, 0 until it is resumed, not "?" as of an
    # agent that counts none
    "CASE WHEN EXISTS (SELECT 1 FROM agent_usage u WHERE u.session_id = s.id) THEN 1 "
    "WHEN s.forked_from_session_id IS NULL THEN 0 ELSE EXISTS ("
    "WITH RECURSIVE up(id) AS (SELECT s.forked_from_session_id UNION "
    "SELECT f.forked_from_session_id FROM agent_sessions f JOIN up ON f.id = up.id "
    "WHERE f.forked_from_session_id IS NOT NULL) "
    "SELECT 1 FROM agent_usage u WHERE u.session_id IN (SELECT id FROM up)) END AS has_usage"
)


def session_select(*, title: str = "s.title", first_prompt: str = "s.first_prompt", more: str = "") -> str:
    """`SELECT <the columns of SessionSummary> FROM agent_sessions s`: `title` and `first_prompt`
    are the SQL of those, `more` further columns (", <expr> AS child_count")."""
    columns = _SESSION_COLUMNS.format(title=title, first_prompt=first_prompt)
    return f"SELECT {columns}{more} FROM agent_sessions s"


_SESSION_SELECT = session_select()


def read_sessions(cursor: sqlite3.Cursor) -> list[SessionSummary]:
    """The sessions a `session_select` query returned, its flags as booleans."""
    build = builder(cursor, SessionSummary)
    out = []
    for row in cursor:
        s = build(row)
        s.is_subagent = bool(s.is_subagent)
        s.is_warmup = bool(s.is_warmup)
        s.has_usage = bool(s.has_usage)
        out.append(s)
    return out


def agent_filter(conn: sqlite3.Connection, name: str, *, prefix: bool = False) -> str:
    """An agent filter (`--agent`, search's `agent:`, the MCP tools' agent) as the archive names the
    agent: gemini-cli is gemini (core.adapters.archive_agent). `prefix`: search's, which takes the
    start of a name. Raises core.adapters.UnknownAgent, naming the agents there are, when `name`
    names none: the adapters' names first, the agents the archive's sessions hold only then."""
    from ..adapters import UnknownAgent, archive_agent

    try:
        return archive_agent(name, prefix=prefix)
    except UnknownAgent:
        stored = values(conn, "SELECT DISTINCT source FROM agent_sessions WHERE source IS NOT NULL")
        return archive_agent(name, stored, prefix=prefix)


def list_sessions(
    conn: sqlite3.Connection,
    *,
    project: str | None = None,
    agent: str | None = None,
    include_subagents: bool = True,
    include_empty: bool = False,
    machine: str | None = None,
    who: str | None = None,
) -> list[SessionSummary]:
    """Sessions newest first; `project` matches the project name or path (substring); `machine` and
    `who`: the sessions of that machine or person (a name's prefix; see core.ingest.sync.origin_filter)."""
    where: list[str] = []
    params: list[Any] = []
    if machine or who:
        from .query import origin_filter

        where, params = origin_filter("s.", machine, who)
    if project:
        where.append("(s.project = ? OR s.project_path = ? OR s.project_path LIKE ? ESCAPE '\\')")
        params += [project, project, f"%{like_text(project)}%"]
    if agent:
        where.append("s.source = ?")
        params.append(agent)
    if not include_subagents:
        where.append(main_sql("s."))
    if not include_empty:
        where.append("s.message_count > 0")
    sql = _SESSION_SELECT + (" WHERE " + " AND ".join(where) if where else "")
    sql += " ORDER BY COALESCE(s.ended_at, s.created_at, 0) DESC, s.id"
    return read_sessions(conn.execute(sql, params))


# ---------------------------------------------------------------------------- sorting and filtering
# pure functions over the sessions a query returned: the TUI's list and `threadloom sessions` share them

SORT_ORDERS = ("recent", "oldest", "messages", "tokens", "duration")


def sort_sessions(sessions: list[SessionSummary], order: str = "recent") -> list[SessionSummary]:
    """`recent`: last activity, newest first; `oldest`: started, oldest first; `messages`,
    `tokens`, `duration`: largest first. Ties (and unknown times, which go last) keep the
    newest first, so a sorted list reads the same from run to run."""
    if order not in SORT_ORDERS:
        raise ValueError(f"unknown order {order!r}; one of {', '.join(SORT_ORDERS)}")
    recent = sorted(sessions, key=lambda s: (s.last_activity is None, -(s.last_activity or 0), s.id))
    if order == "recent":
        return recent
    if order == "oldest":
        return sorted(recent, key=lambda s: (s.started_at is None, s.started_at or 0))
    if order == "messages":
        return sorted(recent, key=lambda s: s.message_count, reverse=True)  # sorted() is stable
    if order == "tokens":
        return sorted(recent, key=lambda s: s.total_tokens, reverse=True)
    return sorted(recent, key=lambda s: -1 if s.duration_ms is None else s.duration_ms, reverse=True)


def owner_of(session: SessionSummary) -> str | None:
    """The session a subagent belongs under: its parent, else the main session its id names (a
    Claude subagent not linked yet is "<main>:agent-…"); None for any other session."""
    if not session.is_subagent:
        return None
    if session.parent_session_id:
        return session.parent_session_id
    return session.id.split(":", 1)[0] if ":" in session.id else None


def under_their_sessions(sessions: list[SessionSummary]) -> list[tuple[SessionSummary, int]]:
    """`sessions` in their order, each subagent moved under the session that started it (a nested
    one under its own), with its depth there: 0 for a session listed on its own, a subagent whose
    session is not in the list included. A list sorted by time alone put a subagent under whatever
    session happened to come before it."""
    listed = {s.id for s in sessions}
    below: dict[str, list[SessionSummary]] = {}
    tops = []
    for s in sessions:
        owner = owner_of(s)
        if owner is not None and owner in listed and owner != s.id:
            below.setdefault(owner, []).append(s)
        else:
            tops.append(s)
    out: list[tuple[SessionSummary, int]] = []
    placed: set[str] = set()

    def place(s: SessionSummary, depth: int) -> None:
        if s.id in placed:
            return
        placed.add(s.id)
        out.append((s, depth))
        for child in below.get(s.id, []):
            place(child, depth + 1)

    for s in tops:
        place(s, 0)
    for s in sessions:  # owners that name each other (a damaged link): listed all the same
        place(s, 0)
    return out


def session_matches(session: SessionSummary, text: str) -> bool:
    """Whether every word of `text` is in the session's title, id, git branch or first prompt
    (case-insensitive substrings, in any order and any of those fields)."""
    words = text.casefold().split()
    if not words:
        return True
    fields = (session.title, session.id, session.git_branch, session.first_prompt)
    haystack = "\n".join(f for f in fields if f).casefold()
    return all(word in haystack for word in words)


def agents_of(sessions: list[SessionSummary]) -> list[str]:
    """The agents that wrote these sessions, in name order (what an agent filter cycles through)."""
    return sorted({s.agent for s in sessions})


@dataclass(slots=True)
class SessionView:
    """How a list of sessions is shown: the words it must match, its order, one agent only (None:
    all), whether sessions of fewer than two messages are hidden, and the sessions the user hid
    (`hidden`: their ids, listed only with `show_hidden`)."""

    text: str = ""
    order: str = "recent"
    agent: str | None = None
    hide_short: bool = False
    hidden: frozenset[str] = field(default_factory=frozenset)
    show_hidden: bool = False

    def apply(self, sessions: list[SessionSummary]) -> list[SessionSummary]:
        kept = [
            s
            for s in sessions
            if (self.agent is None or s.agent == self.agent)
            and not (self.hide_short and s.message_count < 2)
            and (self.show_hidden or s.id not in self.hidden)
            and session_matches(s, self.text)
        ]
        return sort_sessions(kept, self.order)

    def hides(self, session: SessionSummary) -> bool:
        """Whether the user hid it and hidden ones are not shown now."""
        return not self.show_hidden and session.id in self.hidden

    @property
    def narrows(self) -> bool:
        """Whether it can leave sessions out (the list then says how many of how many it shows)."""
        return bool(self.text.strip()) or self.agent is not None or self.hide_short


def get_session(conn: sqlite3.Connection, session_id: str) -> SessionSummary | None:
    found = read_sessions(conn.execute(_SESSION_SELECT + " WHERE s.id = ?", (session_id,)))
    return found[0] if found else None


class AmbiguousSession(LookupError):
    pass


def message_ref(ref: str) -> tuple[str, int] | None:
    """(session reference, message number) of `SESSION#n`, the form `show` prints and answers
    cite; None for anything else."""
    session, mark, number = ref.rpartition("#")
    if mark and number.isdigit() and session:
        return session, int(number)
    return None


def cited_message(conn: sqlite3.Connection, ref: str) -> tuple[str, int] | None:
    """`message_ref` of `ref`, unless `ref` names a session whole: a Cursor chat tab's id ends '#n'
    itself (cursor-chat:WORKSPACE#2), and its message #1 is cursor-chat:WORKSPACE#2#1."""
    cited = message_ref(ref)
    return None if cited is None or get_session(conn, ref) is not None else cited


def resolve_session(conn: sqlite3.Connection, ref: str) -> SessionSummary:
    """A session by full id, unique id prefix, the agent's own id, or a subagent's own id (or its
    prefix: what `threadloom sessions` lists for it); clear errors otherwise."""
    found = get_session(conn, ref)
    if found:
        return found
    escaped = like_text(ref)
    where = f"WHERE id LIKE ? ESCAPE '\\' OR external_id = ? OR ({subagent_sql()} AND id LIKE ? ESCAPE '\\')"
    params = (escaped + "%", ref, "%:" + escaped + "%")
    rows = conn.execute(
        f"SELECT id, {subagent_sql()} FROM agent_sessions {where} ORDER BY {subagent_sql()}, id LIMIT 6",
        params,
    ).fetchall()
    ids = [row[0] for row in rows]
    # a main session by the flag, not by a ':' in its id: every aider id (`aider:...`) has one
    mains = [row[0] for row in rows if not row[1]]
    candidates = mains if len(mains) == 1 else ids
    if len(candidates) == 1:
        result = get_session(conn, candidates[0])
        if result is None:  # found through the id index but not in the table: only damage does that
            raise sqlite3.DatabaseError(
                f"database disk image is malformed: the session index names {candidates[0]!r}, "
                "the sessions table does not hold it"
            )
        return result
    if not candidates:
        cited = message_ref(ref)
        if cited is not None:
            session, number = cited
            found = resolve_session(conn, session)  # says what is wrong with the session's part
            raise LookupError(
                f"{ref!r} is message {number} of a session: give the session's id alone here "
                f"({found.id}); a message's #{number} is for show, tag, note and bookmark"
            )
        raise LookupError(f"no session matches {ref!r}; `threadloom sessions` lists them")
    count = values(conn, f"SELECT count(*) FROM agent_sessions {where}", params)[0]
    more = f", ... ({count} in all)" if count > 5 else ""
    raise AmbiguousSession(
        f"{ref!r} matches several sessions: {', '.join(candidates[:5])}{more}; give more of the id"
    )


def unrelated_holders(conn: sqlite3.Connection, holders: dict[str, int]) -> str:
    """Of the sessions holding one record uuid or turn id (each with its entry id there, the
    first first), "" when they are the first and its forks (a fork's copies are its source's: the
    first is meant), else each named by that entry id: which of unrelated sessions (a copied
    session folder) is meant cannot be told, and the entry id says it."""
    if len(holders) < 2:
        return ""
    source = next(iter(holders))
    forks = set(
        values(conn, "SELECT id FROM agent_sessions WHERE parent_session_id = ? AND kind = 'fork'", (source,))
    )
    others = [sid for sid in holders if sid != source and sid not in forks]
    if not others:
        return ""
    return ", ".join(f"{holders[sid]} (session {sid})" for sid in [source, *others][:6])


def short_ids(conn: sqlite3.Connection, minimum: int = 13) -> dict[str, str]:
    """Each main session's id cut to the shortest prefix (at least `minimum` characters) that no
    other main session's id starts with: what `threadloom sessions` prints, so that `show`,
    `resume` and `fork` take it back unambiguously (many of aider's ids share their first 13)."""
    return short_ids_of(sorted(values(conn, f"SELECT id FROM agent_sessions WHERE {main_sql()}")), minimum)


def short_ids_of(ids: list[str], minimum: int) -> dict[str, str]:
    """Each of these sorted ids cut to the shortest prefix (at least `minimum`) no other starts with."""
    shown = {}
    for i, sid in enumerate(ids):
        need = minimum
        for other in (ids[i - 1] if i else "", ids[i + 1] if i + 1 < len(ids) else ""):
            common = next(
                (n for n, (a, b) in enumerate(zip(sid, other, strict=False)) if a != b),
                min(len(sid), len(other)),
            )
            need = max(need, common + 1)
        shown[sid] = sid[:need]
    return shown


def short_subagent_ids(conn: sqlite3.Connection, minimum: int = 13) -> dict[str, str]:
    """Each subagent's own id (what follows its session's, `agent-a6d4b2c0e1f2a3b4c`) cut as
    `short_ids` cuts a main session's, to the shortest prefix no other subagent's own id starts
    with: a whole one widened the id column of `threadloom sessions` from 13 to 23 and cut the
    project and model to a few letters; `show` takes the prefix back."""
    own = {
        sid: sid.split(":", 1)[-1]
        for sid in values(conn, f"SELECT id FROM agent_sessions WHERE {subagent_sql()}")
    }
    cut = short_ids_of(sorted(set(own.values())), minimum)
    return {sid: cut[name] for sid, name in own.items()}


def children_of(
    conn: sqlite3.Connection, session_id: str, *, include_warmup: bool = False
) -> list[SessionSummary]:
    sql = (
        _SESSION_SELECT
        + " WHERE s.parent_session_id = ?"
        + ("" if include_warmup else " AND s.is_warmup = 0")
    )
    return read_sessions(conn.execute(sql + " ORDER BY s.created_at, s.id", (session_id,)))


# ---------------------------------------------------------------------------- messages


@dataclass(slots=True)
class ToolCall:
    """One tool call with its result: the one type the CLI, the viewer, fork and undo read."""

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
    agent: str | None = None  # its session's agent (`source`), whose adapter says what the tool does
    # the subagents a call of a tool that starts several at once (`Adapter.swarm_tools`) started,
    # counted by the viewer's pages (`browse.message_page`); 0: not counted (one at most)
    subagent_count: int = 0

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.completed_at is None:
            return None
        return max(0, self.completed_at - self.started_at)


# the columns of ToolCall, named as its fields, on agent_tool_calls
TOOL_CALL_COLUMNS = (
    "id, tool_name AS name, params_json, result_json, status, child_session_id, started_at, completed_at, "
    "result_entry_id, entry_id"
)


def attach_tool_calls(
    conn: sqlite3.Connection, session_id: str, by_entry: Mapping[int, Any], order: str, results: bool = True
) -> None:
    """Append to each message of `by_entry` (entry id → a message with `tool_calls`) the calls it
    made, in `order` (the SQL ORDER BY), then give them their input and result (`fill_tool_io`;
    their input alone when not `results`)."""
    cursor = conn.execute(
        f"SELECT {TOOL_CALL_COLUMNS} FROM agent_tool_calls WHERE session_id = ? "
        f"AND entry_id BETWEEN ? AND ? ORDER BY {order}",
        (session_id, min(by_entry), max(by_entry)),
    )
    build = builder(cursor, ToolCall)
    calls = []
    source = conn.execute("SELECT source FROM agent_sessions WHERE id = ?", (session_id,)).fetchone()
    for row in cursor:
        call = build(row)
        call.agent = source[0] if source else None
        msg = by_entry.get(call.entry_id)  # type: ignore[arg-type]
        if msg is not None:
            msg.tool_calls.append(call)
            calls.append(call)
    fill_tool_io(conn, calls, with_results=results)


@dataclass(slots=True)
class MessageRow:
    """A message of a session, as `show`, export and the viewer read it: its text and thinking and
    the tool calls it made; the viewer's pages (`browse.message_page`) add its tokens, and the
    images and event fields its agent's adapter reads from its record."""

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
    message_id: str | None
    tokens: int = 0
    tool_calls: list[ToolCall] = field(default_factory=list)
    images: list[ImageRef] = field(default_factory=list)  # read again by core.read.images.load
    event: dict[str, Any] = field(default_factory=dict)  # system fields, compact-summary flag
    # the hooks Claude Code ran after this message (before it, for the session's first message),
    # and the hooks a stop_hook_summary record tells of (`attach_hooks`)
    hooks: list[HookRun] = field(default_factory=list)

    @property
    def is_compact_summary(self) -> bool:
        return bool(self.event.get("isCompactSummary"))


def turn_messages(
    conn: sqlite3.Connection, session_id: str, seq: int, *, tool_results: bool = True
) -> list[MessageRow]:
    """The messages of the turn holding message #seq (that message alone when it is in none),
    read from the turn's first message to its last, not the whole session."""
    row = conn.execute(
        "SELECT turn_id FROM entries WHERE session_id = ? AND seq = ?", (session_id, seq)
    ).fetchone()
    turn_id = row[0] if row else None
    low, high = (
        (seq, seq)
        if turn_id is None
        else conn.execute(
            "SELECT min(seq), max(seq) FROM entries WHERE session_id = ? AND turn_id = ? AND seq IS NOT NULL",
            (session_id, turn_id),
        ).fetchone()
    )
    if low is None:
        return []
    found = messages(conn, session_id, from_seq=low, limit=high - low + 1, tool_results=tool_results)
    return [m for m in found if m.seq == seq or (turn_id is not None and m.turn_id == turn_id)]


def messages(
    conn: sqlite3.Connection,
    session_id: str,
    *,
    offset: int = 0,
    limit: int = -1,
    from_seq: int = 0,
    tool_results: bool = True,
) -> list[MessageRow]:
    """A session's messages in order, with the tool calls each one made (those from position
    `from_seq` on, when given: a page found by its place rather than by counting rows to it);
    the calls' results left out when not `tool_results` (what `show` prints never reads them, and
    reading them again from their records was a tenth of a long session's `show`)."""
    cursor = conn.execute(
        "SELECT id AS entry_id, seq, uuid, parent_uuid, entry_type, subtype, role, content, thinking, model, "
        "timestamp, is_meta, is_sidechain, turn_id, message_id FROM entries WHERE session_id = ? AND seq >= ? "
        "ORDER BY seq LIMIT ? OFFSET ?",
        (session_id, from_seq, limit, offset),
    )
    build = builder(cursor, MessageRow)
    out = [build(row) for row in cursor]
    if not out:
        return out
    by_entry = {m.entry_id: m for m in out}
    # the calls of each message in the order they were made (the whole session's order)
    attach_tool_calls(conn, session_id, by_entry, "tool_number", results=tool_results)
    attach_images(conn, session_id, by_entry)
    attach_hooks(conn, session_id, out)
    _mark_compact_summaries(conn, [m for m in out if m.role == "user" and m.content])
    return out


def _mark_compact_summaries(conn: sqlite3.Connection, prompts: list[MessageRow]) -> None:
    """Flag the summary a compaction wrote (Claude Code's user record marked isCompactSummary, read
    by the viewer from the same bytes: `ClaudeAdapter.message_extras`), so it is named as a summary,
    not shown as the user's message."""
    if not prompts:
        return
    found = conn.execute(
        "SELECT id FROM entries WHERE id IN (SELECT value FROM json_each(?)) AND instr(raw, ?) > 0",
        (orjson.dumps([m.entry_id for m in prompts]).decode(), b'"isCompactSummary":true'),
    )
    summaries = {entry_id for (entry_id,) in found}
    for msg in prompts:
        if msg.entry_id in summaries:
            msg.event = {**msg.event, "isCompactSummary": True}


SHOWN_PAGE = 500  # messages read at a time by `message_pages`
FIRST_PAGE = 50


def response_before(conn: sqlite3.Connection, session_id: str, seq: int) -> str | None:
    """The API response (message id) the message at `seq` goes on from when read a page at a
    time: that of the last message before it, past the tool results (rows with no text of their
    own) between a response's calls."""
    row = conn.execute(
        "SELECT message_id FROM entries WHERE session_id = ? AND seq < ? AND NOT (role = 'user' "
        "AND COALESCE(content, '') = '' AND COALESCE(thinking, '') = '') ORDER BY seq DESC LIMIT 1",
        (session_id, seq),
    ).fetchone()
    return row[0] if row else None


def message_pages(
    conn: sqlite3.Connection, session_id: str, size: int | None = None, *, tool_results: bool = True
) -> Iterator[list[MessageRow]]:
    """A session's messages in order (as `messages`), a page at a time: what reads a whole
    session to print it starts at once and holds one page (100,000 messages took 4 s and 500 MB
    to read before the first was printed)."""
    size = size or SHOWN_PAGE
    from_seq, wanted = 0, min(size, FIRST_PAGE)  # a short first page: the first lines come sooner
    while True:
        page = messages(conn, session_id, limit=wanted, from_seq=from_seq, tool_results=tool_results)
        if not page:
            return
        yield page
        if len(page) < wanted:
            return
        from_seq, wanted = page[-1].seq + 1, size


# the records that tell of hooks: Claude Code 2.1's attachments (`hook_success`, …) and progress
# records (`hook_progress`); never messages themselves, so they are found between messages
HOOK_RECORDS = (
    "((entry_type = 'attachment' AND subtype LIKE 'hook\\_%' ESCAPE '\\') "
    "OR (entry_type = 'progress' AND subtype = 'hook_progress'))"
)


def attach_hooks(conn: sqlite3.Connection, session_id: str, page: list[MessageRow]) -> None:
    """Give the messages of `page` (consecutive, in order) the hooks recorded after each of them,
    up to the next message (those before the session's first message go to it, marked `before`);
    a `stop_hook_summary` record its own. Hook records have no place in the messages' order (they
    are no messages): they are found by their record's position between the messages' records."""
    if not page:
        return
    for msg in page:
        if msg.subtype == "stop_hook_summary":
            raw = raw_entry(conn, msg.entry_id)
            msg.hooks = _runs(raw, msg.entry_id)
    low = -1 if page[0].seq == 0 else page[0].entry_id
    after = fetch_one(
        conn, "SELECT id FROM entries WHERE session_id = ? AND seq = ?", (session_id, page[-1].seq + 1)
    )
    high = after["id"] if after is not None else 2**63 - 1
    found = []
    for entry_id, raw in conn.execute(
        "SELECT id, raw FROM entries WHERE session_id = ? AND seq IS NULL AND id > ? AND id < ? "
        f"AND dup_of IS NULL AND {HOOK_RECORDS} ORDER BY id",
        (session_id, low, high),
    ):
        found += _runs(bytes(raw), entry_id)
    # a hook both started (progress) and ended (attachment) in the records is shown once
    ended = {(r.tool_use_id, r.event) for r in found if r.kind != "hook_progress" and r.tool_use_id}
    found = [r for r in found if r.kind != "hook_progress" or (r.tool_use_id, r.event) not in ended]
    ids = [m.entry_id for m in page]
    for run in found:
        assert run.entry_id is not None
        at = bisect_left(ids, run.entry_id) - 1
        if at < 0:
            run.before = True
            at = 0
        page[at].hooks.append(run)
    # a stop_hook_summary retells the Stop hooks whose own records came before it: each shown once
    told: set[tuple[str, str | None]] = set()
    for msg in page:
        if msg.subtype == "stop_hook_summary":
            msg.hooks = [
                r
                for r in msg.hooks
                if not (r.entry_id == msg.entry_id and r.tool_use_id and (r.tool_use_id, r.command) in told)
            ]
        told.update((r.tool_use_id, r.command) for r in msg.hooks if r.tool_use_id)


def _runs(raw: bytes | None, entry_id: int) -> list[HookRun]:
    """The hooks of one stored record, each knowing its entry and what it ran for."""
    try:
        record = orjson.loads(raw or b"null")
    except orjson.JSONDecodeError:
        return []
    runs = hook_runs(record)
    tool_use_id = record.get("toolUseID") if isinstance(record, dict) else None
    attachment = record.get("attachment") if isinstance(record, dict) else None
    if isinstance(attachment, dict) and isinstance(attachment.get("toolUseID"), str):
        tool_use_id = attachment["toolUseID"]
    for run in runs:
        run.entry_id = entry_id
        run.tool_use_id = tool_use_id if isinstance(tool_use_id, str) else None
    return runs


def attach_images(conn: sqlite3.Connection, session_id: str, by_entry: Mapping[int, MessageRow]) -> None:
    """Give messages the images their records embed (type, size, place; never the bytes). Only
    prompts and the user records (any record for `images_in_replies`) whose first 2 KB hold the
    adapter's image marker are read, as the viewer's pages do."""
    from ..adapters import ADAPTERS

    row = fetch_one(conn, "SELECT source FROM agent_sessions WHERE id = ?", (session_id,))
    adapter = ADAPTERS.get(row["source"]) if row and row["source"] else None
    if adapter is None or not by_entry:
        return
    for entry_id, raw, entry_type in conn.execute(
        "SELECT id, raw, entry_type FROM entries WHERE session_id = ? AND seq BETWEEN ? AND ? "
        "AND ((role = 'user' AND content IS NOT NULL) OR ((role = 'user' OR ?) AND instr(substr(raw, 1, 2048), ?) > 0))",
        (
            session_id,
            min(m.seq for m in by_entry.values()),
            max(m.seq for m in by_entry.values()),
            adapter.images_in_replies,
            adapter.image_marker,
        ),
    ):
        msg = by_entry.get(entry_id)
        extras = adapter.message_extras(bytes(raw), entry_type) if msg is not None else None
        if extras is not None and msg is not None:
            msg.images = extras.images


def fill_tool_io(conn: sqlite3.Connection, calls: list[ToolCall], *, with_results: bool = True) -> None:
    """Give calls their input and result (their input alone when not `with_results`) where the ledger
    kept no copy of them (an adapter with `tool_io_in_record`): the records they came in are
    normalized again and picked from."""
    wanted = {c.entry_id for c in calls if c.params_json is None and c.entry_id is not None}
    if with_results:
        wanted |= {
            c.result_entry_id for c in calls if c.result_json is None and c.result_entry_id is not None
        }
    if not wanted:
        return
    from ..adapters import adapter_for  # the adapters load on demand (see core.adapters)
    from ..adapters.base import FileContext, RawRecord

    inputs: dict[tuple[int, str], str] = {}
    results: dict[tuple[int, str], str] = {}
    contexts: dict[str, FileContext] = {}
    # one row per record whose calls want their input or result (all of a session's for `show`):
    # unpacked into names right here rather than read through sqlite3.Row, which costs per lookup
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
    """A record's exact bytes; a message of a JSON chat stored line by line (its record is only the
    line closing it, `    },`) is shown as the document holds it (`core.read.archive.document_messages`)."""
    row = fetch_one(
        conn,
        "SELECT e.raw, e.uuid, e.session_id, e.role, e.source_file_id, f.path FROM entries e "
        "JOIN source_files f ON f.id = e.source_file_id WHERE e.id = ?",
        (entry_id,),
    )
    if row is None:
        return None
    raw = bytes(row["raw"])
    if (
        row["role"]
        and row["uuid"]
        and str(row["path"]).endswith(".json")
        and not raw.lstrip().startswith(b"{")
    ):
        from .archive import document_messages

        found = document_messages(conn, row["source_file_id"]).get(
            str(row["uuid"]).removeprefix(f"{row['session_id']}:")
        )
        if found is not None:
            return orjson.dumps(found, option=orjson.OPT_INDENT_2)
    return raw


def origin_filter(prefix: str, machine: str | None, who: str | None) -> tuple[list[str], list[Any]]:
    """The conditions on agent_sessions (`prefix`: its alias) of `machine:NAME` and `who:NAME`: the
    sessions read from the files of that machine (a prefix of its name; this machine's own under
    the name it syncs as) or pushed by that person (the hub role)."""
    where: list[str] = []
    params: list[Any] = []
    pulled = "SELECT source_file_id FROM sync_pulled"
    for column, value, key in (("machine", machine, MACHINE_KEY), ("who", who, WHO_KEY)):
        if not value:
            continue
        where.append(
            f"({prefix}source_file_id IN ({pulled} WHERE {column} LIKE ?1 ESCAPE '\\') OR ("
            f"COALESCE((SELECT value FROM ledger_meta WHERE key = '{key}'), '') LIKE ?1 ESCAPE '\\' "
            f"AND {prefix}source_file_id NOT IN ({pulled})))".replace("?1", "?")
        )
        params += [like_text(value) + "%"] * 2
    return where, params
