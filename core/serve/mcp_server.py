"""`threadloom mcp`: the archive answers agents over the Model Context Protocol (stdio).

Every tool reads the archive read-only (a reader never blocks an ingest, nor waits for one), answers
with the same fields the CLI prints with `--json` (core.insight.answers), and answers within a budget: about
`max_tokens` (default 2,000) tokens of JSON, a `next_cursor` to page on, and `left_out` saying what
the page did not hold. A long text in an answer (a prompt, a tool's output, a diff) is cut, saying how
much was left out: never a whole transcript. The memory tools (remember, recall, tag) write what
agents learn into the archive's memory (core.insight.memory) as its one writer, waiting a few seconds at
most for an ingest to finish.

Every answer cites what a person can open: `threadloom show SESSION` (a message as `#seq`) or
`threadloom memory show ENTRY`. A request that cannot be answered is an MCP error whose message says
why and what to pass instead, never a traceback."""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from ..adapters import ADAPTERS
from ..insight import memory
from ..insight.answers import cut, message_json, session_signals_json, show_ref
from ..store.memory_tables import ENTRY_KINDS, MemoryRefused
from ..store.sql import like_text

DEFAULT_TOKENS = 2_000
# every tool answers within MIN_TOKENS (a session's header named briefly when it would take half of
# it): at 300 an outline, a turn or a stats row did not fit beside its header, though 300 was offered
MIN_TOKENS, MAX_TOKENS = 500, 20_000
# the longest string argument (a query, a session id, a project), and what is written into the memory
# (a note, an entry's content, as long as the CLI takes): a 3 MB query was echoed whole into its
# answer, a 100,000-character session id reached SQLite's pattern limit; longer ones are refused by
# the arguments' check
SHORT_TEXT, LONG_TEXT = 10_000, 1_000_000
CHARS_PER_TOKEN = 3.5  # JSON of English and code; text that is not ASCII counts by its UTF-8 bytes / 4
LIST_TEXT = 300  # a list's long texts (a prompt, a title) are cut to this many characters
OUTPUT_CHARS = 1_500  # a tool call's input or output in a turn, a diff in a file's history
# how long remember / tag wait for an ingest holding the archive ($THREADLOOM_MCP_WAIT: seconds)
MEMORY_WAIT_SECONDS = 10.0


def memory_wait() -> float:
    import os

    try:
        return float(os.environ.get("THREADLOOM_MCP_WAIT", MEMORY_WAIT_SECONDS))
    except ValueError:
        return MEMORY_WAIT_SECONDS


INSTRUCTIONS = """\
threadloom is the local archive of this machine's coding-agent sessions (Claude Code, Codex, Gemini \
CLI, Cursor, OpenCode and more): every prompt, answer, tool call and edit, and a memory of decisions, \
facts and guidelines that people and agents wrote. Ask it before you redo past work:
- when the user says "like last time", "as we did before" or names an earlier piece of work: `search`, \
then `session_outline` and `get_turn` on what it found;
- before running a command that has failed, or retrying a fix: `search` for the error text and read \
how it was solved (`signals` lists sessions that went in circles);
- when you start a task that was probably done before: `context` hands the most relevant past turns \
(prompt, answer, files, commands) within a budget, rather than whole sessions;
- when you start work on a file: `file_history` shows the turns that read or changed it, with diffs;
- at the start of a task: `recall` the decisions and guidelines for this project (pass your working \
folder as project); when you settle something worth keeping: `remember` it; `tag` a session or turn \
to find it again;
- for cost or activity questions: `stats`; to find a session: `recent_sessions`.
Answers are bounded (about 2,000 tokens; pass max_tokens for more) and page on with next_cursor; \
"left_out" says what a page did not hold. Each result cites a `threadloom show SESSION` command (a \
message as #seq) the user can run to read it whole."""


class Refused(Exception):
    """What the caller asked cannot be answered; the message says why (an MCP tool error)."""


# ---------------------------------------------------------------------- budgets


def tokens_of(text: str) -> int:
    """An estimate of what `text` costs a model: characters over CHARS_PER_TOKEN, or its UTF-8
    bytes over 4 when that is more (text that is not ASCII)."""
    return math.ceil(max(len(text) / CHARS_PER_TOKEN, len(text.encode()) / 4))


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def budget_of(max_tokens: int | None) -> int:
    if max_tokens is None:
        return DEFAULT_TOKENS
    if not MIN_TOKENS <= max_tokens <= MAX_TOKENS:
        raise Refused(
            f"max_tokens is {max_tokens}: give {MIN_TOKENS} to {MAX_TOKENS:,} (default {DEFAULT_TOKENS:,})"
        )
    return max_tokens


def offset_of(cursor: str | None, tool: str) -> int:
    """Where a page starts: the `next_cursor` an earlier answer of this tool gave (`tool@offset`)."""
    if not cursor:
        return 0
    name, _, number = cursor.rpartition("@")
    if name != tool or not number.isdigit():
        raise Refused(
            f"cursor {cursor!r} is not one {tool} gave: pass the next_cursor of its last answer, or none"
        )
    return int(number)


def shorten(value: Any, limit: int) -> Any:
    """`value` with every string longer than `limit` characters cut (saying how much was left out)."""
    if isinstance(value, str):
        return cut(value, limit)
    if isinstance(value, list):
        return [shorten(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: shorten(v, limit) for k, v in value.items()}
    return value


def fit(item: dict[str, Any], room: int) -> dict[str, Any] | None:
    """The item cut until it costs at most `room` tokens (its long texts shorter and shorter), or
    None when even cut to a line each it does not fit."""
    limit = 4_000
    while limit >= 60:
        smaller: dict[str, Any] = shorten(item, limit)
        if tokens_of(dumps(smaller)) <= room:
            return smaller
        limit //= 2
    return None


BRIEF_KEYS = ("id", "agent", "project", "title", "started_at", "model", "cost_usd", "signal_count", "signals",
              "tags", "show")  # fmt: skip


def brief(item: dict[str, Any]) -> dict[str, Any]:
    """A session (or a list's row of one) by the fields that name it: what the smallest budget
    holds beside an answer's header (a session has some 35 fields)."""
    kept = {k: item[k] for k in BRIEF_KEYS if item.get(k) is not None}
    if "title" not in kept and item.get("first_prompt"):
        kept["title"] = item["first_prompt"]
    return dict(shorten(kept, 100))


def page(
    tool: str,
    head: dict[str, Any],
    key: str,
    items: list[dict[str, Any]],
    *,
    max_tokens: int | None,
    cursor: str | None,
    what: str,
    total: int | None = None,
    more_exist: bool = False,
    windowed: bool = False,
    brief_head: dict[str, Any] | None = None,
    brief_items: bool = False,
) -> str:
    """The answer: `head`, then as many items from the cursor on as the budget holds under `key`,
    then `returned`, `total`, `next_cursor` and `left_out` (what was not sent, and how to get it).

    `items`: every item, or with `windowed` only those from the cursor on (`total` counting all).
    `more_exist`: the items are the first of more than were looked at (a search's cap).
    `brief_head`: the header to send when `head` would take half the budget; `brief_items`: a
    first item too long even cut is sent as its `brief` (sessions): every tool answers within
    MIN_TOKENS."""
    budget = budget_of(max_tokens)
    start = offset_of(cursor, tool)
    count = total if windowed and total is not None else len(items)
    if start > count:
        raise Refused(f"cursor {cursor!r} is past the end ({count} {what})")
    rest = items if windowed else items[start:]
    tail = {"next_cursor": f"{tool}@{count}", "left_out": "x" * 200}
    notes = []

    def framed(header: dict[str, Any]) -> dict[str, Any]:
        return {**header, key: [], "returned": 0, "total": total if total is not None else len(items)}

    answer = framed(head)
    used = tokens_of(dumps({**answer, **tail}))
    if brief_head is not None and used > budget // 2:  # a small budget: its room goes to the items
        notes.append("the header is shortened: raise max_tokens for all of it")
        answer = framed(brief_head)
        tail["left_out"] += "x" * len(notes[0])
        used = tokens_of(dumps({**answer, **tail}))
    if used >= budget:  # the header alone fills the budget: no page could move on (a cursor that
        # never advances sent an agent round forever), nor could the answer stay under it
        raise Refused(
            f"this answer's header alone takes about {used:,} tokens: give max_tokens above that "
            f"(up to {MAX_TOKENS:,})"
        )
    sent: list[dict[str, Any]] = []
    cut_items = 0
    cut_note = f"; the first of these {what} was too long for the budget and was cut: raise max_tokens"
    for item in rest:
        room = budget - used - 1
        cost = tokens_of(dumps(item)) + 1
        if cost > room:
            if sent:
                break
            room -= tokens_of(cut_note)  # said in left_out beside the rest
            smaller = fit(item, room)  # the first item of a page is always sent, cut to fit
            if smaller is None and brief_items:
                smaller = fit(brief(item), room)
            if smaller is None:
                raise Refused(
                    f"the first of these {what} does not fit in max_tokens={budget} beside this answer's "
                    f"header (about {used:,} tokens): raise max_tokens (up to {MAX_TOKENS:,})"
                )
            item, cost, cut_items = smaller, tokens_of(dumps(smaller)) + 1, cut_items + 1
        sent.append(item)
        used += cost
    end = start + len(sent)
    answer[key] = sent
    answer["returned"] = len(sent)
    left = count - end
    answer["next_cursor"] = f"{tool}@{end}" if left > 0 else None
    if left > 0:
        size = "" if windowed else f" (about {sum(tokens_of(dumps(i)) for i in rest[len(sent) :]):,} tokens)"
        notes.append(
            f"{left} more {what} past this page{size}: call {tool} again with cursor={answer['next_cursor']!r}, "
            "or a larger max_tokens"
        )
    elif more_exist:
        notes.append(
            f"more {what} matched than were ranked: narrow the query (filters such as project:, after:)"
        )
    if cut_items:
        notes.append(cut_note[2:])
    answer["left_out"] = "; ".join(notes) or None
    return dumps(answer)


# ---------------------------------------------------------------------- the archive


class Archive:
    """The archive as the server reads it: one read-only connection, opened when first asked (an
    archive made after the server started is found), checked for a layout this threadloom reads,
    and opened again when the file at its path is another one (`ingest --rebuild` puts a new
    database in its place: the old connection would read the old file while memory writes went
    to the new one)."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self._conn: sqlite3.Connection | None = None
        self._file: tuple[int, int] | None = None  # (device, inode) of the file the connection reads
        self._lock = threading.Lock()

    def _file_now(self) -> tuple[int, int] | None:
        """(device, inode) of the file at the path now (None: none there, as for a moment while
        a rebuilt database is moved into place)."""
        import os

        try:
            found = os.stat(self.db_path)
        except OSError:
            return None
        return found.st_dev, found.st_ino

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        from ..store import db

        with self._lock:
            if self._conn is not None:
                now = self._file_now()
                if now is not None and now != self._file:  # replaced: read the new file
                    self._conn.close()
                    self._conn = None
            if self._conn is None:
                self._file = self._file_now()  # before opening: a file replaced meanwhile is reopened
                if not self.db_path.is_file():
                    raise Refused(
                        f"no threadloom archive at {self.db_path} yet: run `threadloom ingest` (or pass "
                        "`threadloom mcp --db PATH`)"
                    )
                if db.upgrade_due(self.db_path) is not None:
                    self._bring_up_to_date()
                conn = db.connect(self.db_path, readonly=True)
                version, due = db.user_version(conn), db.rebuild_due(conn)
                if version != db.SCHEMA_VERSION or due is not None:
                    conn.close()
                    raise Refused(
                        f"the archive {self.db_path} has the layout of another threadloom version "
                        f"({version if due is None else due}; this one reads {db.SCHEMA_VERSION}): run "
                        "`threadloom ingest` once to bring it up to date"
                    )
                self._conn = conn
            try:
                yield self._conn
            except sqlite3.DatabaseError as exc:
                self._conn.close()
                self._conn = None
                raise Refused(str(db.explain(exc, self.db_path))) from exc

    def _bring_up_to_date(self) -> None:
        """An archive of an older layout (or with its sessions still to rebuild) is brought up to
        date as the CLI's reading commands do (core.cli.common.open_reading): once, under the
        writer lock. While another threadloom holds that lock (an ingest, which does the same)
        the call is refused rather than kept waiting."""
        import sys

        from ..ingest.pipeline import rebuild_pending
        from ..insight import refresh
        from ..store import db

        busy = threading.Event()
        said: list[str] = []

        def on_wait(text: str) -> None:
            said.append(text)
            busy.set()  # stops the wait at once: the lock was never taken, no rebuild is cut short

        conn = db.open_for_reading(self.db_path)  # adapts the layout (a read-only file: said why)
        try:
            layout = db.rebuild_due(conn)
            if layout is None:
                return
            print(
                f"threadloom: {self.db_path} was written by another version of threadloom (layout {layout}, "
                f"now {db.SCHEMA_VERSION}): its sessions are rebuilt from the stored records, once",
                file=sys.stderr,
                flush=True,
            )
            done = rebuild_pending(conn, on_wait=on_wait, cancel=busy)
            if done:  # the rebuild emptied the search index: filled again, as `threadloom search` does
                refresh.catch_up(conn, wait=False)
        finally:
            conn.close()
        if not done:
            raise Refused(
                f"the archive {self.db_path} is being brought up to date by another threadloom "
                f"({said[0] if said else 'an ingest'}): ask again once it is done"
            )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


# ---------------------------------------------------------------------- what the tools answer


def recall_search(conn: sqlite3.Connection, query: str, limit: int, mode: str = "hybrid") -> Any:
    """The one door the server searches through: core.insight.recall, words and meaning fused by default."""
    from ..insight.recall import search_recall

    return search_recall(conn, query, mode=mode, limit=limit)


def session_item(s: Any, long_text: int = LIST_TEXT) -> dict[str, Any]:
    """A session as `sessions --json` lists it (its long texts cut), citing the command to read it."""
    data = shorten(s.as_dict(), long_text)
    data["show"] = show_ref(s.id)
    return dict(data)


def resolve(conn: sqlite3.Connection, ref: str) -> Any:
    from ..read.query import resolve_session

    try:
        return resolve_session(conn, ref)
    except LookupError as exc:
        raise Refused(
            f"{exc.args[0] if exc.args else exc} (recent_sessions or search finds session ids)"
        ) from exc


def one_line(text: str | None, limit: int = 160) -> str:
    from ..base.text import one_line as line

    return line(text or "", limit)


def agent_known(conn: sqlite3.Connection, agent: str) -> str:
    """The agent filter as the archive names it (gemini-cli: gemini; core.read.query.agent_filter);
    one that names no agent is refused with the names there are, as search's agent: is."""
    from ..adapters import UnknownAgent
    from ..read.query import agent_filter

    try:
        return agent_filter(conn, agent)
    except UnknownAgent as exc:
        raise Refused(str(exc)) from None


def do_search(
    archive: Archive, query: str, limit: int, max_tokens: int | None, cursor: str | None, mode: str = "hybrid"
) -> str:
    from ..insight.recall import MODES
    from ..read.search import parse_query

    if mode not in MODES:
        raise Refused(f"mode is {mode!r}: give {', '.join(MODES)}")

    if not query.strip():
        raise Refused(
            'query is empty: give words, "a phrase" or filters such as project:api tool:Bash after:7d'
        )
    if not 1 <= limit <= 150:
        raise Refused(f"limit is {limit}: give 1 to 150")
    with archive.reading() as conn:
        # agent: as the archive names the agent (agent:gemini-cli: gemini), one of no such name refused
        problems = parse_query(query, conn=conn).unusable_filters
        if problems:
            raise Refused("; ".join(problems) + ": mend the filter or leave it out")
        result = recall_search(conn, query, limit, mode)
    hits = []
    for h in result.hits:
        item = h.as_dict()
        item.pop("highlights", None)  # positions in the snippet: of use to a screen, not to a model
        item["show"] = show_ref(h.session_id)
        item["at"] = f"#{h.seq}" if h.seq is not None else None
        hits.append(item)
    head = {"query": query, "mode": mode, "problems": result.problems or None}
    return page("search", head, "hits", hits, max_tokens=max_tokens, cursor=cursor, what="hits",
                total=result.total, more_exist=result.capped)  # fmt: skip


def do_context(
    archive: Archive, task: str, project: str | None, since: str | None, max_tokens: int | None
) -> str:
    """The smart fork context (core.insight.recall.build_context), packed within the answer's own budget."""
    from dataclasses import asdict

    from ..insight.recall import build_context

    if not task.strip():
        raise Refused("task is empty: say in a sentence what the work is about")
    if (
        since is not None
    ):  # as search's after: and `threadloom context --since` refuse it, not turns of any time
        from ..read.search import parse_query

        if len(since.split()) != 1 or parse_query(f"after:{since}").unusable_filters:
            raise Refused(f"since {since!r} is not a date: give 2026-03-01, yesterday or 7d")
    budget = budget_of(max_tokens)
    with archive.reading() as conn:
        # the packed turns take what is left of the budget after the answer's own fields
        context = build_context(conn, task, budget=max(200, budget - 150), project=project, since=since)
    turns = []
    for t in context.turns:
        item = asdict(t)
        item["show"] = item.pop("reference")
        item.pop("tokens")
        turns.append(item)
    left_out = context.left_out
    while True:  # the packing counted the text; the answer's JSON adds its names and escapes
        text = dumps(
            {
                "tool": "context",
                "task": task,
                "turns": turns,
                "budget": budget,
                "left_out": left_out,
                "problems": context.problems or None,
            }
        )
        if tokens_of(text) <= budget or not turns:
            return text
        turns.pop()
        left_out += 1


def do_recent(
    archive: Archive,
    project: str | None,
    agent: str | None,
    since: str | None,
    until: str | None,
    subagents: bool,
    max_tokens: int | None,
    cursor: str | None,
) -> str:
    from ..actions.hidden import read_hidden
    from ..insight import stats
    from ..read.query import list_sessions, sort_sessions

    try:
        start = stats.parse_day(since) if since else None
        end = stats.parse_day(until, end=True) if until else None
    except ValueError as exc:
        raise Refused(str(exc)) from exc
    with archive.reading() as conn:
        if agent:
            agent = agent_known(conn, agent)
        rows = sort_sessions(list_sessions(conn, project=project, agent=agent, include_subagents=subagents))
        hidden = read_hidden(conn)
        owners = {r.id: r for r in rows}
        rows = [r for r in rows if not (hidden and hidden.hides(r, owners))]
        tags = memory.tags_of(conn, [r.id for r in rows[:500]])
    if start is not None:
        rows = [r for r in rows if (r.last_activity or 0) >= start]
    if end is not None:
        rows = [r for r in rows if (r.started_at or 0) < end]
    # only the sessions a page can hold are made into items (an archive has thousands)
    start = offset_of(cursor, "recent_sessions")
    items = []
    for r in rows[start : start + max(20, budget_of(max_tokens) // 25)]:
        item = session_item(r)
        if tags.get(r.id):
            item["tags"] = tags[r.id]
        items.append(item)
    head: dict[str, Any] = {
        "filters": {
            k: v for k, v in (("project", project), ("agent", agent), ("since", since), ("until", until)) if v
        }
    }
    return page("recent_sessions", head, "sessions", items, max_tokens=max_tokens, cursor=cursor,
                what="sessions", total=len(rows), windowed=True, brief_items=True)  # fmt: skip


def _turn_rows(conn: sqlite3.Connection, session_id: str) -> list[tuple[Any, ...]]:
    """(turn id, order, time, tool calls, first #seq, last #seq) of each turn, in order: the places
    read in one pass over the session's messages (a 100,000-message session: one scan, not one a turn)."""
    from ..read.search import has_episodes

    # the episodes hold each turn's first and last #seq (core.insight.episodes): read by index, not by a
    # scan of the session's records; an archive without them yet is scanned
    query = (
        "SELECT turn_id, first_seq, last_seq FROM episodes WHERE session_id = ?"
        if has_episodes(conn)
        else "SELECT turn_id, min(seq), max(seq) FROM entries WHERE session_id = ? AND seq IS NOT NULL "
        "AND turn_id IS NOT NULL GROUP BY turn_id"
    )
    places = {turn_id: (first, last) for turn_id, first, last in conn.execute(query, (session_id,))}
    if not places and query.startswith("SELECT turn_id, first_seq"):  # episodes not built yet
        places = {
            turn_id: (first, last)
            for turn_id, first, last in conn.execute(
                "SELECT turn_id, min(seq), max(seq) FROM entries WHERE session_id = ? AND seq IS NOT NULL "
                "AND turn_id IS NOT NULL GROUP BY turn_id",
                (session_id,),
            )
        }
    rows = []
    for turn_id, order, when, calls in conn.execute(
        "SELECT id, sequence, COALESCE(started_at, timestamp), tool_call_count FROM agent_turns WHERE session_id = ?",
        (session_id,),
    ):
        if turn_id in places:
            rows.append((turn_id, order, when, calls, *places[turn_id]))
    rows.sort(key=lambda r: (r[4], r[1]))
    return rows


def _turn_start(conn: sqlite3.Connection, session_id: str, turn_id: str) -> int | None:
    """The #seq a turn starts at: its id is its first record's uuid (or `entry-<id>`), found by index."""
    if turn_id.startswith("entry-") and turn_id[6:].isdigit():
        row = conn.execute("SELECT seq FROM entries WHERE id = ?", (int(turn_id[6:]),)).fetchone()
    else:
        row = conn.execute(
            "SELECT seq FROM entries WHERE uuid = ? AND session_id = ? AND seq IS NOT NULL",
            (turn_id, session_id),
        ).fetchone()
    if row is not None and row[0] is not None:
        return int(row[0])
    row = conn.execute(
        "SELECT min(seq) FROM entries WHERE session_id = ? AND turn_id = ?", (session_id, turn_id)
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def _first_text(
    conn: sqlite3.Connection, session_id: str, first: int, last: int, role: str, newest: bool
) -> str:
    row = conn.execute(
        "SELECT content FROM entries WHERE session_id = ? AND seq BETWEEN ? AND ? AND role = ? AND is_meta = 0 "
        f"AND content IS NOT NULL AND content != '' ORDER BY seq {'DESC' if newest else ''} LIMIT 1",
        (session_id, first, last, role),
    ).fetchone()
    return str(row[0]) if row else ""


def do_outline(archive: Archive, session: str, max_tokens: int | None, cursor: str | None) -> str:
    from ..insight.stats import session_changes

    with archive.reading() as conn:
        s = resolve(conn, session)
        turns = _turn_rows(conn, s.id)
        budget = budget_of(max_tokens)
        start = offset_of(cursor, "session_outline")
        # only the turns a page can hold are read further (a long session has thousands)
        window = turns[start : start + max(20, budget // 25)]
        items = []
        for turn_id, _, when, calls, first, last in window:
            changed = session_changes(conn, s.id, turn_id)
            items.append(
                {
                    "turn": f"#{first}",
                    "messages": f"#{first}-#{last}",
                    "timestamp": when,
                    "prompt": one_line(_first_text(conn, s.id, first, last, "user", False), 200),
                    "answer": one_line(_first_text(conn, s.id, first, last, "assistant", True), 160),
                    "tool_calls": calls,
                    "files_changed": [f"{c.path} +{c.lines_added} -{c.lines_removed}" for c in changed[:5]]
                    + ([f"… {len(changed) - 5} more"] if len(changed) > 5 else []),
                }
            )
    named = session_item(s, 200)
    head = {
        "session": named,
        "how": "get_turn(session, turn) reads a turn whole: its prompt, answers and tool calls",
    }
    return page("session_outline", head, "turns", items, max_tokens=max_tokens, cursor=cursor, what="turns",
                total=len(turns), windowed=True, brief_head={"session": brief(named)})  # fmt: skip


def do_turn(
    archive: Archive, session: str, turn: int, output_chars: int, max_tokens: int | None, cursor: str | None
) -> str:
    from ..read.query import messages

    if not 100 <= output_chars <= 20_000:
        raise Refused(f"output_chars is {output_chars}: give 100 to 20,000")
    with archive.reading() as conn:
        s = resolve(conn, session)
        row = conn.execute(
            "SELECT turn_id FROM entries WHERE session_id = ? AND seq = ?", (s.id, turn)
        ).fetchone()
        if row is None:
            raise Refused(
                f"session {s.id} has no message #{turn}: session_outline lists its turns (#first message)"
            )
        turn_id = row[0]
        if turn_id is None:
            first = last = turn
        else:
            first, last = conn.execute(
                "SELECT min(seq), max(seq) FROM entries WHERE session_id = ? AND turn_id = ?", (s.id, turn_id)
            ).fetchone()
        found = [
            m for m in messages(conn, s.id, offset=first, limit=last - first + 1) if m.turn_id == turn_id
        ]
    items = [message_json(m, output_chars=output_chars) for m in found]
    for item in items:
        item.pop("markup", None) if not item.get("markup") else None
        item["at"] = f"#{item['seq']}"
    head = {
        "session_id": s.id,
        "title": one_line(s.title or s.first_prompt, 200),
        "turn": f"#{first}",
        "show": show_ref(s.id),
        "tool_output": f"each tool call's input and output cut to {output_chars:,} characters (output_chars)",
    }
    return page("get_turn", head, "messages", items, max_tokens=max_tokens, cursor=cursor, what="messages")


def _prompt_of_entry(conn: sqlite3.Connection, session_id: str, entry_id: int) -> tuple[int | None, str]:
    """The #seq of the turn an entry is in and its prompt, on one line."""
    row = conn.execute("SELECT seq, turn_id FROM entries WHERE id = ?", (entry_id,)).fetchone()
    if row is None or row[1] is None:
        return (row[0] if row else None), ""
    first = _turn_start(conn, session_id, row[1])
    if first is None:
        return row[0], ""
    return first, one_line(_first_text(conn, session_id, first, first + 50, "user", False), 160)


def do_file_history(
    archive: Archive, path: str, project: str | None, max_tokens: int | None, cursor: str | None
) -> str:
    import orjson

    from ..adapters import tool_group
    from ..read.calls import call_params
    from ..read.diffs import call_diff, is_edit
    from ..read.query import TOOL_CALL_COLUMNS, ToolCall, fill_tool_io, get_session

    wanted = path.strip()
    if not wanted:
        raise Refused("path is empty: give a file's path (absolute, or its end such as src/app.py)")
    like = "%/" + like_text(wanted.lstrip("/"))
    with archive.reading() as conn:
        changes = conn.execute(
            "SELECT session_id, call_id, path, tool_name, timestamp, lines_added, lines_removed FROM agent_file_changes "
            "WHERE path = ? OR path LIKE ? ESCAPE '\\' ORDER BY timestamp DESC LIMIT 400",
            (wanted, like),
        ).fetchall()
        calls: dict[tuple[str, str], ToolCall] = {}
        for sid, call_id, *_ in changes:
            row = conn.execute(
                f"SELECT {TOOL_CALL_COLUMNS} FROM agent_tool_calls WHERE session_id = ? AND id = ?",
                (sid, call_id),
            ).fetchone()
            if row is not None:
                calls[(sid, call_id)] = ToolCall(*row)
        # reads: the calls whose input names the file, found through the index of tool inputs
        words = [
            w for w in Path(wanted).name.replace(".", " ").replace("-", " ").replace("_", " ").split() if w
        ]
        reads: list[ToolCall] = []
        reader_sessions: dict[int, str] = {}
        if words:
            phrase = '"' + " ".join(w.replace('"', "") for w in words) + '"'
            try:
                entry_ids = [
                    r[0]
                    for r in conn.execute(
                        "SELECT rowid FROM search_fts WHERE search_fts MATCH ? ORDER BY rowid DESC LIMIT 300",
                        ("{tool_text} : " + phrase,),
                    )
                ]
            except sqlite3.OperationalError:
                entry_ids = []
            if entry_ids:
                cursor_ = conn.execute(
                    f"SELECT {TOOL_CALL_COLUMNS}, session_id FROM agent_tool_calls WHERE entry_id IN "
                    "(SELECT value FROM json_each(?))",
                    (orjson.dumps(entry_ids).decode(),),
                )
                for row in cursor_:
                    call = ToolCall(*row[:-1])
                    if (row[-1], call.id) in calls:
                        continue
                    reads.append(call)
                    reader_sessions[id(call)] = row[-1]
        fill_tool_io(conn, [*calls.values(), *reads])
        items: list[tuple[int, dict[str, Any]]] = []
        sessions: dict[str, Any] = {}

        def session_of(sid: str) -> Any:
            if sid not in sessions:
                sessions[sid] = get_session(conn, sid)
            return sessions[sid]

        for sid, call_id, changed_path, tool, when, added, removed in changes:
            change_call = calls.get((sid, call_id))
            s = session_of(sid)
            if project and (s is None or project not in (s.project_path or "")):
                continue
            diff = ""
            turn, prompt = None, ""
            if change_call is not None:
                diff = "\n".join(
                    line.text
                    for line in call_diff(
                        change_call.name, call_params(change_call), agent=s.agent if s else None
                    )
                    if line.kind != "file"
                )
                if change_call.entry_id is not None:
                    turn, prompt = _prompt_of_entry(conn, sid, change_call.entry_id)
            items.append(
                (
                    when or 0,
                    {
                        "kind": "changed",
                        "path": changed_path,
                        "session_id": sid,
                        "session_title": one_line(s.title or s.first_prompt, 120) if s else None,
                        "timestamp": when,
                        "tool": tool,
                        "added": added,
                        "removed": removed,
                        "turn": f"#{turn}" if turn is not None else None,
                        "prompt": prompt,
                        "diff": cut(diff, OUTPUT_CHARS),
                        "show": show_ref(sid),
                    },
                )
            )
        for call in reads:
            params_text = call.params_json or ""
            named = [
                v
                for v in call_params(call).values()
                if isinstance(v, str) and (v == wanted or v.endswith("/" + wanted.lstrip("/")))
            ]
            if not named and wanted not in params_text:
                continue
            sid = reader_sessions[id(call)]
            s = session_of(sid)
            agent = s.agent if s else None
            if is_edit(call.name, call_params(call), agent):
                continue  # an edit is listed with its diff above
            if project and (s is None or project not in (s.project_path or "")):
                continue
            turn, prompt = (
                _prompt_of_entry(conn, sid, call.entry_id) if call.entry_id is not None else (None, "")
            )
            items.append(
                (
                    call.started_at or 0,
                    {
                        "kind": "read" if tool_group(agent, call.name) == "read" else "used",
                        "path": named[0] if named else wanted,
                        "session_id": sid,
                        "session_title": one_line(s.title or s.first_prompt, 120) if s else None,
                        "timestamp": call.started_at,
                        "tool": call.name,
                        "input": cut(params_text, 300),
                        "turn": f"#{turn}" if turn is not None else None,
                        "prompt": prompt,
                        "show": show_ref(sid),
                    },
                )
            )
    items.sort(key=lambda i: -i[0])
    head = {"path": wanted, "project": project}
    return page("file_history", head, "events", [i for _, i in items], max_tokens=max_tokens, cursor=cursor,
                what="events")  # fmt: skip


def do_signals(
    archive: Archive,
    session: str | None,
    project: str | None,
    limit: int,
    max_tokens: int | None,
    cursor: str | None,
) -> str:
    from ..insight.answers import ranked_signals_json

    with archive.reading() as conn:
        if session:
            s = resolve(conn, session)
            data = session_signals_json(conn, s)
            found = data.pop("signals")
            for f in found:
                f["at"] = f"#{f['seq']}" if f.get("seq") is not None else None
            head: dict[str, Any] = {"session": {**shorten(data, 200), "show": show_ref(s.id)}}
            return page("signals", head, "signals", found, max_tokens=max_tokens, cursor=cursor, what="signals",
                        brief_head={"session": brief(head["session"])})  # fmt: skip
        rows = ranked_signals_json(conn, 2_000 if project else limit)
    if project:
        rows = [r for r in rows if project in (r.get("project_path") or "") or project == r.get("project")][
            :limit
        ]
    items = [{**shorten(r, 200), "show": show_ref(r["id"])} for r in rows]
    head = {
        "project": project,
        "how": "signals(session=ID) lists a session's signals with the messages they point at",
    }
    return page("signals", head, "sessions", items, max_tokens=max_tokens, cursor=cursor, what="sessions",
                brief_items=True)  # fmt: skip


def do_stats(
    archive: Archive,
    session: str | None,
    project: str | None,
    agent: str | None,
    by: str,
    since: str | None,
    until: str | None,
    max_tokens: int | None,
    cursor: str | None,
) -> str:
    from ..insight import stats
    from ..insight.changes import files_changed

    with archive.reading() as conn:
        if session:
            s = resolve(conn, session)
            files = files_changed(conn, s.id)
            sums = {
                "files_changed": len(files),
                "lines_added": sum(f["added"] for f in files),
                "lines_removed": sum(f["removed"] for f in files),
            }
            head = {"session": session_item(s, 200), **sums}
            totals = ("input_tokens", "output_tokens", "cache_read_tokens", "tool_call_count", "turn_count")
            short = {**brief(head["session"]), **{k: head["session"][k] for k in totals}}
            items = [
                {"path": f["path"], "added": f["added"], "removed": f["removed"], "calls": len(f["calls"])}
                for f in files
            ]
            return page("stats", head, "files", items, max_tokens=max_tokens, cursor=cursor, what="files",
                        brief_head={"session": short, **sums})  # fmt: skip
        if by not in stats.GROUPINGS:
            raise Refused(f"by is {by!r}: one of {', '.join(stats.GROUPINGS)}")
        try:
            start = stats.parse_day(since) if since else None
            end = stats.parse_day(until, end=True) if until else None
        except ValueError as exc:
            raise Refused(str(exc)) from exc
        if agent:
            agent = agent_known(conn, agent)
        rows = stats.report(conn, by, since=start, until=end, project=project, agent=agent)
        total = stats.report(conn, "total", since=start, until=end, project=project, agent=agent)
    items = [r.as_dict() for r in rows]
    if by in stats.TIME_GROUPINGS:
        items.reverse()  # the newest periods first: what a budget keeps
    head = {
        "by": by,
        "filters": {
            k: v for k, v in (("project", project), ("agent", agent), ("since", since), ("until", until)) if v
        },
        "totals": total[0].as_dict() if total else None,
    }
    return page("stats", head, "rows", items, max_tokens=max_tokens, cursor=cursor, what="rows")


# ---------------------------------------------------------------------- memory


def author_of(session: str | None) -> str:
    return f"agent:{session}" if session else "agent"


def said_already(conn: sqlite3.Connection, ref: str, content: str, *, exact: bool) -> memory.Entry | None:
    """The entry `ref` names when its latest version has this very content (None: none, or it
    says something else): remembering it again adds no version (the tool is idempotent). `exact`:
    `ref` is a whole id (one not written yet is no prefix of another)."""
    try:
        found = memory.resolve_entry(conn, ref)
    except MemoryRefused:
        return None
    if exact and found.id != ref:
        return None
    return found if found.current is not None and found.current.content == content else None


def do_remember(
    archive: Archive,
    title: str,
    content: str,
    kind: str,
    scope: str,
    project: str | None,
    session: str | None,
    reason: str | None,
    entry: str | None,
    base_version: int | None,
    author_session: str | None,
) -> str:
    author = author_of(author_session or session)
    try:
        with memory.writing(archive.db_path, wait_seconds=memory_wait()) as conn:
            if entry:
                ref = entry
            else:
                key = project if scope == "project" else session if scope == "session" else None
                if scope == "session" and session:
                    key = resolve(conn, session).id
                ref = memory.entry_id_for(scope, memory.check_scope(scope, key), " ".join(title.split()))
            unchanged = said_already(conn, ref, content, exact=not entry)
            new = False
            if unchanged is not None:
                written = unchanged
            elif entry:
                written = memory.edit_entry(
                    conn, entry, content=content, author=author, reason=reason, base_version=base_version
                )
            else:
                written, new = memory.add_entry(
                    conn, kind=kind, scope=scope, scope_key=key, title=title, content=content, author=author,
                    reason=reason,
                )  # fmt: skip
    except MemoryRefused as exc:
        raise Refused(str(exc)) from exc
    data = written.as_dict()
    data["new"] = new
    if unchanged is not None:
        data["unchanged"] = "the entry's latest version says this already: no version was added"
    if written.current and written.current.conflict:
        data["conflict"] = (
            "another writer changed this entry moments before (or after the version you read): both versions are "
            f"kept and the conflict is listed until a person resolves it (`threadloom memory history {written.id}` "
            f"shows them, `threadloom memory resolve {written.id}` closes it)"
        )
    return dumps(shorten(data, 4_000))


def do_recall(
    archive: Archive,
    project: str | None,
    session: str | None,
    kind: str | None,
    text: str | None,
    max_tokens: int | None,
    cursor: str | None,
) -> str:
    if kind is not None and kind not in ENTRY_KINDS:
        raise Refused(f"kind is {kind!r}: one of {', '.join(ENTRY_KINDS)}")
    with archive.reading() as conn:
        sid = resolve(conn, session).id if session else None
        try:
            found = memory.recall(conn, project=project, session=sid, kind=kind, text=text)
        except MemoryRefused as exc:
            raise Refused(str(exc)) from exc
        open_conflicts = len(memory.conflicts(conn))
    items = [e.as_dict() for e in found]
    head = {
        "for": {"project": project, "session": sid},
        "order": "the most specific first: the session's entries, its project's (and the folders above it), the global ones; "
        "of one title the more specific wins",
        "open_conflicts": open_conflicts or None,
    }
    return page("recall", head, "entries", items, max_tokens=max_tokens, cursor=cursor, what="entries")


def do_tag(
    archive: Archive,
    target: str,
    tags: list[str],
    note: str | None,
    turn: int | None,
    message: int | None,
    remove: bool,
    author_session: str | None,
) -> str:
    if not tags and not note:
        raise Refused("give tags (a word or two each) or a note to put on the target")
    author = author_of(author_session)
    try:
        with memory.writing(archive.db_path, wait_seconds=memory_wait()) as conn:
            try:
                where = memory.parse_target(conn, target, turn=turn, message=message)
            except LookupError as exc:
                raise Refused(f"{exc.args[0] if exc.args else exc}") from exc
            changed = 0
            for tag in tags:
                changed += (
                    memory.remove_mark(conn, "tag", where, tag)
                    if remove
                    else int(memory.add_mark(conn, "tag", where, tag, author))
                )
            if note:
                changed += int(memory.add_mark(conn, "note", where, note, author))
            now_tags = sorted(m.value for m in memory.marks(conn, kind="tag", target=where))
            notes = len(memory.marks(conn, kind="note", target=where))
    except MemoryRefused as exc:
        raise Refused(str(exc)) from exc
    return dumps(
        {
            "target": where.id,
            "target_type": where.type,
            "tags": now_tags,
            "notes": notes,
            "changed": changed,
            "show": memory.show_ref(where.type, where.id),
            "find": f"search 'tag:{now_tags[0]}' finds it" if now_tags else None,
        }
    )


# ---------------------------------------------------------------------- the server


Tokens = Annotated[
    int | None,
    Field(description=f"answer budget in tokens (default {DEFAULT_TOKENS:,}; {MIN_TOKENS}-{MAX_TOKENS:,})"),
]
Cursor = Annotated[
    str | None,
    Field(max_length=SHORT_TEXT, description="next_cursor of the previous answer, to read the next page"),
]
SessionRef = Annotated[
    str,
    Field(
        max_length=SHORT_TEXT,
        description="a session id, a unique prefix of it, or the agent's own session id",
    ),
]
Project = Annotated[
    str | None,
    Field(
        max_length=SHORT_TEXT,
        description="a project: its path (your working folder) or part of it, or its name",
    ),
]


# what an argument of the wrong type should be, by the kind of pydantic's error
EXPECTED = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "list": 'a list of strings, such as ["flaky"]',
    "dict": "an object",
}


def wrong_arguments(errors: list[Any], schema: dict[str, Any] | None) -> str:
    """Arguments that do not fit a tool's schema, said in a sentence each: which, what was given
    and what to give (pydantic's own text ends with a web address to read it by)."""
    properties = (schema or {}).get("properties", {})
    said = []
    for err in errors:
        loc = [str(part) for part in err.get("loc", ())]
        name = ".".join(loc) or "the arguments"
        about = properties.get(loc[0], {}).get("description") if loc else None
        hint = f" — {about}" if about else ""
        kind = str(err.get("type", ""))
        if kind == "missing":
            said.append(f"{name} is missing: give it{hint}")
        elif kind == "string_too_long":
            said.append(f"{name} is too long: give at most {err.get('ctx', {}).get('max_length')} characters")
        else:
            expected = next((words for key, words in EXPECTED.items() if kind.startswith(key)), None)
            given = cut(repr(err.get("input")), 60)
            said.append(f"{name} is {given}: give {expected or 'what its description says'}{hint}")
    return "; ".join(said)


# the agents as the archive names them, from the adapters' registry (its names: no adapter is built)
Agent = Annotated[
    str | None, Field(max_length=SHORT_TEXT, description=f"one agent only: {', '.join(ADAPTERS)}")
]


def build_server(db_path: Path) -> Any:
    """The MCP server over the archive at `db_path` (the SDK's MCPServer, tools registered)."""
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import ValidationError

    class Server(MCPServer):
        """The SDK's server, saying arguments of the wrong type in its own words."""

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if not isinstance(exc.__cause__, ValidationError):
                    raise
                schema = self._tool_input_schema(name) if hasattr(self, "_tool_input_schema") else None
                said = wrong_arguments(exc.__cause__.errors(), schema)
                raise ToolError(f"Error executing tool {name}: {said}") from exc.__cause__

    archive = Archive(db_path)
    server = Server("threadloom", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING")
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )

    def answer(work: Callable[[], str]) -> str:
        try:
            return work()
        except Refused as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # never a traceback to the agent: what failed, and what to do
            from ..store.db import LedgerError, explain

            if isinstance(exc, LedgerError):
                raise ToolError(str(exc)) from None
            if isinstance(exc, OverflowError):  # a number or date past what the archive stores
                raise ToolError(
                    f"a number or date given is out of range ({exc}): give a turn, message or id as "
                    "the archive numbers them, and times such as 7d, 2026-03-01"
                ) from None
            if isinstance(exc, sqlite3.OperationalError) and "too complex" in str(exc):
                raise ToolError(  # an argument matched by prefix past SQLite's pattern length: no damage
                    "an argument given is too long to match (a session id or project of tens of "
                    "thousands of characters): give the id or project as the answers name them"
                ) from None
            if isinstance(exc, sqlite3.DatabaseError):
                raise ToolError(str(explain(exc, db_path))) from None
            raise ToolError(f"threadloom failed on this request ({type(exc).__name__}: {exc})") from None

    @server.tool(annotations=reads, structured_output=False)
    def search(
        query: Annotated[
            str,
            Field(
                max_length=SHORT_TEXT,
                description='words (typos forgiven), "exact phrases" and filters: project:api agent:codex '
                "role:user tool:Bash in:tools in:thinking session:3f2a after:7d before:2026-03-01 "
                "signal:retry-loop tag:NAME note:WORD file:parser.py (turns that read or changed it) "
                "cmd:pytest (turns that ran it) error:Timeout (turns whose tool calls failed with it)",
            ),
        ],
        limit: Annotated[int, Field(description="hits to rank, at most (1-150)")] = 50,
        mode: Annotated[
            str,
            Field(
                max_length=SHORT_TEXT,
                description="hybrid (default: words and meaning fused), words (every word must match) "
                "or meaning (a sentence as remembered, no shared word needed)",
            ),
        ] = "hybrid",
        max_tokens: Tokens = None,
        cursor: Cursor = None,
    ) -> str:
        """Search every past conversation of every agent on this machine (prompts, answers, and with
        in:tools tool inputs and outputs). Call it when the user says "like last time" or refers to
        earlier work, before retrying a command that failed (search the error text), or to find how
        something was done before. Words and meaning are searched together: describe what you look
        for in a sentence. Each hit gives a snippet, why it matched (words, meaning), its session
        and message (#seq): read more with session_outline or get_turn."""
        return answer(lambda: do_search(archive, query, limit, max_tokens, cursor, mode))

    @server.tool(annotations=reads, structured_output=False)
    def context(
        task: Annotated[
            str, Field(max_length=SHORT_TEXT, description="what the work at hand is about, in a sentence")
        ],
        project: Project = None,
        since: Annotated[
            str | None, Field(max_length=SHORT_TEXT, description="only turns from then on: 2026-03-01, 30d")
        ] = None,
        max_tokens: Tokens = None,
    ) -> str:
        """The past turns most relevant to a task, across sessions, packed within the budget: each
        with its date, project, the prompt, the final answer, the files and commands that mattered,
        and a `threadloom show` reference. Call it when starting a task that was probably done
        before, or when the user says "like last time", instead of reading whole sessions."""
        return answer(lambda: do_context(archive, task, project, since, max_tokens))

    @server.tool(annotations=reads, structured_output=False)
    def recent_sessions(
        project: Project = None,
        agent: Agent = None,
        since: Annotated[
            str | None,
            Field(max_length=SHORT_TEXT, description="active since this day: 2026-03-01, yesterday, 7d"),
        ] = None,
        until: Annotated[
            str | None, Field(max_length=SHORT_TEXT, description="started up to this day (included)")
        ] = None,
        subagents: Annotated[bool, Field(description="list subagent sessions too")] = False,
        max_tokens: Tokens = None,
        cursor: Cursor = None,
    ) -> str:
        """The sessions last active, newest first (by project, agent, date): what was worked on
        lately and where to pick up. Each session gives its id, title, first prompt, project, model,
        tokens and cost, and the `threadloom show` command to read it."""
        return answer(lambda: do_recent(archive, project, agent, since, until, subagents, max_tokens, cursor))

    @server.tool(annotations=reads, structured_output=False)
    def session_outline(session: SessionRef, max_tokens: Tokens = None, cursor: Cursor = None) -> str:
        """A session's turns, one line each: the prompt, the last answer, its tool calls and the
        files it changed. Read it before get_turn to find the turn that matters."""
        return answer(lambda: do_outline(archive, session, max_tokens, cursor))

    @server.tool(annotations=reads, structured_output=False)
    def get_turn(
        session: SessionRef,
        turn: Annotated[
            int,
            Field(description="the #seq of the turn (as session_outline gives it) or of any message in it"),
        ],
        output_chars: Annotated[
            int, Field(description="each tool call's input and output cut to this")
        ] = OUTPUT_CHARS,
        max_tokens: Tokens = None,
        cursor: Cursor = None,
    ) -> str:
        """One turn in full: the prompt, every answer, and each tool call with its input and output
        (cut to output_chars). The same message fields as `threadloom show --json`."""
        return answer(lambda: do_turn(archive, session, turn, output_chars, max_tokens, cursor))

    @server.tool(annotations=reads, structured_output=False)
    def file_history(
        path: Annotated[
            str, Field(max_length=SHORT_TEXT, description="a file's absolute path, or its end (src/app.py)")
        ],
        project: Project = None,
        max_tokens: Tokens = None,
        cursor: Cursor = None,
    ) -> str:
        """The turns that changed a file (with their diffs) or read it, newest first, across every
        session. Call it when you start work on a file: why it is as it is, what was tried."""
        return answer(lambda: do_file_history(archive, path, project, max_tokens, cursor))

    @server.tool(annotations=reads, structured_output=False)
    def signals(
        session: Annotated[
            str | None,
            Field(
                max_length=SHORT_TEXT, description="a session: its signals with the messages they point at"
            ),
        ] = None,
        project: Project = None,
        limit: Annotated[int, Field(description="sessions to list without session (1-200)")] = 20,
        max_tokens: Tokens = None,
        cursor: Cursor = None,
    ) -> str:
        """What went wrong: retry loops, refused or failing tool calls, dead ends, repeated prompts,
        thrashing edits. Without session: the sessions (of a project) with the most signals. Call it
        before repeating an approach that may have failed before."""
        if not 1 <= limit <= 200:
            raise ToolError(f"limit is {limit}: give 1 to 200")
        return answer(lambda: do_signals(archive, session, project, limit, max_tokens, cursor))

    @server.tool(annotations=reads, structured_output=False)
    def stats(
        session: Annotated[
            str | None,
            Field(max_length=SHORT_TEXT, description="a session: its totals and the files it changed"),
        ] = None,
        project: Project = None,
        agent: Agent = None,
        by: Annotated[
            str,
            Field(max_length=SHORT_TEXT, description="day, week, month, project, model, agent or session"),
        ] = "day",
        since: Annotated[
            str | None, Field(max_length=SHORT_TEXT, description="from this day: 2026-03-01, yesterday, 7d")
        ] = None,
        until: Annotated[
            str | None, Field(max_length=SHORT_TEXT, description="up to this day (included)")
        ] = None,
        max_tokens: Tokens = None,
        cursor: Cursor = None,
    ) -> str:
        """Tokens, cost, tool calls (and failures) and changed lines: for one session, or summed by
        day, week, month, project, model, agent or session (`threadloom stats --json` rows)."""
        return answer(
            lambda: do_stats(archive, session, project, agent, by, since, until, max_tokens, cursor)
        )

    @server.tool(annotations=writes, structured_output=False)
    def remember(
        title: Annotated[
            str, Field(max_length=SHORT_TEXT, description="a few words naming it, unique in its scope")
        ],
        content: Annotated[
            str,
            Field(
                max_length=LONG_TEXT, description="what to keep: the decision, fact, guideline or reference"
            ),
        ],
        kind: Annotated[
            str, Field(max_length=SHORT_TEXT, description="decision, fact, guideline or reference")
        ] = "fact",
        scope: Annotated[
            str,
            Field(
                max_length=SHORT_TEXT, description="global, project (give project) or session (give session)"
            ),
        ] = "project",
        project: Project = None,
        session: Annotated[
            str | None, Field(max_length=SHORT_TEXT, description="the session it holds for (scope session)")
        ] = None,
        reason: Annotated[
            str | None, Field(max_length=SHORT_TEXT, description="why it is written or changed")
        ] = None,
        entry: Annotated[
            str | None,
            Field(max_length=SHORT_TEXT, description="an entry's id (k-…) to write a new version of"),
        ] = None,
        base_version: Annotated[
            int | None, Field(description="the version you read (a newer one is a conflict)")
        ] = None,
        author_session: Annotated[
            str | None,
            Field(max_length=SHORT_TEXT, description="your own session id, recorded as the author"),
        ] = None,
    ) -> str:
        """Keep a decision, fact, guideline or reference for later sessions, people's and agents'.
        An entry of that title in that scope gets a new version (the old ones stay, with who wrote
        them and why). Call it when something is settled that the next session should know."""
        return answer(
            lambda: do_remember(
                archive,
                title,
                content,
                kind,
                scope,
                project,
                session,
                reason,
                entry,
                base_version,
                author_session,
            )
        )

    @server.tool(annotations=reads, structured_output=False)
    def recall(
        project: Project = None,
        session: Annotated[
            str | None,
            Field(max_length=SHORT_TEXT, description="a session: its own entries first, then its project's"),
        ] = None,
        kind: Annotated[
            str | None, Field(max_length=SHORT_TEXT, description="decision, fact, guideline or reference")
        ] = None,
        text: Annotated[
            str | None,
            Field(max_length=SHORT_TEXT, description="only entries whose title or content holds this"),
        ] = None,
        max_tokens: Tokens = None,
        cursor: Cursor = None,
    ) -> str:
        """The decisions, facts, guidelines and references that hold here: the session's, its
        project's (and the folders above it), then the global ones, the more specific winning. Call
        it at the start of a task in a project (pass your working folder as project)."""
        return answer(lambda: do_recall(archive, project, session, kind, text, max_tokens, cursor))

    @server.tool(annotations=writes, structured_output=False)
    def tag(
        target: Annotated[
            str,
            Field(
                max_length=SHORT_TEXT,
                description="a session id (or prefix), SESSION#12 for its message #12, or an entry id (k-…)",
            ),
        ],
        tags: Annotated[list[str] | None, Field(description="tags to put on (a word or two each)")] = None,
        note: Annotated[str | None, Field(max_length=LONG_TEXT, description="a note to write on it")] = None,
        turn: Annotated[int | None, Field(description="the turn of the session's message #turn")] = None,
        message: Annotated[int | None, Field(description="the session's message #message")] = None,
        remove: Annotated[bool, Field(description="take these tags off instead")] = False,
        author_session: Annotated[
            str | None,
            Field(max_length=SHORT_TEXT, description="your own session id, recorded as the author"),
        ] = None,
    ) -> str:
        """Tag (or note) a session, a turn, a message or a memory entry so it is found again:
        search 'tag:NAME' or 'note:WORD'. People see the tags and notes in threadloom too."""
        return answer(
            lambda: do_tag(archive, target, tags or [], note, turn, message, remove, author_session)
        )

    return server


def serve(db_path: Path) -> None:
    """Answer over stdio until the client closes it. The embedding model and the archive's vectors
    are loaded first (under a second at 1 GB, while the agent starts): the first search does not
    pay for them."""
    server = build_server(db_path)
    _warm(db_path)
    server.run("stdio")


def _warm(db_path: Path) -> None:
    from ..base import embed
    from ..insight.recall import vector_index
    from ..read.search import has_episodes
    from ..store import db

    try:
        embed.embed(["warm"])
        if not Path(db_path).is_file() or db.upgrade_due(db_path) is not None:
            return  # no archive yet (none is made here), or one the first call brings up to date
        conn = db.open_for_reading(db_path)
        try:
            if has_episodes(conn):
                vector_index(conn)
        finally:
            conn.close()
    except Exception:  # nothing to warm (no archive yet, a broken model): the first call says why
        return
