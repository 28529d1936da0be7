"""Fuzzy search over every conversation: FTS5 narrows, rapidfuzz expands typos and ranks.

A query is words, "exact phrases" and filters (`agent:`, `project:`, `role:`, `tool:`, `in:tools`,
`in:thinking`, `in:subagents`, `after:`, `before:`, `session:`). Each word matches indexed terms
by prefix (`parseConf` finds `parseConfigFile`); a word absent from the index is replaced by its
nearest indexed terms (`midleware` → `middleware`). Word order never matters.
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from rapidfuzz import fuzz, process

from ..base.text import (
    SEARCH_HELP,  # noqa: F401  (re-exported: the TUI and CLI show it)
    SIGNALS,
    flat,
    readable,
)
from ..store import search_index
from ..store.db import is_damage
from ..store.rows import fetch, fetch_one, value, values
from ..store.sql import like_text
from .query import agent_filter, main_sql, title_sql

FILTER_KEYS = (
    "agent",
    "project",
    "role",
    "tool",
    "in",
    "after",
    "before",
    "session",
    "signal",
    "file",
    "cmd",
    "error",
    "tag",
    "note",
    "machine",
    "who",
)

# Tuned on the 1 GB benchmark archive (bench/queries.txt): 300/2000/20k gave p50 53 ms, p95 125 ms;
# these give 23 / 80 ms, and the 50 hits shown still come from 150 re-ranked candidates.
CANDIDATES = 150
PRESELECT = 600
COMMON = 5_000  # matches beyond which a query is ranked among its newest matches only
TOKEN = re.compile(r'(\w+):("[^"]*"|\S+)|"([^"]*)"|(\S+)')
WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class ParsedQuery:
    words: list[str] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)
    agent: str | None = None
    project: str | None = None
    role: str | None = None
    tool: str | None = None
    session: str | None = None
    signal: str | None = None  # sessions that show this signal (one of text.SIGNALS)
    machine: str | None = None  # sessions read from this machine's files (core.ingest.sync)
    who: str | None = None  # sessions pushed to the sync hub by this person
    # sessions tagged NAME (themselves, or one of their turns or messages); with no words, what was tagged
    tag: str | None = None
    note: str | None = None  # sessions with a note holding WORD (on them, a turn or a message)
    after: int | None = None
    before: int | None = None
    in_tools: bool = False
    in_thinking: bool = False
    in_subagents: bool = False  # accepted for older habits: subagents are searched by default
    in_main: bool = False  # main sessions only
    # an episode's facets (core.insight.episodes): turns that read or changed a file, ran a command, met an error
    file: str | None = None
    cmd: str | None = None
    error: str | None = None
    problems: list[str] = field(default_factory=list)  # shown with the hits
    # filters that could not be honoured (a date that is none, an unknown signal): the TUI searches
    # without them, saying so; the CLI stops, as a script would want
    unusable_filters: list[str] = field(default_factory=list)

    def unusable(self, problem: str) -> None:
        self.problems.append(problem)
        self.unusable_filters.append(problem)

    @property
    def empty(self) -> bool:
        return not self.words and not self.phrases

    @property
    def has_filters(self) -> bool:
        return (
            any(
                v is not None
                for v in (
                    self.agent,
                    self.project,
                    self.role,
                    self.tool,
                    self.session,
                    self.signal,
                    self.after,
                    self.before,
                    self.tag,
                    self.note,
                    self.file,
                    self.cmd,
                    self.error,
                    self.machine,
                    self.who,
                )
            )
            or self.in_main
        )


@dataclass
class Hit:
    entry_id: int
    session_id: str
    uuid: str | None
    agent: str
    project: str | None
    session_title: str | None
    role: str | None
    timestamp: int | None
    score: float
    snippet: str
    highlights: list[tuple[int, int]]
    field: str  # content | thinking | tool_text
    seq: int | None
    turn_id: str | None = None  # the turn (episode) it belongs to, when a search by meaning was part of it
    why: str = "words"  # what found it: words | meaning | words + meaning
    main_session_id: str | None = None  # a hit in a subagent: the session it belongs to (a fork: its source)
    main_title: str | None = None
    relation: str | None = None  # what the session is to main_session_id: subagent | fork

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["highlights"] = [list(h) for h in self.highlights]
        return data


@dataclass
class SearchResult:
    hits: list[Hit]
    total: int
    capped: bool
    terms: dict[str, list[str]]  # each query word → the indexed terms it matched
    seconds: float
    problems: list[str] = field(default_factory=list)

    @property
    def count_label(self) -> str:
        return f"{len(self.hits)} of >{self.total}" if self.capped else f"{len(self.hits)} of {self.total}"


def parse_time(value: str, *, now: float | None = None, end: bool = False) -> int | None:
    """'2026-03-01', 'today', 'yesterday', '7d', '12h', '2w' → unix ms (None when unreadable)."""
    now_dt = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    value = value.strip().lower()
    day = timedelta(days=1)
    if value in ("today", "yesterday"):
        start = now_dt.replace(hour=0, minute=0, second=0, microsecond=0) - (
            day if value == "yesterday" else timedelta()
        )
        return int(((start + day) if end else start).timestamp() * 1000)
    m = re.fullmatch(r"(\d+)\s*([hdwm])", value)
    if m:
        unit = {"h": timedelta(hours=1), "d": day, "w": timedelta(weeks=1), "m": timedelta(days=30)}[
            m.group(2)
        ]
        return int((now_dt - int(m.group(1)) * unit).timestamp() * 1000)
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    if end and len(value) <= 10:
        dt += day
    return int(dt.timestamp() * 1000)


def parse_query(
    text: str, *, now: float | None = None, conn: sqlite3.Connection | None = None
) -> ParsedQuery:
    """The words, phrases and filters of `text`. `agent:` is taken as the archive names its agents
    (agent:gemini-cli is gemini; core.read.query.agent_filter), and one that names no agent is an
    unusable filter; without `conn` only the adapters' names and their other names are known, so a
    name that is none of them is kept as given."""
    q = ParsedQuery()
    if text.count('"') % 2:  # a phrase left open runs to the end, as typing it so far means
        text += '"'
        q.problems.append('a " was not closed: the phrase runs to the end of the query')
    for m in TOKEN.finditer(text):
        key, value, phrase, word = m.groups()
        if key is not None and key.lower() in FILTER_KEYS:
            key = key.lower()
            value = value.strip('"')
            if key == "in":
                for part in value.lower().split(","):
                    if part in ("tools", "tool"):
                        q.in_tools = True
                    elif part == "thinking":
                        q.in_thinking = True
                    elif part in ("subagents", "subagent", "agents"):
                        q.in_subagents = True
                    elif part == "main":
                        q.in_main = True
                    elif part == "all":
                        q.in_tools = q.in_thinking = q.in_subagents = True
                    else:
                        q.unusable(f"in:{part} is not known (tools, thinking, subagents, main, all)")
            elif key in ("after", "before"):
                ms = parse_time(value, now=now, end=key == "before")
                if ms is None:
                    q.unusable(f"{key}:{value} is not a date (2026-03-01, yesterday, 7d)")
                setattr(q, key, ms)
            elif key == "signal":
                if value.lower() in SIGNALS:
                    q.signal = value.lower()
                else:  # searched without it, as an unreadable date is (the CLI stops instead)
                    q.unusable(f"signal:{value} is not known ({', '.join(SIGNALS)})")
            elif key == "agent":
                q.agent = _agent(value, conn, q)
            elif key == "tag":
                from ..store.memory_tables import MemoryRefused, clean_tag

                try:
                    q.tag = clean_tag(value)
                except MemoryRefused:
                    q.unusable("tag: needs a tag's name (tag:flaky)")
            else:
                setattr(q, key, value)
            if key == "tool":
                q.in_tools = True
        elif key is not None:
            q.words.append(m.group(0))  # e.g. "http://x" or "todo:this" — just text
        elif phrase is not None:
            if phrase.strip():
                q.phrases.append(phrase.strip())
        elif word:
            q.words.append(word)
    return q


def _agent(value: str, conn: sqlite3.Connection | None, q: ParsedQuery) -> str | None:
    """The `agent:` filter as the archive names the agent. One that names none is an unusable filter
    (the CLI stops, the TUI says so) and is kept as given: it lets nothing through, as it says."""
    from ..adapters import UnknownAgent, archive_agent

    if not value.strip():
        return None  # agent:"" filters nothing, as before
    try:
        return (
            agent_filter(conn, value, prefix=True) if conn is not None else archive_agent(value, prefix=True)
        )
    except UnknownAgent as exc:
        if conn is not None:  # without the archive its own agents are not known: not said
            q.unusable(str(exc))
        return value


# Words so common that requiring them only costs time (each matches most messages); dropped from
# a query that has other words. Phrases keep them.
STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    }
)


_TERMS_CACHE: dict[tuple[Any, ...], list[str]] = {}


class Vocabulary:
    """Looks up indexed terms to expand prefixes and misspellings.

    Existence checks are FTS queries with LIMIT 1 (they stop at the first match); the fts5vocab
    table is only scanned to find near spellings, and what it returned is cached in the process
    until the index changes (it reads whole doclists: costly for common letters on a large index).
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._generation: tuple[Any, ...] | None = None

    def _exists(self, expression: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM search_fts WHERE search_fts MATCH ? LIMIT 1", (expression,)
        ).fetchone()
        return row is not None

    def has_term(self, token: str) -> bool:
        return self._exists(_fts_quote(token))

    def has_prefix(self, token: str) -> bool:
        return self._exists(f"{_fts_quote(token)} *")

    def generation(self) -> tuple[Any, ...]:
        if self._generation is None:
            main = fetch_one(self.conn, "PRAGMA database_list")  # the first database is main
            # max(id) grows with every write (a rewritten file's rows get new ids); count(*) would
            # walk the whole table (~50 ms at 1 GB) on every search that needs a near spelling
            top = value(self.conn, "SELECT max(id) FROM entries")
            self._generation = (main["file"] if main else None, top)
        return self._generation

    def nearest(self, token: str, limit: int = 3) -> list[str]:
        """Indexed terms closest to a word the index does not have (same first letter)."""
        lo = token[:1]
        key = (*self.generation(), lo)
        terms = _TERMS_CACHE.get(key)
        if terms is None:
            terms = values(
                self.conn,
                "SELECT term FROM search_vocab WHERE term >= ? AND term < ?",
                (lo, lo + "\U0010ffff"),
            )
            _TERMS_CACHE[key] = terms
        near = [t for t in terms if abs(len(t) - len(token)) <= 3]
        found = process.extract(token, near, scorer=fuzz.ratio, score_cutoff=72, limit=limit)
        return [t for t, _, _ in found]


def _fts_quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def build_match(
    q: ParsedQuery, vocab: Vocabulary, *, any_word: bool = False
) -> tuple[str | None, dict[str, list[str]]]:
    """The FTS5 MATCH expression, and what each word expanded to. Every word must match, or with
    `any_word` any of them (a sentence as people remember it: BM25 ranks by how many and how rare)."""
    groups: list[str] = []
    expanded: dict[str, list[str]] = {}
    tokens = [t for word in q.words for t in WORD.findall(word.lower())]
    meaningful = [t for t in tokens if t not in STOP_WORDS]
    if meaningful:
        tokens = meaningful
    for i, token in enumerate(tokens):
        last = i == len(tokens) - 1
        # a whole indexed word matches as itself; a prefix search (slow on short common words) is
        # for a word the index only has longer forms of, and for the word being typed
        if vocab.has_term(token) and not (last and len(token) >= 3):
            variants = [_fts_quote(token)]
            expanded[token] = [token]
        elif vocab.has_prefix(token):
            variants = [f"{_fts_quote(token)} *" if len(token) >= 2 else _fts_quote(token)]
            expanded[token] = [token]
        else:
            near = vocab.nearest(token)
            if not near:
                expanded[token] = []
                if any_word:
                    continue
                return None, expanded  # a word nothing resembles: no hits, say so
            variants = [_fts_quote(t) for t in near]
            expanded[token] = near
        groups.append("(" + " OR ".join(variants) + ")")
    for phrase in q.phrases:
        words = WORD.findall(phrase.lower())
        if words:
            groups.append(_fts_quote(" ".join(words)))
            expanded[phrase] = [phrase]
    if not groups:
        return None, expanded
    columns = ["content"] + (["tool_text"] if q.in_tools else []) + (["thinking"] if q.in_thinking else [])
    if q.tool:
        columns = ["tool_text"]
    joined = (" OR " if any_word else " AND ").join(groups)
    return "{" + " ".join(columns) + "} : (" + joined + ")", expanded


def search(conn: sqlite3.Connection, text: str, *, limit: int = 50, now: float | None = None) -> SearchResult:
    """Hits for `text`, best first; `problems` says what could not be honoured (or is incomplete)."""
    result = _search(conn, text, limit=limit, now=now)
    behind = search_index.pending(conn)
    if behind is not None:
        result.problems.append(
            f"the search index is still being built ({behind.fraction:.0%}): newer records are not found yet"
        )
    return result


def _search(
    conn: sqlite3.Connection, text: str, *, limit: int, now: float | None, any_word: bool = False
) -> SearchResult:
    started = time.perf_counter()
    q = parse_query(text, now=now, conn=conn)
    without_episodes(conn, q)
    if q.empty:
        if q.has_filters:
            return _filtered_only(conn, q, limit, started)
        return SearchResult([], 0, False, {}, 0.0, q.problems or ["type some words to search for"])
    match, terms = build_match(q, Vocabulary(conn), any_word=any_word)
    if match is None:
        missing = [w for w, t in terms.items() if not t]
        problems = q.problems + [f"nothing like {w!r} in any conversation" for w in missing]
        return SearchResult([], 0, False, terms, time.perf_counter() - started, problems)
    where, params = _filters(q)
    where.insert(0, "search_fts MATCH ?")
    params.insert(0, match)
    # Rank inside FTS first and join only the best PRESELECT matches; when filters leave too few of
    # them, rank everything (a common word over 1 GB: hundreds of thousands of matches to join).
    filters = " AND ".join(where[1:])
    columns = _COLUMNS.format(score="f.score")
    ranked = "SELECT rowid, bm25(search_fts, 1.0, 0.5, 0.7) AS score FROM search_fts WHERE search_fts MATCH ?"
    common = (
        value(
            conn,
            f"SELECT count(*) FROM (SELECT rowid FROM search_fts WHERE search_fts MATCH ? LIMIT {COMMON})",
            params[:1],
        )
        >= COMMON
    )
    # A query matching most of the archive: bm25 over all of it says little and costs ~100 ms per GB;
    # take its newest matches instead and let the re-ranking below order them.
    pre = ranked + (" ORDER BY rowid DESC" if common else " ORDER BY score") + f" LIMIT {PRESELECT}"
    joins = "JOIN entries e ON e.id = f.rowid JOIN agent_sessions s ON s.id = e.session_id"
    try:
        rows = fetch(
            conn,
            f"{columns} FROM ({pre}) f {joins} WHERE {filters} ORDER BY f.score LIMIT {CANDIDATES + 1}",
            params,
        )
        if len(rows) <= CANDIDATES and common:
            # filters dropped most of the newest matches: walk all matches newest first instead
            rows = fetch(
                conn,
                f"{columns} FROM ({ranked} ORDER BY rowid DESC) f {joins} WHERE {filters} "
                f"ORDER BY f.rowid DESC LIMIT {CANDIDATES + 1}",
                params,
            )
        elif len(rows) <= CANDIDATES and not common:
            preselected = value(
                conn,
                f"SELECT count(*) FROM (SELECT rowid FROM search_fts WHERE search_fts MATCH ? LIMIT {PRESELECT})",
                params[:1],
            )
            if preselected >= PRESELECT:
                rows = fetch(
                    conn,
                    f"{columns} FROM ({ranked}) f {joins} WHERE {filters} ORDER BY f.score LIMIT {CANDIDATES + 1}",
                    params,
                )
    except sqlite3.OperationalError as exc:
        if is_damage(exc):  # not a query it could not run: the caller says how to rebuild
            raise
        return SearchResult(
            [], 0, False, terms, time.perf_counter() - started, q.problems + [f"search failed: {exc}"]
        )
    capped = len(rows) > CANDIDATES
    rows = rows[:CANDIDATES]
    patterns = _highlight_pattern(terms)
    query_text = " ".join(q.words + q.phrases).lower()
    best = min((r["score"] for r in rows), default=0.0)
    worst = max((r["score"] for r in rows), default=0.0)
    span = (worst - best) or 1.0
    hits = []
    for row in rows:
        field_name, body = _matched_field(patterns, row["content"], row["thinking"], row["tool_text"], q)
        snippet, spans = make_snippet(body or "", patterns)
        relevance = 1.0 - (row["score"] - best) / span  # 1 = best FTS rank among candidates
        # how closely the words around the match read like the query (the snippet window, not the
        # whole message: scoring 300 long bodies cost more than the FTS query itself)
        closeness = fuzz.token_set_ratio(query_text, snippet.lower()) / 100 if query_text else 1.0
        score = round(100 * (0.55 * relevance + 0.45 * closeness), 2)
        hits.append(_hit(row, score, snippet, spans, field_name))
    hits.sort(key=lambda h: (-h.score, -(h.timestamp or 0)))
    return SearchResult(hits[:limit], len(rows), capped, terms, time.perf_counter() - started, q.problems)


# a record (`e`) that was tagged itself: a message target is `SESSION#seq` (core.insight.memory)
TAGGED_MESSAGE_SQL = (
    "EXISTS (SELECT 1 FROM memory_marks m WHERE m.kind = 'tag' AND m.target_type = 'message' "
    "AND m.target_id = e.session_id || '#' || e.seq AND m.value = ?)"
)


def _filters(q: ParsedQuery, *, tool_test: bool = True) -> tuple[list[str], list[Any]]:
    """The SQL conditions (on entries `e` and agent_sessions `s`) of the query's filters; without
    `tool_test` the tool filter is left to the caller."""
    where = ["e.dup_of IS NULL"]
    params: list[Any] = []
    if q.role:
        where.append("e.role = ?")
        params.append(q.role.lower())
    elif not q.in_tools and q.tag:  # a message tagged is found whatever it is (a system message too)
        where.append(f"((e.role IN ('user', 'assistant') AND e.is_meta = 0) OR {TAGGED_MESSAGE_SQL})")
        params.append(q.tag)
    elif not q.in_tools:
        where.append("e.role IN ('user', 'assistant') AND e.is_meta = 0")
    # subagents too (the work people remember is often done there), unless `in:main` asks otherwise
    if q.in_main:
        where.append(main_sql("s."))
    session_where, session_params = _session_filters(q, "s.")
    where += session_where
    params += session_params
    if q.after is not None:
        where.append("e.timestamp >= ?")
        params.append(q.after)
    if q.before is not None:
        where.append("e.timestamp < ?")
        params.append(q.before)
    facets, facet_params = facet_filters(q)
    if facets:
        where.append(f"e.turn_id IN (SELECT turn_id FROM episodes ep WHERE {' AND '.join(facets)})")
        params += facet_params
    if q.tool and tool_test:
        where.append(
            "(EXISTS (SELECT 1 FROM agent_tool_calls t WHERE t.entry_id = e.id AND t.tool_name = ? COLLATE NOCASE) "
            "OR EXISTS (SELECT 1 FROM agent_tool_calls t WHERE t.result_entry_id = e.id "
            "AND t.tool_name = ? COLLATE NOCASE))"
        )
        params += [q.tool, q.tool]
    return where, params


def has_episodes(conn: sqlite3.Connection) -> bool:
    """Whether the archive has its episodes table (an archive opened read-only before the ingest
    that adds it has none: its facets and search by meaning wait for that ingest)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'episodes'").fetchone() is not None


def without_episodes(conn: sqlite3.Connection, q: ParsedQuery) -> None:
    """Drop the facet filters an archive without episodes cannot honour, saying so."""
    if (q.file or q.cmd or q.error) and not has_episodes(conn):
        q.file = q.cmd = q.error = None
        q.unusable("file:, cmd: and error: need the turns' facets: run `threadloom ingest` once")


def facet_filters(q: ParsedQuery, prefix: str = "ep.") -> tuple[list[str], list[Any]]:
    """The conditions of the `file:`, `cmd:` and `error:` filters on episodes (`prefix`: its alias)."""
    where, params = [], []
    for column, wanted in (("files", q.file), ("commands", q.cmd), ("errors", q.error)):
        if wanted:
            where.append(f"{prefix}{column} LIKE ? ESCAPE '\\'")
            params.append("%" + like_text(wanted) + "%")
    return where, params


def _session_filters(q: ParsedQuery, prefix: str) -> tuple[list[str], list[Any]]:
    """The conditions of the agent, project and session filters on agent_sessions (`prefix`: its alias)."""
    where, params = [], []
    if q.agent:
        where.append(f"{prefix}source LIKE ? ESCAPE '\\'")
        params.append(like_text(q.agent) + "%")
    if q.project:
        where.append(f"({prefix}project LIKE ? ESCAPE '\\' OR {prefix}project_path LIKE ? ESCAPE '\\')")
        params += [f"%{like_text(q.project)}%"] * 2
    if q.session:
        where.append(f"{prefix}id LIKE ? ESCAPE '\\'")
        params.append(like_text(q.session) + "%")
    if q.signal:
        where.append(f"{prefix}id IN (SELECT session_id FROM session_signals WHERE name = ?)")
        params.append(q.signal)
    # what people and agents marked (core.insight.memory): a tag or a note on the session, a turn or a message
    if q.tag:
        where.append(
            f"{prefix}id IN (SELECT COALESCE(session_id, target_id) FROM memory_marks WHERE kind = 'tag' AND value = ?)"
        )
        params.append(q.tag)
    if q.note:
        where.append(
            f"{prefix}id IN (SELECT COALESCE(session_id, target_id) FROM memory_marks WHERE kind = 'note' "
            "AND value LIKE ? ESCAPE '\\')"
        )
        params.append("%" + like_text(q.note) + "%")
    if q.machine or q.who:
        from .query import origin_filter

        more, values = origin_filter(prefix, q.machine, q.who)
        where += more
        params += values
    return where, params


# a candidate record, its columns named as Hit's fields where it has them; {score}: its bm25 rank
_COLUMNS = (
    "SELECT e.id AS entry_id, e.session_id, e.uuid, s.source AS agent, s.project, "
    f"{title_sql('s.')} AS session_title, e.role, e.timestamp, {{score}} AS score, "
    "e.content, e.thinking, e.tool_text, e.seq "
)


def _hit(row: sqlite3.Row, score: float, snippet: str, spans: list[tuple[int, int]], field_name: str) -> Hit:
    """A `_COLUMNS` row as a hit, with what ranking it found."""
    return Hit(
        entry_id=row["entry_id"],
        session_id=row["session_id"],
        uuid=row["uuid"],
        agent=row["agent"],
        project=row["project"],
        session_title=row["session_title"],
        role=row["role"],
        timestamp=row["timestamp"],
        score=score,
        snippet=snippet,
        highlights=spans,
        field=field_name,
        seq=row["seq"],
    )


def _filtered_only(conn: sqlite3.Connection, q: ParsedQuery, limit: int, started: float) -> SearchResult:
    """Filters and no words ("tool:Edit", "agent:codex after:7d"): the newest records they let
    through, by their time (not the order they were read in: files are read in any order). A tool
    or narrow session filter first picks the records it can hold by id alone (from the tool calls,
    or through the session index), newest first; otherwise the sessions are walked from the most
    recently active, until no session left can hold a newer record. Only the records kept are read
    whole."""
    where, params = _filters(q, tool_test=False)
    joined = f"FROM entries e JOIN agent_sessions s ON s.id = e.session_id WHERE {' AND '.join(where)}"
    rank_of: dict[int, int] = {}
    try:
        if q.tag:  # what was tagged, messages first: a tagged session's records would bury them
            ranked = _tagged_ids(conn, q.tag)
            rank_of = {entry_id: rank for entry_id, _, rank in ranked}
            candidates = _candidate_ids(conn, q)
            if candidates is not None:
                narrow = {i for i, _ in candidates}
                ranked = [r for r in ranked if r[0] in narrow]
            candidates = [(entry_id, at) for entry_id, at, _ in ranked]
        else:
            candidates = _candidate_ids(conn, q)
        if candidates is None:  # nothing narrows by id: the newest records of the newest sessions
            ids = _newest_by_session(conn, q, joined, params)
        else:
            # a candidate's time is its record's: the dates are checked here, not one batch of
            # records at a time (tool:Bash after:30d matching nothing, 1 GB: 190 queries, 360 ms)
            if q.after is not None:
                candidates = [c for c in candidates if c[1] is None or c[1] >= q.after]
            if q.before is not None:
                candidates = [c for c in candidates if c[1] is None or c[1] < q.before]
            candidates.sort(key=lambda c: (rank_of.get(c[0], 0), c[1] is None, -(c[1] or 0), -c[0]))
            ids = []
            for start in range(0, len(candidates), ID_BATCH):
                batch = [i for i, _ in candidates[start : start + ID_BATCH]]
                ids += values(
                    conn,
                    f"SELECT e.id {joined} AND e.id IN ({', '.join('?' * len(batch))})",
                    [*params, *batch],
                )
                if len(ids) > CANDIDATES:
                    break
        rows = []
        for start in range(0, len(ids), ID_BATCH):
            batch = ids[start : start + ID_BATCH]
            rows += fetch(
                conn,
                _COLUMNS.format(score="0.0")
                + f"FROM entries e JOIN agent_sessions s ON s.id = e.session_id WHERE e.id IN ({', '.join('?' * len(batch))})",
                batch,
            )
    except sqlite3.OperationalError as exc:
        if is_damage(exc):  # not a query it could not run: the caller says how to rebuild
            raise
        return SearchResult(
            [], 0, False, {}, time.perf_counter() - started, q.problems + [f"search failed: {exc}"]
        )
    rows.sort(
        key=lambda r: (
            rank_of.get(r["entry_id"], 0),
            r["timestamp"] is None,
            -(r["timestamp"] or 0),
            -r["entry_id"],
        )
    )
    capped = len(rows) > CANDIDATES
    hits = []
    for row in rows[:limit]:
        field_name, body = _matched_field(None, row["content"], row["thinking"], row["tool_text"], q)
        snippet, spans = make_snippet(body or "", None)
        hits.append(_hit(row, 0.0, snippet, spans, field_name))
    listed = (
        f"what is tagged {q.tag} (messages, then turns, then sessions), newest first"
        if q.tag
        else "the newest records these filters let through"
    )
    problems = [*q.problems, f"no words given: {listed}"]
    return SearchResult(hits, min(len(rows), CANDIDATES), capped, {}, time.perf_counter() - started, problems)


ID_BATCH = 500
# a session filter lets through more messages than this: they are common, and walking the records
# from the newest finds enough of them sooner than listing all their ids (agent:claude, 1 GB: 6 ms
# against 300 ms)
SESSION_IDS_MAX = 20_000
# the sessions read at once when the newest records are looked for session by session: about this
# many messages (or this many sessions)
WALK_MESSAGES, WALK_SESSIONS = 4_000, 200


def _newest_by_session(conn: sqlite3.Connection, q: ParsedQuery, joined: str, params: list[Any]) -> list[int]:
    """The ids of the newest CANDIDATES + 1 records `joined` lets through (records without a time
    last), read a few sessions at a time from the most recently active: a session's last activity
    is its newest record's time, so once that is older than every record kept, no session left
    holds a newer one."""
    sessions = conn.execute(
        "SELECT id, COALESCE(ended_at, created_at), message_count FROM agent_sessions "
        "ORDER BY COALESCE(ended_at, created_at) IS NULL, COALESCE(ended_at, created_at) DESC, id"
    ).fetchall()
    need = CANDIDATES + 1
    kept: list[tuple[int | None, int]] = []  # (time, id), newest first
    i = 0
    while i < len(sessions):
        last = sessions[i][1]
        dated = [t for t, _ in kept if t is not None]
        if len(dated) >= need and (last is None or last < dated[-1]):
            break  # no session from here on holds a record newer than those kept
        if q.after is not None and (last is None or last < q.after):
            break  # nor one the `after` filter lets through
        chunk: list[str] = []
        messages = 0
        while i < len(sessions) and len(chunk) < WALK_SESSIONS and (not chunk or messages < WALK_MESSAGES):
            chunk.append(sessions[i][0])
            messages += sessions[i][2] or 0
            i += 1
        kept += conn.execute(
            f"SELECT e.timestamp, e.id {joined} AND e.session_id IN (SELECT value FROM json_each(?)) "
            "ORDER BY e.timestamp IS NULL, e.timestamp DESC, e.id DESC LIMIT ?",
            [*params, orjson.dumps(chunk).decode(), need],
        ).fetchall()
        kept.sort(key=lambda k: (k[0] is None, -(k[0] or 0), -k[1]))
        del kept[need:]
    return [entry_id for _, entry_id in kept]


def _tagged_ids(conn: sqlite3.Connection, tag: str) -> list[tuple[int, int | None, int]]:
    """The records tagged `tag`, each with its time and its rank: 0 a message tagged itself, 1 a
    record of a tagged turn, 2 one of a tagged session (a record tagged twice keeps its best)."""
    best: dict[int, tuple[int | None, int]] = {}

    def keep(rows: list[tuple[int, int | None]], rank: int) -> None:
        for entry_id, at in rows:
            if entry_id not in best or best[entry_id][1] > rank:
                best[entry_id] = (at, rank)

    marks = conn.execute(
        "SELECT target_type, target_id FROM memory_marks WHERE kind = 'tag' AND value = ?", (tag,)
    ).fetchall()
    for target_type, target_id in marks:
        if target_type == "session":
            keep(
                conn.execute(
                    "SELECT id, timestamp FROM entries WHERE session_id = ?", (target_id,)
                ).fetchall(),
                2,
            )
            continue
        session_id, _, seq = target_id.rpartition("#")
        if target_type not in ("message", "turn") or not seq.isdigit():
            continue
        place = conn.execute(
            "SELECT id, timestamp, turn_id FROM entries WHERE session_id = ? AND seq = ?",
            (session_id, int(seq)),
        ).fetchone()
        if place is None:
            continue
        if target_type == "turn" and place[2] is not None:
            keep(
                conn.execute(
                    "SELECT id, timestamp FROM entries WHERE session_id = ? AND turn_id = ?",
                    (session_id, place[2]),
                ).fetchall(),
                1,
            )
        else:
            keep([(place[0], place[1])], 0 if target_type == "message" else 1)
    return [(entry_id, at, rank) for entry_id, (at, rank) in best.items()]


def _candidate_ids(conn: sqlite3.Connection, q: ParsedQuery) -> list[tuple[int, int | None]] | None:
    """The records a tool or a narrow session filter can hold, each with its time (a call's
    record with the call's start, a result's with its end: read without the records), or None
    to walk the sessions instead."""
    tool_ids = None
    if q.tool:
        tool_ids = conn.execute(
            "SELECT entry_id, started_at FROM agent_tool_calls WHERE tool_name = ? COLLATE NOCASE "
            "AND entry_id IS NOT NULL UNION SELECT result_entry_id, completed_at FROM agent_tool_calls "
            "WHERE tool_name = ? COLLATE NOCASE AND result_entry_id IS NOT NULL",
            (q.tool, q.tool),
        ).fetchall()
    session_ids = None
    where, params = _session_filters(q, "")
    if where:
        sessions = f"SELECT id FROM agent_sessions WHERE {' AND '.join(where)}"
        messages = (
            value(conn, f"SELECT sum(message_count) FROM agent_sessions WHERE id IN ({sessions})", params)
            or 0
        )
        if messages <= SESSION_IDS_MAX:  # the session index covers this
            session_ids = conn.execute(
                f"SELECT id, timestamp FROM entries WHERE session_id IN ({sessions})", params
            ).fetchall()
    if tool_ids is not None and session_ids is not None:
        narrow = {i for i, _ in session_ids}
        return [(i, t) for i, t in tool_ids if i in narrow]
    if tool_ids is not None:
        return [(i, t) for i, t in tool_ids]
    return [(i, t) for i, t in session_ids] if session_ids is not None else None


def _highlight_pattern(terms: dict[str, list[str]]) -> re.Pattern[str] | None:
    alternatives = sorted({re.escape(t) for ts in terms.values() for t in ts if t}, key=len, reverse=True)
    if not alternatives:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")\w*", re.IGNORECASE)


def _matched_field(
    pattern: re.Pattern[str] | None,
    content: str | None,
    thinking: str | None,
    tool_text: str | None,
    q: ParsedQuery,
) -> tuple[str, str | None]:
    candidates = [("content", content)]
    if q.in_tools or q.tool:
        candidates.append(("tool_text", tool_text))
    if q.in_thinking:
        candidates.append(("thinking", thinking))
    if q.tool:
        candidates = [("tool_text", tool_text)]
    for name, text in candidates:
        if text and (pattern is None or pattern.search(text)):
            return name, text
    return candidates[0]


def make_snippet(
    text: str, pattern: re.Pattern[str] | None, width: int = 160
) -> tuple[str, list[tuple[int, int]]]:
    """A one-line window around the first match, cut between words with `…` where the text goes
    on, and the spans of every match inside it; agent markup as what it stands for
    (`core.base.text.readable`) and what a terminal would act on drawn as text (`flat`)."""
    line = flat(readable(text))
    first = pattern.search(line) if pattern else None
    start = 0 if first is None else max(0, first.start() - width // 3)
    if start:
        space = line.rfind(" ", 0, start + 1)
        start = space + 1 if space >= 0 and start - space < 20 else start
    end = start + width
    if end < len(line):  # cut after a word, not in one (within a few letters of the width)
        space = line.rfind(" ", start, end + 1)
        end = space if space > start and end - space < 20 else end
    window = line[start:end].rstrip()
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(line) else ""
    snippet = prefix + window + suffix
    spans = (
        [(m.start() + len(prefix), m.end() + len(prefix)) for m in pattern.finditer(window)]
        if pattern
        else []
    )
    return snippet, spans


@dataclass
class SessionMatch:
    session_id: str
    title: str
    project: str | None
    agent: str
    score: float


def find_sessions(conn: sqlite3.Connection, text: str, limit: int = 20) -> list[SessionMatch]:
    """Jump to a session by title, id or project: rapidfuzz over the (few thousand) session labels."""
    rows = fetch(
        conn,
        f"SELECT id, {title_sql('')} AS title, project, source AS agent, "
        "COALESCE(ended_at, 0) AS last FROM agent_sessions WHERE message_count > 0 AND is_warmup = 0",
    )

    def match(row: sqlite3.Row, score: float) -> SessionMatch:
        return SessionMatch(
            session_id=row["id"], title=row["title"], project=row["project"], agent=row["agent"], score=score
        )

    if not text.strip():
        rows.sort(key=lambda r: -r["last"])
        return [match(r, 0.0) for r in rows[:limit]]
    needle = text.strip().lower()
    by_id = [r for r in rows if r["id"].lower().startswith(needle)]
    if by_id and len(needle) >= 4:  # an id prefix wins outright
        by_id.sort(key=lambda r: -r["last"])
        return _whole_id_first([match(r, 100.0) for r in by_id], needle)[:limit]
    labels = [f"{r['title']} {r['project'] or ''} {r['id']}".lower() for r in rows]
    # word order and extra words in a long title should not matter: best of a token-set and a
    # partial match, so "stripe webhooks" finds "Wire up Stripe webhooks for refunds"
    query = text.lower()
    scored = []
    for i, label in enumerate(labels):
        score = max(fuzz.token_set_ratio(query, label), fuzz.partial_ratio(query, label))
        if score >= 60:
            scored.append((score, rows[i]["last"], i))
    scored.sort(key=lambda t: (-t[0], -t[1]))
    found = [match(rows[i], float(score)) for score, _, i in scored]
    return _whole_id_first(found, needle)[:limit]


def _whole_id_first(found: list[SessionMatch], needle: str) -> list[SessionMatch]:
    """An id typed whole ("s1") names its session before those it is a prefix or a fuzzy part of
    ("s154"); the order is kept otherwise."""
    return sorted(found, key=lambda m: m.session_id.lower() != needle)
