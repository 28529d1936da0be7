"""Episodes: each turn of a session (a prompt and everything the agent did for it) as the unit people
remember, with the facets that find it again (seed 003's episodes over `agent_turns`).

An episode row holds what its turn touched (files read or changed, commands run, errors met, tools
and subagents used) and the turn's place in its session; the prompt and the final answer stay in
the records and are read again when the episode is embedded or shown, so the archive does not hold
them twice. Kept up to date per session from where the last pass left it: the last episode of a
session (its turn may still be growing) and any new ones are built again, the rest stay; a replay
of a session drops its episodes (`core.store.derived.CHECKPOINTS`) and they are built again whole.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from ..read.query import ToolCall

# what one episode keeps of each facet: enough to find it, never a transcript
MAX_FILES = 40
MAX_COMMANDS = 20
MAX_ERRORS = 8
MAX_ITEM = 240
PROMPT_CHARS = 2000
ANSWER_CHARS = 2000

# the input fields that name a file, across the agents' tools
PATH_KEYS = (
    "file_path",
    "path",
    "notebook_path",
    "filePath",
    "absolute_path",
    "absolutePath",
    "target_file",
    "targetFile",
    "filename",
)
PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)


@dataclass
class Episode:
    """One turn as an episode: its facets, and (when read for embedding or showing) its words."""

    turn_id: str
    session_id: str
    first_seq: int
    last_seq: int
    started_at: int | None = None
    prompt_entry: int | None = None
    answer_entry: int | None = None
    prompt: str = ""
    answer: str = ""
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    subagents: list[str] = field(default_factory=list)


# How much of an episode's vector is its prompt's, the rest being what the agent did (its answer,
# files, commands, errors, subagents). Averaged token embeddings blur as a text grows, so the two are
# embedded apart and mixed: on bench/recall's queries the prompt alone found 75 % in the first ten,
# prompt and answer as one text 54 %, mixed 0.7 / 0.3 76 % with the outcome still counted.
PROMPT_WEIGHT = 0.7


# What is embedded of a prompt and of an answer: tokenizing is most of embedding's cost, and an
# average of token vectors says little more after its first hundred words (bench/recall, hit@10 of
# meaning / hybrid: 2,000 and 2,000 characters 0.76 / 0.82; 1,000 and 600 0.73 / 0.82; 700 and 400
# 0.76 / 0.86; 500 and 300 0.75 / 0.86), and the 100 MB bench archive's turns embed in a third of the time
EMBED_PROMPT_CHARS = 700
EMBED_ANSWER_CHARS = 400


def texts_of(episode: Episode) -> tuple[str, str]:
    """What is embedded for an episode: its prompt, and the words that say what was done."""
    return episode.prompt[:EMBED_PROMPT_CHARS], text_of(
        episode, with_prompt=False, answer_chars=EMBED_ANSWER_CHARS
    )


def text_of(episode: Episode, *, with_prompt: bool = True, answer_chars: int = ANSWER_CHARS) -> str:
    """An episode's words, most telling first: prompt, final answer, files, commands, errors, subagents."""
    parts = [episode.prompt[:PROMPT_CHARS] if with_prompt else ""]
    if episode.answer:
        parts.append(episode.answer[:answer_chars])
    if episode.files:
        parts.append("files: " + " ".join(_base(p) for p in episode.files[:12]))
    if episode.commands:
        parts.append("ran: " + " ; ".join(c[:120] for c in episode.commands[:6]))
    if episode.errors:
        parts.append("errors: " + " ; ".join(e[:160] for e in episode.errors[:3]))
    if episode.subagents:
        parts.append("subagents: " + " ; ".join(episode.subagents[:4]))
    return "\n".join(p for p in parts if p)


def _base(path: str) -> str:
    """A path as its last two parts: the words a person remembers of it."""
    bits = [b for b in re.split(r"[\\/]", path) if b]
    return "/".join(bits[-2:]) if bits else path


# ------------------------------------------------------------------------------------ building


def update(conn: sqlite3.Connection, sessions: Iterable[str]) -> list[Episode]:
    """Inside the caller's transaction: bring the episodes of `sessions` up to date (their last turn
    and any after it). Returns the episodes written, with their words (to be embedded)."""
    written: list[Episode] = []
    for session_id in sessions:
        start = _start_of(conn, session_id)
        episodes = list(read_episodes(conn, session_id, from_seq=start))
        _write(conn, session_id, start, episodes)
        written += episodes
    return written


def _start_of(conn: sqlite3.Connection, session_id: str) -> int:
    """The seq a session's episodes are built again from: its last one's (its turn may still grow)."""
    row = conn.execute("SELECT max(first_seq) FROM episodes WHERE session_id = ?", (session_id,)).fetchone()
    return int(row[0]) if row[0] is not None else -1


def _write(conn: sqlite3.Connection, session_id: str, start: int, episodes: list[Episode]) -> None:
    """Inside the caller's transaction: a session's episodes from `start` on replaced by `episodes`."""
    conn.execute("DELETE FROM episodes WHERE session_id = ? AND first_seq >= ?", (session_id, start))
    # a turn that an append made start earlier than the last pass saw (never, for now) stays one row
    conn.executemany(
        "DELETE FROM episodes WHERE turn_id = ? AND session_id = ?",
        [(e.turn_id, e.session_id) for e in episodes],
    )
    conn.executemany(
        "INSERT INTO episodes (turn_id, session_id, first_seq, last_seq, started_at, prompt_entry, "
        "answer_entry, files, commands, errors, tools, subagents, vector) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
        [
            (
                e.turn_id,
                e.session_id,
                e.first_seq,
                e.last_seq,
                e.started_at,
                e.prompt_entry,
                e.answer_entry,
                "\n".join(e.files),
                "\n".join(e.commands),
                "\n".join(e.errors),
                "\n".join(e.tools),
                "\n".join(e.subagents),
            )
            for e in episodes
        ],
    )


def read_episodes(
    conn: sqlite3.Connection,
    session_id: str,
    *,
    from_seq: int = -1,
    upto_seq: int | None = None,
) -> Iterator[Episode]:
    """The episodes of a session's turns from `from_seq` on, with their words, read from the records."""
    from ..base.markup import plain  # here: a run with no new turns does not load the markup's parser

    upper = upto_seq if upto_seq is not None else 1 << 62
    by_turn: dict[str, Episode] = {}
    for eid, seq, turn_id, role, content, is_meta, ts in conn.execute(
        "SELECT id, seq, turn_id, role, content, is_meta, timestamp FROM entries "
        "WHERE session_id = ? AND seq >= ? AND seq <= ? AND dup_of IS NULL ORDER BY seq",
        (session_id, from_seq, upper),
    ):
        if turn_id is None:
            continue
        ep = by_turn.get(turn_id)
        if ep is None:
            ep = by_turn[turn_id] = Episode(turn_id, session_id, seq, seq, ts)
        ep.last_seq = seq
        if ep.started_at is None:
            ep.started_at = ts
        if not content:
            continue
        if role == "user" and not is_meta and ep.prompt_entry is None:
            text = plain(content).strip()
            if text:
                ep.prompt_entry, ep.prompt = eid, text[: PROMPT_CHARS * 2]
        elif role == "assistant":
            ep.answer_entry, ep.answer = eid, content[: ANSWER_CHARS * 2]
    if not by_turn:
        return
    _add_calls(conn, session_id, by_turn)
    yield from by_turn.values()


def read_turns(conn: sqlite3.Connection, turn_ids: list[str]) -> dict[str, Episode]:
    """The episodes of these turns, with their words (for embedding, context and showing)."""
    found: dict[str, Episode] = {}
    rows = conn.execute(
        "SELECT turn_id, session_id, first_seq, last_seq FROM episodes WHERE turn_id IN "
        "(SELECT value FROM json_each(?))",
        (orjson.dumps(turn_ids).decode(),),
    ).fetchall()
    for turn_id, session_id, first_seq, last_seq in rows:
        for ep in read_episodes(conn, session_id, from_seq=first_seq, upto_seq=last_seq):
            if ep.turn_id == turn_id:
                found[turn_id] = ep
    return found


def _add_calls(conn: sqlite3.Connection, session_id: str, by_turn: dict[str, Episode]) -> None:
    """The files, commands, errors, tools and subagents of the turns' tool calls."""
    from ..read.query import ToolCall, fill_tool_io  # noqa: F811 (at run time)

    turn_list = orjson.dumps(list(by_turn)).decode()
    calls: list[tuple[str, ToolCall]] = []
    for cid, name, params, result, status, child, eid, rid, turn_id in conn.execute(
        "SELECT id, tool_name, params_json, result_json, status, child_session_id, entry_id, "
        "result_entry_id, turn_id FROM agent_tool_calls WHERE session_id = ? AND turn_id IN "
        "(SELECT value FROM json_each(?))",
        (session_id, turn_list),
    ):
        calls.append((turn_id, ToolCall(cid, name, params, result, status, child, None, None, rid, eid)))
    agent = _agent_of(conn, session_id)
    for _, call in calls:
        call.agent = agent  # whose adapter says what each call did
    wanted = [c for _, c in calls if _wants_io(agent, c)]
    inputs = _quick_inputs(conn, agent, wanted)
    fill_tool_io(
        conn, [c for c in wanted if c.id not in inputs or (c.status == "failed" and c.result_json is None)]
    )
    children = [c.child_session_id for _, c in calls if c.child_session_id]
    tasks: dict[str, str] = {}
    if children:
        for sid, agent_type, task in conn.execute(
            "SELECT id, agent_type, task_description FROM agent_sessions WHERE id IN "
            "(SELECT value FROM json_each(?))",
            (orjson.dumps(children).decode(),),
        ):
            tasks[sid] = " ".join(x for x in (agent_type, task) if x)
    for turn_id, call in calls:
        ep = by_turn.get(turn_id)
        if ep is None:
            continue
        if call.name not in ep.tools:
            ep.tools.append(call.name)
        params = (
            inputs[call.id] if call.id in inputs and call.params_json is None else _loads(call.params_json)
        )
        for path in _paths(params):
            _add(ep.files, path, MAX_FILES)
        command = _command(params)
        if command:
            _add(ep.commands, command, MAX_COMMANDS)
        if call.status == "failed":
            error = _first_line(_result_text(call.result_json))
            if error:
                _add(ep.errors, error, MAX_ERRORS)
        if call.child_session_id:
            _add(ep.subagents, tasks.get(call.child_session_id) or call.name, MAX_COMMANDS)
    for path, turn_id in conn.execute(
        "SELECT path, turn_id FROM agent_file_changes WHERE session_id = ? AND turn_id IN "
        "(SELECT value FROM json_each(?))",
        (session_id, turn_list),
    ):
        ep = by_turn.get(turn_id)
        if ep is not None:
            _add(ep.files, path, MAX_FILES)


# the kinds of call whose input names a file or a command (core.adapters.GROUPS)
FACET_GROUPS = frozenset({"edit", "write", "patch", "read", "shell"})


def _wants_io(agent: str | None, call: ToolCall) -> bool:
    """Whether a call's input (or result) is worth reading again from its record for the facets: a
    failed call (its error), one that reads, writes or runs something; any call of an agent whose
    adapter does not group its tools. Reading a record again is most of an episode's cost."""
    from ..adapters import adapter_for, tool_group

    if call.status == "failed":
        return True
    group = tool_group(agent, call.name)
    if group is not None:
        return group in FACET_GROUPS
    try:
        adapter = adapter_for(agent) if agent else None
    except KeyError:
        return True
    return adapter is None or not (adapter.read_tools or adapter.shell_tools or adapter.edit_tools)


def _quick_inputs(conn: sqlite3.Connection, agent: str | None, calls: list[ToolCall]) -> dict[str, Any]:
    """The inputs of calls the ledger kept no copy of, read straight from their records' bytes where
    the agent's adapter can (`Adapter.tool_inputs`): normalizing each record again costs ten times more."""
    from ..adapters import adapter_for

    entries = sorted({c.entry_id for c in calls if c.params_json is None and c.entry_id is not None})
    if not entries or agent is None:
        return {}
    try:
        adapter = adapter_for(agent)
    except KeyError:
        return {}
    found: dict[str, Any] = {}
    for _eid, raw in conn.execute(
        "SELECT id, raw FROM entries WHERE id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(entries).decode(),),
    ):
        inputs = adapter.tool_inputs(bytes(raw))
        if inputs is None:
            continue
        found.update(inputs)
    return found


def _agent_of(conn: sqlite3.Connection, session_id: str) -> str | None:
    row = conn.execute("SELECT source FROM agent_sessions WHERE id = ?", (session_id,)).fetchone()
    return row[0] if row else None


def _add(items: list[str], value: str, limit: int) -> None:
    value = value.strip()[:MAX_ITEM]
    if value and value not in items and len(items) < limit:
        items.append(value.replace("\n", " "))


def _loads(text: str | None) -> object:
    if not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _paths(params: object) -> list[str]:
    if not isinstance(params, dict):
        return []
    found = [v for k in PATH_KEYS if isinstance(v := params.get(k), str) and v]
    for key in ("input", "patch"):  # Codex's apply_patch carries its files in the patch text
        value = params.get(key)
        if isinstance(value, str) and "*** " in value:
            found.extend(m.strip() for m in PATCH_FILE.findall(value))
    edits = params.get("edits")
    if isinstance(edits, list):
        found.extend(v for e in edits if isinstance(e, dict) and isinstance(v := e.get("file_path"), str))
    return found


def _command(params: object) -> str | None:
    if not isinstance(params, dict):
        return None
    command = params.get("command") or params.get("cmd")
    if isinstance(command, list) and all(isinstance(w, str) for w in command):
        words = list(command)
        if len(words) >= 3 and words[0].endswith("sh") and words[1] in ("-lc", "-c"):
            return " ".join(words[2:])
        return " ".join(words)
    return command if isinstance(command, str) else None


def _result_text(result_json: str | None) -> str:
    value = _loads(result_json)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(
            b.get("text", "") if isinstance(b, dict) else b if isinstance(b, str) else "" for b in value
        )
    if isinstance(value, dict):
        for key in ("error", "stderr", "output", "content", "text"):
            inner = value.get(key)
            if isinstance(inner, str) and inner.strip():
                return inner
    return result_json or ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("<"):
            return line[:MAX_ITEM]
    return text.strip()[:MAX_ITEM]


# ------------------------------------------------------------------------------------ keeping

EPISODES_VERSION = "1"  # bump when what an episode holds changes: every session's are built again
EPISODES_VERSION_KEY = "episodes_version"
SESSIONS_PER_BATCH = 200


def refresh(
    conn: sqlite3.Connection,
    sessions: set[str],
    on_progress: Callable[[int, int], None] | None = None,
) -> int:
    """The episodes of `sessions` (of every session, once, when built by an older EPISODES_VERSION),
    a batch of sessions per transaction. Returns how many sessions were brought up to date."""
    from ..store.sql import get_meta, set_meta, transaction

    whole = get_meta(conn, EPISODES_VERSION_KEY) != EPISODES_VERSION
    if whole:
        sessions = {r[0] for r in conn.execute("SELECT id FROM agent_sessions")}
    ordered = sorted(sessions)
    if ordered:
        _clear_other_models(conn)
    for start in range(0, len(ordered), SESSIONS_PER_BATCH):
        with transaction(conn):
            some = ordered[start : start + SESSIONS_PER_BATCH]
            written = update(conn, some)
            conn.executemany(UNMARK, [(s,) for s in some])  # unmarked where done (core.store.derived)
            if written and _embed_now(conn, len(written)):  # from the words just read, in this transaction
                _store_vectors(conn, written)
            elif written:  # left for later: a search by meaning embeds them in memory meanwhile
                set_meta(conn, GENERATION_KEY, str(time.time_ns()))
        if on_progress is not None:
            on_progress(min(start + SESSIONS_PER_BATCH, len(ordered)), len(ordered))
    if whole:
        with transaction(conn):
            set_meta(conn, EPISODES_VERSION_KEY, EPISODES_VERSION)
            conn.execute("DELETE FROM derived_pending WHERE kind = 'episodes'")
    return len(ordered)


# A first load reads the sessions' turns for search by meaning with its search index, after the
# sessions are browsable (`leave_for_index`): the sessions whose episodes wait are marked in
# derived_pending, in the transaction of the pass that left them, and unmarked where they are built.
UNMARK = "DELETE FROM derived_pending WHERE kind = 'episodes' AND session_id = ?"


def leave_for_index(conn: sqlite3.Connection, sessions: set[str]) -> None:
    """Mark `sessions` for the episodes pass that follows the search index (`left_for_index`)."""
    from ..store.sql import transaction

    with transaction(conn):
        conn.executemany(
            "INSERT OR IGNORE INTO derived_pending (kind, session_id) VALUES ('episodes', ?)",
            [(s,) for s in sorted(sessions)],
        )


def left_for_index(conn: sqlite3.Connection) -> set[str]:
    """The sessions whose episodes a first load left for after its search index."""
    return {r[0] for r in conn.execute("SELECT session_id FROM derived_pending WHERE kind = 'episodes'")}


# ----------------------------------------------------------------------------------- embedding

# episodes embedded a call: their encodings and float32 rows are what embedding holds at once
# (128 rather than 512: ~5 MB less of a cold ingest's peak)
EMBED_BATCH = 128

# A pass that changes fewer episodes than EMBED_NOW_FROM leaves their vectors for later rather than
# load the model for them (numpy and the tokenizer: ~0.26 s, half of what one line appended to a
# session cost): an agent appending a turn, the TUI following a session. They are stored by the next
# pass that loads the model anyway, or once EMBED_LATER_MAX wait; meanwhile a search by meaning
# embeds them in memory (`vectors_of`, core.insight.recall), so it finds them all the same.
EMBED_NOW_FROM = 16
EMBED_LATER_MAX = 64


def _embed_now(conn: sqlite3.Connection, written: int) -> bool:
    """Whether the episodes just written are embedded now (see EMBED_NOW_FROM); False without a
    model (a broken install: words still work)."""
    from ..base import embed

    if _left_for_later(written, lambda: _waiting(conn)):
        return False
    return embed.available()


def _left_for_later(written: int, waiting: Callable[[], int]) -> bool:
    """Whether vectors wait for a pass that has the model loaded (see EMBED_NOW_FROM): few written
    now, the model not loaded in this process, and fewer than EMBED_LATER_MAX waiting."""
    from ..base import embed

    return written < EMBED_NOW_FROM and not embed.loaded() and waiting() < EMBED_LATER_MAX


def _waiting(conn: sqlite3.Connection) -> int:
    count: int = conn.execute("SELECT count(*) FROM episodes WHERE vector IS NULL").fetchone()[0]
    return count


def _embedding_ready(conn: sqlite3.Connection) -> bool:
    """Whether episodes can be embedded now; vectors of another model are cleared first (all are
    computed again). False without a model (a broken install: words still work). The model is
    loaded here, so callers ask only when they have something to embed."""
    from ..base import embed

    _clear_other_models(conn)
    return embed.available()


def _clear_other_models(conn: sqlite3.Connection) -> None:
    """Vectors computed by another model are cleared (they are all computed again); cheap otherwise."""
    from ..base import embed
    from ..store.sql import get_meta, set_meta, transaction

    if get_meta(conn, embed.MODEL_KEY) != embed.MODEL:
        with transaction(conn):
            conn.execute("UPDATE episodes SET vector = NULL WHERE vector IS NOT NULL")
            set_meta(conn, embed.MODEL_KEY, embed.MODEL)


def _store_vectors(
    conn: sqlite3.Connection, episodes: list[Episode], known: dict[int, bytes] | None = None
) -> None:
    """Inside the caller's transaction: embed the episodes (prompt and deeds mixed) and store them;
    `known`: vectors computed already (`ReadAhead`), by the episode's `id()` (two sessions' turns
    can share a turn id: a fork's copies)."""
    from ..store.sql import set_meta

    if not episodes:
        return
    known = known or {}
    # EMBED_BATCH at a time: the tokenizer's encodings of a first load's 200 sessions at once
    # took ~100 MB (a cold ingest's peak); each vector is its own text's, whatever the slices
    for start in range(0, len(episodes), EMBED_BATCH):
        some = episodes[start : start + EMBED_BATCH]
        missing = [ep for ep in some if id(ep) not in known]
        computed = dict(zip(map(id, missing), _vectors(missing), strict=True))
        conn.executemany(
            "UPDATE episodes SET vector = ? WHERE turn_id = ? AND session_id = ?",
            [
                (known[id(ep)] if id(ep) in known else computed[id(ep)], ep.turn_id, ep.session_id)
                for ep in some
            ],
        )
    set_meta(conn, GENERATION_KEY, str(time.time_ns()))


# ------------------------------------------------------------------------ read ahead of the index

# A first load's episodes are read while its search index is built (`ReadAhead`) from this many
# sessions on: fewer take too little time for the two to overlap.
READ_AHEAD_MIN_SESSIONS = 50
# Batches read ahead and not yet written, at most: each is SESSIONS_PER_BATCH sessions' rows and
# vectors (a few MB), so memory stays flat however large the archive.
READ_AHEAD_BATCHES = 4
READ_AHEAD_CACHE_KIB = 4096  # the reading thread's page cache: the writer's is apart


@dataclass
class _Read:
    """One session's episodes as read ahead, from `start` (where its stored ones said then)."""

    session_id: str
    start: int
    episodes: list[Episode]


class ReadAhead:
    """A first load's episodes read, and embedded, on a thread of their own with a connection of
    their own while this one builds the search index: the index is SQLite's work, which leaves the
    interpreter free, and reading the turns is Python's (`threadloom index` of the 100 MB bench
    archive: 2.69 -> 2.04 s). Written afterwards by `refresh_read_ahead` as `refresh` writes them,
    batch by batch, in the same order."""

    def __init__(self, path: str, sessions: set[str], whole: bool) -> None:
        import queue

        self.ordered = sorted(sessions)
        self.whole = whole  # every session's, as `refresh` reads them for a new EPISODES_VERSION
        self.ready: queue.Queue[list[_Read] | tuple[dict[int, bytes], list[_Read]] | BaseException | None]
        self.ready = queue.Queue(maxsize=READ_AHEAD_BATCHES)
        self.stopping = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(path,), name="threadloom-episodes-ahead", daemon=True
        )
        self.thread.start()

    def _run(self, path: str) -> None:
        from ..base import embed
        from ..store import db
        from ..store.sql import page_cache

        try:
            conn = db.connect(path, readonly=True)
            try:
                with page_cache(conn, READ_AHEAD_CACHE_KIB):  # one pass over the records: little to keep
                    for first in range(0, len(self.ordered), SESSIONS_PER_BATCH):
                        reads = []
                        for session_id in self.ordered[first : first + SESSIONS_PER_BATCH]:
                            if self.stopping.is_set():
                                return
                            start = _start_of(conn, session_id)
                            reads.append(
                                _Read(
                                    session_id, start, list(read_episodes(conn, session_id, from_seq=start))
                                )
                            )
                        found = [ep for r in reads for ep in r.episodes]
                        # embedded ahead where `refresh` would embed them now (see EMBED_NOW_FROM)
                        if len(found) >= EMBED_NOW_FROM and embed.available():
                            vectors: dict[int, bytes] = {}  # by the episode's id(): they travel together
                            for at in range(0, len(found), EMBED_BATCH):
                                if self.stopping.is_set():
                                    return
                                some = found[at : at + EMBED_BATCH]
                                vectors.update(zip(map(id, some), _vectors(some), strict=True))
                            for ep in found:  # embedded: their words are not needed again
                                ep.prompt = ep.answer = ""
                            self._put((vectors, reads))
                        else:
                            self._put(reads)
            finally:
                conn.close()
        except BaseException as exc:  # the writer raises it
            self._put(exc)
        else:
            self._put(None)

    def _put(self, item: list[_Read] | tuple[dict[int, bytes], list[_Read]] | BaseException | None) -> None:
        import queue

        while not self.stopping.is_set():
            try:
                self.ready.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def batches(self) -> Iterator[tuple[dict[int, bytes], list[_Read]]]:
        """Each batch as it is ready: (vectors embedded ahead, its sessions' reads)."""
        while True:
            item = self.ready.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item if isinstance(item, tuple) else ({}, item)

    def close(self) -> None:
        """Stop the thread (a cancelled or failed catch-up) and wait for it."""
        self.stopping.set()  # the thread stops at its next session, or its next batch ready
        self.thread.join()


def read_ahead(conn: sqlite3.Connection, sessions: set[str]) -> ReadAhead | None:
    """A `ReadAhead` of `sessions` when it pays (a first load's many sessions) and can be done: the
    database a file in WAL mode (a reader beside this writer), the episodes of this version."""
    from ..store.sql import get_meta

    whole = get_meta(conn, EPISODES_VERSION_KEY) != EPISODES_VERSION  # a first load's, or a new version's
    if whole:
        sessions = {r[0] for r in conn.execute("SELECT id FROM agent_sessions")}
    if len(sessions) < READ_AHEAD_MIN_SESSIONS:
        return None
    row = conn.execute("PRAGMA database_list").fetchone()
    if not row or not row[2] or conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        return None
    return ReadAhead(row[2], sessions, whole)


def refresh_read_ahead(
    conn: sqlite3.Connection, ahead: ReadAhead, on_progress: Callable[[int, int], None] | None = None
) -> int:
    """`refresh` of the sessions `ahead` read: each batch written in its own transaction, as
    `refresh` writes it. A session whose stored episodes changed since it was read (another
    session's turn that shares a turn id) is read again here."""
    from ..store.sql import set_meta, transaction

    total, done = len(ahead.ordered), 0
    if ahead.ordered:
        _clear_other_models(conn)
    for vectors, reads in ahead.batches():
        with transaction(conn):
            written: list[Episode] = []
            for read in reads:
                if _start_of(conn, read.session_id) == read.start:
                    _write(conn, read.session_id, read.start, read.episodes)
                    written += read.episodes
                else:  # read again (new episodes, embedded here): what its first reading was is dropped
                    written += update(conn, [read.session_id])
            conn.executemany(UNMARK, [(r.session_id,) for r in reads])
            if written and (vectors or _embed_now(conn, len(written))):
                _store_vectors(conn, written, vectors)
            elif written:
                set_meta(conn, GENERATION_KEY, str(time.time_ns()))
        done += len(reads)
        if on_progress is not None:
            on_progress(done, total)
    if ahead.whole:
        with transaction(conn):
            set_meta(conn, EPISODES_VERSION_KEY, EPISODES_VERSION)
            conn.execute("DELETE FROM derived_pending WHERE kind = 'episodes'")
    return done


def embed_pending(
    conn: sqlite3.Connection,
    on_progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> int:
    """Embed every episode without a vector (left for later, left by a killed run, or all of them
    when the model changed), committing each batch: an interrupted pass resumes where it stopped.
    Fewer than EMBED_LATER_MAX wait for a pass that has the model loaded. Returns how many were
    embedded; 0 without a model (a broken install: words still work)."""
    from ..base import embed
    from ..store.sql import transaction

    _clear_other_models(conn)
    total = _waiting(conn)
    if not total or _left_for_later(0, lambda: total) or not embed.available():
        return 0
    done = 0
    while cancel is None or not cancel.is_set():
        rows = conn.execute(
            "SELECT turn_id, session_id, first_seq, last_seq FROM episodes WHERE vector IS NULL "
            "ORDER BY session_id, first_seq LIMIT ?",
            (EMBED_BATCH,),
        ).fetchall()
        if not rows:
            break
        found = _episodes_of(conn, rows)
        missing = {(r[0], r[1]) for r in rows} - {(ep.turn_id, ep.session_id) for ep in found}
        with transaction(conn):
            _store_vectors(conn, found)
            # a row whose turn is no longer in the records (never, for now): a zero vector, not a loop
            conn.executemany(
                "UPDATE episodes SET vector = zeroblob(0) WHERE turn_id = ? AND session_id = ?",
                sorted(missing),
            )
        done += len(rows)
        if on_progress is not None:
            on_progress(done, total)
    return done


def _episodes_of(conn: sqlite3.Connection, rows: list[tuple[str, str, int, int]]) -> list[Episode]:
    """The episodes of (turn_id, session_id, first_seq, last_seq) rows, with their words."""
    found: list[Episode] = []
    by_session: dict[str, list[tuple[str, int, int]]] = {}
    for turn_id, session_id, first, last in rows:
        by_session.setdefault(session_id, []).append((turn_id, first, last))
    for session_id, turns in by_session.items():
        low = min(t[1] for t in turns)
        high = max(t[2] for t in turns)
        wanted = {t[0] for t in turns}
        found += [
            ep for ep in read_episodes(conn, session_id, from_seq=low, upto_seq=high) if ep.turn_id in wanted
        ]
    return found


def vectors_of(conn: sqlite3.Connection, turn_ids: list[str]) -> dict[str, bytes]:
    """Vectors computed in memory for these episodes, as they would be stored (for the few an
    ingest left for later: see EMBED_NOW_FROM). Raises EmbeddingUnavailable without a model."""
    marks = ", ".join("?" * len(turn_ids))
    rows = conn.execute(
        f"SELECT turn_id, session_id, first_seq, last_seq FROM episodes WHERE turn_id IN ({marks})", turn_ids
    ).fetchall()
    found = _episodes_of(conn, rows)
    return {ep.turn_id: vector for ep, vector in zip(found, _vectors(found), strict=True)}


def _vectors(episodes: list[Episode]) -> list[bytes]:
    """The episodes' vectors as stored: their prompt's and their deeds' embeddings, mixed."""
    from ..base import embed

    if not episodes:
        return []
    pairs = [texts_of(ep) for ep in episodes]
    prompts = embed.embed([p for p, _ in pairs])
    deeds = embed.embed([r for _, r in pairs])
    return embed.to_bytes(embed.mix(prompts, deeds, PROMPT_WEIGHT))


GENERATION_KEY = "episodes_generation"  # ledger_meta: bumped by each pass that stores vectors
