"""Recall by meaning: search that finds what people remember, turns like a given one, and the
context of past turns packed for a new session (seed 003).

Three ways to search (`MODES`): `words` is core.read.search as it always was (every word, typos
forgiven); `meaning` ranks episodes (core.insight.episodes) by how close their embedding is to the query's
(core.base.embed); `hybrid`, the default, fuses the two by reciprocal rank: the word side there also
takes messages that have only some of the words (BM25 ranks them), since a sentence as remembered
rarely has all the words the agent used. Every hit says why it matched (`Hit.why`).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from ..base import embed
from ..read import search
from ..read.query import cited_message, main_sql, resolve_session, title_sql, unrelated_holders
from ..read.search import Hit, ParsedQuery, SearchResult, parse_query
from ..store.sql import get_meta, like_text
from .answers import show_command
from .episodes import EMBED_LATER_MAX, GENERATION_KEY, left_for_index, vectors_of

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

MODES = ("hybrid", "words", "meaning")
RRF_K = 60  # reciprocal rank fusion's constant: 1 / (K + rank), as in its paper
NEAREST = 100  # episodes taken from the meaning side before fusing
WORD_HITS = 100  # messages taken from the word side before fusing
# a message with only some of the words counts half: one common word shared no longer ties with the
# turn nearest in meaning (bench/recall scores the same either way: hit@10 0.81 / 0.82)
LOOSE_WEIGHT = 0.5
MEANING_FLOOR = 0.2  # below this cosine an episode is not "like" the query at all


# --------------------------------------------------------------------------- the vectors in memory


@dataclass
class VectorIndex:
    """Every embedded episode's vector, in memory as stored (int8 rows and each one's inverse
    length: 12 MB at 46,000 turns, not 47 as float32): a search is a few blocks' products."""

    generation: tuple[Any, ...]
    turn_ids: list[str]
    session_ids: list[str]
    rows: NDArray[np.int8]
    inverse: NDArray[np.float32]
    rowids: NDArray[np.int64]  # each row's episode (episodes.rowid), ascending
    rows_of_session: dict[str, list[int]] = field(default_factory=dict)

    def mask(self, allowed: NDArray[np.int64] | None, exclude_sessions: set[str] | None) -> NDArray[np.bool_]:
        """The rows a filter lets through, found from the episodes it names by a binary search of
        their rowids (a filter letting 40,000 turns through: a few milliseconds, where a set of
        their ids took 90)."""
        import numpy as np

        if allowed is None:
            keep = np.ones(len(self.turn_ids), dtype=bool)
        else:
            keep = np.zeros(len(self.turn_ids), dtype=bool)
            at = np.searchsorted(self.rowids, allowed)
            found = at < len(self.rowids)
            found[found] = self.rowids[at[found]] == allowed[found]
            keep[at[found]] = True
        for session in exclude_sessions or ():
            keep[self.rows_of_session.get(session, [])] = False
        return keep


# an episode: (its session, its turn id); a turn id alone is shared by a session copied whole
TurnKey = tuple[str, str]

_INDEXES: dict[str, VectorIndex] = {}
_INDEX_LOCK = threading.Lock()


def _generation(conn: sqlite3.Connection) -> tuple[Any, ...]:
    main = conn.execute("PRAGMA database_list").fetchone()
    return (main[2] if main else None, get_meta(conn, GENERATION_KEY), get_meta(conn, embed.MODEL_KEY))


def vector_index(conn: sqlite3.Connection) -> VectorIndex | None:
    """The archive's vectors, loaded once per change (None: nothing embedded yet)."""
    generation = _generation(conn)
    with _INDEX_LOCK:
        cached = _INDEXES.get(str(generation[0]))
        if cached is not None and cached.generation == generation:
            return cached
    if generation[2] != embed.MODEL:
        return None  # stored by another model (or none yet): the next ingest embeds them again
    import numpy as np

    rows = conn.execute("SELECT rowid, turn_id, session_id, vector FROM episodes ORDER BY rowid").fetchall()
    later = [r[1] for r in rows if r[3] is None]
    # the few an ingest left for later (episodes.EMBED_NOW_FROM): embedded here, in memory; more
    # than that many waiting is a pass that did not finish (killed, or no model), which the next
    # ingest finishes: they are left out meanwhile, as they always were
    computed: dict[str, bytes] = {}
    if later and len(later) < EMBED_LATER_MAX:
        with contextlib.suppress(embed.EmbeddingUnavailable):
            computed = vectors_of(conn, later)
    rows = [r if r[3] is not None else (*r[:3], computed.get(r[1])) for r in rows]
    rows = [r for r in rows if r[3] is not None]
    if not rows:
        return None
    packed, inverse = embed.packed([r[3] for r in rows])
    rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    index = VectorIndex(generation, [r[1] for r in rows], [r[2] for r in rows], packed, inverse, rowids)
    for i, session in enumerate(index.session_ids):
        index.rows_of_session.setdefault(session, []).append(i)
    with _INDEX_LOCK:
        _INDEXES[str(generation[0])] = index
    return index


# ----------------------------------------------------------------------------------- searching


def search_text(q: ParsedQuery) -> str:
    """The words of a query, without its filters: what is embedded."""
    return " ".join(q.words + q.phrases)


def meaning_text(conn: sqlite3.Connection, q: ParsedQuery) -> str | None:
    """What a search by meaning embeds for a query, or None when it has nothing to go on.

    The model averages its tokens' vectors, so a query of no word it knows (a keyboard mash,
    random letters) is an average of letter fragments, and the turns nearest it share letters
    ("zzqv" a prompt about "TZ", "hjkl" one saying "h") at cosines a real query's turn has too
    (0.2 to 0.36, where bench/recall's answers sit at 0.22 to 0.76): no floor on the cosine, fixed or
    relative to the archive's, tells them apart. A word counts when the model reads it as one
    (`embed.is_word`) or the archive holds it (a name the model splits, "deepseek"); a query of
    words none of which counts is not searched by meaning. Stop words count only in a query of
    nothing else, as the word search has it (filters alone never come here: `search_recall`)."""
    text = search_text(q)
    words = search.WORD.findall(text)
    meaningful = [w for w in words if w.lower() not in search.STOP_WORDS] or words
    if any(embed.is_word(w) or said_in_archive(conn, w) for w in meaningful):
        return text
    return None


def said_in_archive(conn: sqlite3.Connection, word: str) -> bool:
    """Whether the archive has `word` anywhere the search index reads (one FTS lookup, LIMIT 1): a
    real word the model splits ("rounding") is in what was written, a keyboard mash seldom is."""
    return search.Vocabulary(conn).has_term(word.lower())


def allowed_episodes(conn: sqlite3.Connection, q: ParsedQuery) -> NDArray[np.int64] | None:
    """The rowids of the episodes the query's filters let through, ascending (None: no filter,
    all of them)."""
    where, params = search._session_filters(q, "s.")
    if q.in_main:
        where.append(main_sql("s."))
    # a filter on sessions (a project, an agent, main only) reads the few sessions first and their
    # episodes by index: the planner's choice, every episode with a lookup of its session, took
    # 28 ms at 1 GB where this takes 4
    join = "agent_sessions s CROSS JOIN episodes ep" if where else "episodes ep JOIN agent_sessions s"
    facets, facet_params = search.facet_filters(q, "ep.")
    where += facets
    params += facet_params
    if q.after is not None:
        where.append("ep.started_at >= ?")
        params.append(q.after)
    if q.before is not None:
        where.append("ep.started_at < ?")
        params.append(q.before)
    if q.tool:
        where.append("('\n' || ep.tools || '\n') LIKE ? ESCAPE '\\'")
        params.append(f"%\n{like_text(q.tool)}\n%")
    if not where:
        return None
    import numpy as np

    sql = f"SELECT ep.rowid FROM {join} ON s.id = ep.session_id WHERE " + " AND ".join(where)
    allowed: NDArray[np.int64] = np.sort(
        np.fromiter((r[0] for r in conn.execute(sql, params)), dtype=np.int64)
    )
    return allowed


def nearest(
    conn: sqlite3.Connection,
    query_vector: NDArray[np.float32],
    *,
    limit: int = NEAREST,
    allowed: NDArray[np.int64] | None = None,
    exclude_sessions: set[str] | None = None,
) -> list[tuple[TurnKey, float]]:
    """The episodes closest to a vector, best first, each as (session, turn) with its cosine: a turn
    id is its prompt's uuid, which a session copied whole shares with its source."""
    import numpy as np

    index = vector_index(conn)
    if index is None:
        return []
    scores = embed.cosines(index.rows, index.inverse, query_vector)
    if allowed is not None or exclude_sessions:
        scores = np.where(index.mask(allowed, exclude_sessions), scores, -2.0)
    top = min(limit, len(scores))
    if top <= 0:
        return []
    picked = np.argpartition(-scores, top - 1)[:top]
    picked = picked[np.argsort(-scores[picked])]
    return [
        ((index.session_ids[i], index.turn_ids[i]), float(scores[i]))
        for i in picked
        if scores[i] > MEANING_FLOOR
    ]


def search_recall(
    conn: sqlite3.Connection,
    text: str,
    *,
    mode: str = "hybrid",
    limit: int = 50,
    now: float | None = None,
) -> SearchResult:
    """Hits for `text` in one of `MODES`, best first (see the module's docstring)."""
    if mode not in MODES:
        raise ValueError(f"--mode {mode} is not known ({', '.join(MODES)})")
    q = parse_query(text, now=now, conn=conn)
    if not search.has_episodes(conn):  # an archive from before episodes, opened read-only
        result = search.search(conn, text, limit=limit, now=now)
        if mode != "words":
            result.problems.append("search by meaning waits for the next `threadloom ingest` (words only)")
        return result
    unread = _unread_note(conn, q, mode)
    if mode == "words" or q.empty or (q.phrases and not q.words):
        # filters alone, or an exact phrase: what the words find is the answer
        result = search.search(conn, text, limit=limit, now=now)
        attach_main(conn, result.hits)
        result.problems += unread
        return result
    started = time.perf_counter()
    problems: list[str] = []
    meaning: list[tuple[TurnKey, float]] = []
    search.without_episodes(conn, q)
    nothing_close: str | None = None
    try:
        said = meaning_text(conn, q)
        if said is None:
            nothing_close = (
                f"nothing is close in meaning to {search_text(q)!r}: "
                "the model reads none of its words as words and no conversation has them"
            )
        else:
            meaning = nearest(conn, embed.embed([said])[0], allowed=allowed_episodes(conn, q))
        if said is not None and not meaning and vector_index(conn) is None:
            problems.append("no turn has been embedded yet: run `threadloom ingest` (search by words only)")
        elif said is not None and not meaning:
            nothing_close = f"nothing is close in meaning to {search_text(q)!r}"
    except embed.EmbeddingUnavailable as exc:
        problems.append(f"search by meaning is unavailable: {exc}")
    if mode == "meaning":
        problems += [nothing_close] if nothing_close else []
        hits = _meaning_hits(conn, meaning[:limit])
        attach_main(conn, hits)
        return SearchResult(
            hits, len(meaning), False, {}, time.perf_counter() - started, q.problems + problems + unread
        )
    words = search.search(conn, text, limit=WORD_HITS, now=now)
    hits_by_words = list(words.hits)
    strict = len(hits_by_words)
    # too few with every word: those with some of them too. Asked whatever the limit: a page of 1 had
    # skipped them and said "1 of 17" where a page of 50 said "45 of 45" (and ranked differently)
    if strict < WORD_HITS and len(q.words) > 1:
        loose = search._search(conn, text, limit=WORD_HITS, now=now, any_word=True)
        seen = {h.entry_id for h in hits_by_words}
        hits_by_words += [h for h in loose.hits if h.entry_id not in seen]
    hits, considered = _fuse(conn, hits_by_words, meaning, limit, strict=strict)
    attach_main(conn, hits)
    word_problems = words.problems
    if hits:  # a word nothing resembles is no news when the meaning found turns
        word_problems = [p for p in word_problems if not p.startswith("nothing like")]
    return SearchResult(
        hits,
        considered,
        words.capped,
        words.terms,
        time.perf_counter() - started,
        word_problems + problems + unread,
    )


def _unread_note(conn: sqlite3.Connection, q: ParsedQuery, mode: str) -> list[str]:
    """What a search by meaning (or by the turns' facets) cannot reach yet, said: the sessions a
    first load left to read for meaning after its search index, until a catch-up reads them (one
    killed half-way left them unsaid)."""
    if mode == "words" and not (q.file or q.cmd or q.error):
        return []
    unread = len(left_for_index(conn))
    if not unread:
        return []
    sessions = "1 session" if unread == 1 else f"{unread} sessions"
    return [
        f"{sessions} not read for meaning yet (a first load reads them after its search index): search "
        "by meaning and file:, cmd:, error: do not reach them until `threadloom index` or the next ingest"
    ]


def _turns_of(conn: sqlite3.Connection, entry_ids: list[int]) -> dict[int, str]:
    rows = conn.execute(
        "SELECT id, turn_id FROM entries WHERE id IN (SELECT value FROM json_each(?)) AND turn_id IS NOT NULL",
        (orjson.dumps(entry_ids).decode(),),
    )
    return {r[0]: r[1] for r in rows}


def _fuse(
    conn: sqlite3.Connection,
    word_hits: list[Hit],
    meaning: list[tuple[TurnKey, float]],
    limit: int,
    *,
    strict: int | None = None,
) -> tuple[list[Hit], int]:
    """Reciprocal rank fusion by turn: a turn's best message for the words, its prompt for the
    meaning. The word hits past `strict` had only some of the words: they count half. Returns the
    best `limit` and how many turns were ranked."""
    turn_of = _turns_of(conn, [h.entry_id for h in word_hits])
    scores: dict[TurnKey, float] = {}
    best_hit: dict[TurnKey, Hit] = {}
    strict = len(word_hits) if strict is None else strict
    for rank, hit in enumerate(word_hits):
        turn = turn_of.get(hit.entry_id)
        key = (hit.session_id, turn) if turn else ("", f"entry:{hit.entry_id}")
        if key not in best_hit:
            best_hit[key] = hit
            weight = 1.0 if rank < strict else LOOSE_WEIGHT
            scores[key] = scores.get(key, 0.0) + weight / (RRF_K + rank)
    meant = {episode for episode, _ in meaning}
    for rank, (episode, _) in enumerate(meaning):
        scores[episode] = scores.get(episode, 0.0) + 1.0 / (RRF_K + rank)
    order = sorted(scores, key=lambda k: -scores[k])[:limit]
    missing = [k for k in order if k not in best_hit]
    by_meaning = {
        (h.session_id, h.turn_id or ""): h for h in _meaning_hits(conn, [(k, 0.0) for k in missing])
    }
    top = max(scores.values(), default=1.0) or 1.0
    hits = []
    for key in order:
        found = best_hit.get(key) or by_meaning.get(key)
        if found is None:
            continue
        found.turn_id = key[1] if key[0] else None
        found.why = "words + meaning" if key in best_hit and key in meant else found.why
        found.score = round(100 * scores[key] / top, 2)
        hits.append(found)
    return hits, len(scores)


def _meaning_hits(conn: sqlite3.Connection, found: list[tuple[TurnKey, float]]) -> list[Hit]:
    """Hits for episodes found by meaning: each opens at its turn's prompt."""
    if not found:
        return []
    cosine = dict(found)
    rows = conn.execute(
        "SELECT ep.turn_id, ep.session_id, coalesce(ep.prompt_entry, ep.answer_entry) AS entry_id, "
        "ep.started_at, ep.first_seq, s.source, s.project, "
        f"{title_sql('s.')} AS title, e.uuid, e.role, e.content, e.seq "
        "FROM episodes ep JOIN agent_sessions s ON s.id = ep.session_id "
        "LEFT JOIN entries e ON e.id = coalesce(ep.prompt_entry, ep.answer_entry) "
        "WHERE (ep.session_id, ep.turn_id) IN "
        "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))",
        (orjson.dumps(list(cosine)).decode(),),
    ).fetchall()
    by_turn = {(r[1], r[0]): r for r in rows}
    hits = []
    for key, score in found:
        row = by_turn.get(key)
        turn = key[1]
        if row is None or row[2] is None:
            continue
        _, sid, entry_id, started, first_seq, agent, project, title, uuid, role, content, seq = row
        hits.append(
            Hit(
                entry_id=entry_id,
                session_id=sid,
                uuid=uuid,
                agent=agent,
                project=project,
                session_title=title,
                role=role,
                timestamp=started,
                score=round(100 * max(score, 0.0), 2),
                # as a word hit's: the IDE's and the agents' markup read, cut between words with …
                snippet=search.make_snippet(content or "", None)[0],
                highlights=[],
                field="content",
                seq=seq if seq is not None else first_seq,
                turn_id=turn,
                why="meaning",
            )
        )
    return hits


def attach_main(conn: sqlite3.Connection, hits: list[Hit]) -> None:
    """Give each hit in a subagent its main session (the first above it that is not a subagent)
    and that one's title, and each hit in a fork the session it was forked from (`relation` says
    which: a fork is a session of its own, which the label "subagent of" misnamed)."""
    wanted = {h.session_id for h in hits}
    if not wanted:
        return
    ids = orjson.dumps(sorted(wanted)).decode()
    parents = dict(
        conn.execute(
            "WITH RECURSIVE up(id, top, depth) AS ("
            "  SELECT id, parent_session_id, 0 FROM agent_sessions "
            "  WHERE id IN (SELECT value FROM json_each(?)) AND is_subagent = 1 "
            "  UNION ALL SELECT up.id, s.parent_session_id, up.depth + 1 FROM up "
            "  JOIN agent_sessions s ON s.id = up.top "
            "  WHERE s.is_subagent = 1 AND s.parent_session_id IS NOT NULL AND up.depth < 20"
            ") SELECT id, top FROM up WHERE top IS NOT NULL ORDER BY depth",
            (ids,),
        ).fetchall()
    )
    sources = dict(
        conn.execute(
            "SELECT id, coalesce(forked_from_session_id, parent_session_id) FROM agent_sessions "
            "WHERE id IN (SELECT value FROM json_each(?)) AND is_subagent = 0 AND kind = 'fork' "
            "AND coalesce(forked_from_session_id, parent_session_id) IS NOT NULL",
            (ids,),
        ).fetchall()
    )
    if not parents and not sources:
        return
    titles = dict(
        conn.execute(
            f"SELECT s.id, {title_sql('s.')} FROM agent_sessions s WHERE s.id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(sorted({*parents.values(), *sources.values()})).decode(),),
        ).fetchall()
    )
    for hit in hits:
        top, relation = parents.get(hit.session_id), "subagent"
        if top is None:
            top, relation = sources.get(hit.session_id), "fork"
        if top is not None:
            hit.main_session_id, hit.main_title, hit.relation = top, titles.get(top), relation


# ------------------------------------------------------------------------------------- similar


class NotEmbedded(LookupError):
    """The message or turn asked about has no episode or vector yet."""


def turn_of_ref(conn: sqlite3.Connection, ref: str) -> str:
    """The turn a reference names: a turn id, an entry id, a message uuid, or SESSION#n."""
    return turn_in_session(conn, ref)[0]


def turn_in_session(conn: sqlite3.Connection, ref: str) -> tuple[str, str]:
    """(turn id, session id) of a reference: SESSION#n (its message #n), an entry id, a turn id or a
    message uuid. A turn id or uuid that sessions other than one and its forks share (a copied
    session folder) is refused naming each, as `fork` does: the first holding it was taken."""
    cited = cited_message(conn, ref)
    if cited is not None:
        session_ref, number = cited
        session = resolve_session(conn, session_ref)
        row = conn.execute(
            "SELECT turn_id FROM entries WHERE session_id = ? AND seq = ?", (session.id, number)
        ).fetchone()
        if row is None:
            raise NotEmbedded(
                f"session {session.id} has no message #{number} (`threadloom show` numbers them)"
            )
        return _in_a_turn(ref, row[0]), session.id
    if ref.isdigit():
        row = conn.execute("SELECT turn_id, session_id FROM entries WHERE id = ?", (int(ref),)).fetchone()
        if row is not None and row[1] is not None:
            return _in_a_turn(ref, row[0]), row[1]
    holders = dict(  # of the sessions holding it, each with its first entry id there, the first first
        conn.execute(
            "SELECT e.session_id, min(e.id) FROM episodes ep JOIN entries e ON e.session_id = ep.session_id "
            "AND e.turn_id = ep.turn_id WHERE ep.turn_id = ? GROUP BY e.session_id ORDER BY min(e.id)",
            (ref,),
        ).fetchall()
    )
    turn = ref if holders else None
    if not holders:
        rows = conn.execute(
            "SELECT session_id, min(id), turn_id FROM entries WHERE uuid = ? AND dup_of IS NULL "
            "AND session_id IS NOT NULL GROUP BY session_id ORDER BY min(id) LIMIT 50",
            (ref,),
        ).fetchall()
        holders = {sid: eid for sid, eid, _ in rows}
        turn = _in_a_turn(ref, rows[0][2]) if rows else None
    if turn is None:
        raise NotEmbedded(
            f"no message or turn {ref!r}: give an entry id, a message uuid, a turn id or SESSION#n"
        )
    named = unrelated_holders(conn, holders)
    if named:
        raise NotEmbedded(f"{ref!r} is in several sessions: give its entry id instead: {named}")
    return turn, next(iter(holders))


def _in_a_turn(ref: str, turn_id: str | None) -> str:
    """The turn a record is in; a summary or a record of no conversation is in none."""
    if turn_id is None:
        raise NotEmbedded(f"{ref!r} is in no turn (a summary, a record of no conversation)")
    return turn_id


def family_of(conn: sqlite3.Connection, session_id: str) -> set[str]:
    """A session with its main session and every subagent under that one, however deep."""
    rows = conn.execute(
        "WITH RECURSIVE up(id, parent, depth) AS ("
        "  SELECT id, parent_session_id, 0 FROM agent_sessions WHERE id = ?"
        "  UNION ALL SELECT s.id, s.parent_session_id, up.depth + 1 FROM up "
        "  JOIN agent_sessions s ON s.id = up.parent WHERE up.depth < 20"
        "), root(id) AS (SELECT id FROM up ORDER BY depth DESC LIMIT 1), "
        "down(id, depth) AS (SELECT id, 0 FROM root UNION ALL SELECT s.id, down.depth + 1 FROM down "
        "  JOIN agent_sessions s ON s.parent_session_id = down.id WHERE down.depth < 20) "
        "SELECT id FROM down",
        (session_id,),
    ).fetchall()
    return {session_id} | {r[0] for r in rows}


NOTHING_SIMILAR = "no turn of another session is like it"  # what `similar` finding none means


def similar(conn: sqlite3.Connection, ref: str, *, limit: int = 10) -> list[Hit]:
    """The turns of other sessions most like the turn of `ref`: have I solved this before?"""
    turn, session = turn_in_session(conn, ref)
    row = conn.execute(
        "SELECT session_id, vector FROM episodes WHERE turn_id = ? AND session_id = ?", (turn, session)
    ).fetchone()
    if row is not None and row[1] is None:  # left for later by a small ingest: embedded here
        with contextlib.suppress(embed.EmbeddingUnavailable):
            row = (row[0], vectors_of(conn, [turn]).get(turn))
    if row is None or row[1] is None:
        raise NotEmbedded(f"turn {turn} is not embedded yet: run `threadloom ingest`")
    session_id, blob = row
    found = nearest(
        conn, embed.from_bytes([blob])[0], limit=limit, exclude_sessions=family_of(conn, session_id)
    )
    hits = _meaning_hits(conn, found)
    attach_main(conn, hits)
    return hits


# ------------------------------------------------------------------------------ fork context


# Tokens are counted as characters ÷ 4: the usual rule of thumb for English prose and code with
# the agents' tokenizers, close enough to keep a context within its budget without a tokenizer.
CHARS_PER_TOKEN = 4
ITEM_PROMPT = 1200
ITEM_ANSWER = 1500


def tokens_of(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


@dataclass
class ContextTurn:
    """One past turn as the context hands it on."""

    turn_id: str
    session_id: str
    main_session_id: str | None
    agent: str
    project: str | None
    when: int | None
    prompt: str
    answer: str
    files: list[str]
    commands: list[str]
    errors: list[str]
    why: str
    reference: str  # what a person types to read it: `threadloom show SESSION` and the message's #seq
    entry_id: int | None
    tokens: int = 0


@dataclass
class Context:
    query: str
    budget: int
    turns: list[ContextTurn]
    tokens: int
    left_out: int  # relevant turns that did not fit the budget
    problems: list[str]

    def as_text(self) -> str:
        """The context as the first message of a new session (Markdown)."""
        from ..base.text import moment

        lines = [
            f"Context from past sessions (threadloom), for: {self.query}",
            "",
            "These are earlier turns that look relevant; check them against the code as it is now."
            if self.turns
            else "No earlier turn looks relevant to this.",
        ]
        for i, t in enumerate(self.turns, 1):
            lines += ["", f"## {i}. {moment(t.when)} · {t.agent} · {t.project or '?'} · {t.reference}", ""]
            lines += ["Asked:", t.prompt, ""]
            if t.answer:
                lines += ["Answer:", t.answer, ""]
            if t.files:
                lines.append("Files: " + ", ".join(t.files))
            if t.commands:
                lines.append("Ran: " + " ; ".join(t.commands))
            if t.errors:
                lines.append("Errors: " + " ; ".join(t.errors))
        if self.left_out:
            lines += [
                "",
                f"({self.left_out} more relevant turns left out to keep within {self.budget} tokens)",
            ]
        return "\n".join(lines).rstrip() + "\n"


def build_context(
    conn: sqlite3.Connection,
    query: str,
    *,
    budget: int = 4000,
    project: str | None = None,
    since: str | None = None,
    turn_ids: list[str] | None = None,
    candidates: int = 20,
) -> Context:
    """The most relevant past turns for `query` (or the chosen `turn_ids`), packed within `budget`
    tokens, best first: each with its session, date, project, prompt, final answer, the files and
    commands that mattered, and a reference `threadloom show` opens."""
    problems: list[str] = []
    if turn_ids is None:
        text = query
        if project:
            text += f' project:"{project}"'
        if since:
            text += f" after:{since}"
        parsed = parse_query(text, conn=conn)
        problems += parsed.unusable_filters
        result = search_recall(conn, text, mode="hybrid", limit=candidates * 3)
        problems += [p for p in result.problems if p not in problems]
        turn_of = _turns_of(conn, [h.entry_id for h in result.hits if h.turn_id is None])
        chosen: list[tuple[str, str]] = []
        for hit in result.hits:
            turn = hit.turn_id or turn_of.get(hit.entry_id)
            if turn and turn not in {t for t, _ in chosen}:
                chosen.append((turn, hit.why))
        chosen = chosen[:candidates]
    else:
        chosen = [(t, "chosen") for t in turn_ids]
    from .episodes import read_turns

    episodes = read_turns(conn, [t for t, _ in chosen])
    if turn_ids is not None:  # turns picked by hand: told in the order they happened
        chosen.sort(key=lambda c: (episodes[c[0]].started_at or 0) if c[0] in episodes else 0)
    sessions = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT id, source, project, parent_session_id FROM agent_sessions WHERE id IN "
            "(SELECT value FROM json_each(?))",
            (orjson.dumps(sorted({e.session_id for e in episodes.values()})).decode(),),
        )
    }
    seqs = dict(
        conn.execute(
            "SELECT id, seq FROM entries WHERE id IN (SELECT value FROM json_each(?))",
            (orjson.dumps([e.prompt_entry for e in episodes.values() if e.prompt_entry]).decode(),),
        ).fetchall()
    )
    used = tokens_of(f"Context from past sessions (threadloom), for: {query}\n\n") + 20
    packed: list[ContextTurn] = []
    left_out = 0
    for turn, why in chosen:
        ep = episodes.get(turn)
        if ep is None:
            continue
        agent, proj, parent = sessions.get(ep.session_id, ("?", None, None))
        seq = seqs.get(ep.prompt_entry) if ep.prompt_entry else None
        item = ContextTurn(
            turn_id=turn,
            session_id=ep.session_id,
            main_session_id=parent,
            agent=agent,
            project=proj,
            when=ep.started_at,
            prompt=_cut(ep.prompt, ITEM_PROMPT),
            answer=_cut(ep.answer, ITEM_ANSWER),
            files=ep.files[:8],
            commands=[c[:160] for c in ep.commands[:5]],
            errors=[e[:160] for e in ep.errors[:3]],
            why=why,
            reference=show_command(ep.session_id, seq),
            entry_id=ep.prompt_entry,
        )
        item.tokens = tokens_of(_item_text(item)) + 12
        if used + item.tokens > budget:
            # a long answer that does not fit: try the turn with its answer cut shorter
            room = (budget - used - tokens_of(_item_text(item, answer=False)) - 12) * CHARS_PER_TOKEN
            if room >= 200:
                item.answer = _cut(item.answer, room)
                item.tokens = tokens_of(_item_text(item)) + 12
            if used + item.tokens > budget:
                left_out += 1
                continue
        used += item.tokens
        packed.append(item)
    return Context(query, budget, packed, used, left_out, problems)


def _item_text(t: ContextTurn, *, answer: bool = True) -> str:
    return "\n".join(
        [
            t.reference,
            t.prompt,
            t.answer if answer else "",
            ", ".join(t.files),
            " ; ".join(t.commands),
            " ; ".join(t.errors),
        ]
    )


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit * 0.6 else cut) + "…"


# ------------------------------------------------------------------- a new session from context
