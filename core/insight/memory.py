"""Memory people and agents write into the archive (seed 004): tags, notes and bookmarks on
sessions, turns and messages; knowledge entries scoped global / project / session, each with
append-only versions; relations between sessions, turns and entries; conflicts between writers.

User data, not derived (core.store.derived.USER_DATA): no record holds it and nothing can rebuild it, so
an upgrade never empties these tables and `ingest --rebuild` carries them to the new database. It
travels as JSON (`export_memory`, `import_memory`).

Where a mark points (a target):
- a session: its id;
- a turn or a message: `<session id>#<seq>`, the message's place in its session (`#12` in `show`
  and `signals`): for a turn, the seq of its prompt. The place is what the session's files give;
  the message's uuid is kept beside it where the agent wrote one, and a rebuild that numbers the
  messages anew (a newer reader's) puts the mark back on its message by it (`follow_rebuild`).
- a knowledge entry: its id (`k-…`).

Reading never writes: a database from before memory (no tables yet, opened read-only) reads as
holding none. Every write is one transaction of the database's one writer (`writing`)."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from ..base.text import WINDOWS_FOLDER, project_folder
from ..store.memory_tables import (
    DDL,
    ENTRY_KINDS,
    MARK_KINDS,
    RELATIONS,
    SCOPES,
    TABLES,
    MemoryRefused,
    clean_tag,
    missing_table,
)
from ..store.sql import like_text, transaction

CONFLICT_SECONDS = 5.0  # two writers changing one entry within this: both versions kept, flagged
EXPORT_FORMAT = "threadloom-memory"
EXPORT_VERSION = 1


def person() -> str:
    """Who writes from the CLI and the TUI: `$THREADLOOM_AUTHOR`, else the login name."""
    env = os.environ.get("THREADLOOM_AUTHOR")
    if env:
        return env
    import getpass

    try:
        return f"person:{getpass.getuser()}"
    except (KeyError, OSError):
        return "person"


def now_ms() -> int:
    return int(time.time() * 1000)


def _rows(
    conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] | list[Any] = ()
) -> list[tuple[Any, ...]]:
    """The rows of a read; none from a database that has no memory tables yet."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return []
        raise


# ---------------------------------------------------------------------- targets


@dataclass(frozen=True, slots=True)
class Target:
    """What a mark or a relation points at (see the module's docstring)."""

    type: str
    id: str
    session_id: str | None = None
    uuid: str | None = None

    @property
    def ref(self) -> str:
        """How a person names it to `threadloom show` (a session and the message's #seq)."""
        return self.id


def session_target(conn: sqlite3.Connection, ref: str) -> Target:
    from ..read.query import resolve_session

    session_id = resolve_session(conn, ref).id
    return Target("session", session_id, session_id)


def place_target(conn: sqlite3.Connection, kind: str, session_ref: str, seq: int) -> Target:
    """A turn or a message of a session by its #seq (a turn: the one that message is in, named by
    its prompt's seq)."""
    from ..read.query import resolve_session

    if kind not in ("turn", "message"):
        raise MemoryRefused(f"not a place in a session: {kind!r} (turn or message)")
    session = resolve_session(conn, session_ref)
    row = conn.execute(
        "SELECT seq, uuid, turn_id FROM entries WHERE session_id = ? AND seq = ?", (session.id, seq)
    ).fetchone()
    if row is None:
        raise MemoryRefused(
            f"session {session.id} has no message #{seq} (`threadloom show {session.id[:13]}` numbers them)"
        )
    if kind == "turn" and row[2] is not None:
        first = conn.execute(
            "SELECT seq, uuid FROM entries WHERE session_id = ? AND turn_id = ? AND seq IS NOT NULL "
            "ORDER BY seq LIMIT 1",
            (session.id, row[2]),
        ).fetchone()
        if first is not None:
            row = (first[0], first[1], row[2])
    return Target(kind, f"{session.id}#{row[0]}", session.id, row[1])


def entry_target(conn: sqlite3.Connection, ref: str) -> Target:
    return Target("entry", resolve_entry(conn, ref).id)


def parse_target(
    conn: sqlite3.Connection, ref: str, *, turn: int | None = None, message: int | None = None
) -> Target:
    """A target from what a person types: `k-…` an entry; `SESSION#12` message 12 of a session;
    a session id (or prefix) with `turn` or `message` a place in it; else a session."""
    if turn is not None and message is not None:
        raise MemoryRefused("give --turn or --message, not both")
    if ref.startswith("k-") and turn is None and message is None:
        return entry_target(conn, ref)
    if "#" in ref and turn is None and message is None:
        session_ref, _, seq = ref.rpartition("#")
        if not seq.isdigit():
            raise MemoryRefused(f"{ref!r}: after # comes a message's number, as `show` prints it (#12)")
        return place_target(conn, "message", session_ref, int(seq))
    if turn is not None:
        return place_target(conn, "turn", ref, turn)
    if message is not None:
        return place_target(conn, "message", ref, message)
    return session_target(conn, ref)


# ---------------------------------------------------------------------- writing


@contextmanager
def writing(
    db_path: Path | str,
    *,
    on_wait: Callable[[str], None] | None = None,
    wait_seconds: float | None = None,
) -> Iterator[sqlite3.Connection]:
    """A connection of the database's one writer, inside one transaction committed at the end.

    `wait_seconds`: how long to wait for another writer (an ingest) before giving up with
    MemoryRefused (None: as long as it takes)."""
    from ..store.db import connect
    from ..store.writer_lock import WriterBusy, writer_lock

    cancel: threading.Event | None = None
    timer: threading.Timer | None = None
    if wait_seconds is not None:
        cancel = threading.Event()
        timer = threading.Timer(wait_seconds, cancel.set)
        timer.daemon = True
        timer.start()
    try:
        with writer_lock(db_path, on_wait=on_wait, cancel=cancel):
            if timer is not None:
                timer.cancel()
            conn = connect(db_path)
            try:
                for ddl in DDL:  # a database opened before these tables existed (cheap when present)
                    conn.execute(ddl)
                with transaction(conn, immediate=True):
                    yield conn
            finally:
                conn.close()
    except WriterBusy as exc:
        raise MemoryRefused(
            f"the archive is being written by another process ({exc}); memory is written once it is done: "
            "try again in a moment"
        ) from exc
    finally:
        if timer is not None:
            timer.cancel()


def add_mark(conn: sqlite3.Connection, kind: str, target: Target, value: str, author: str) -> bool:
    """Tag, note or bookmark `target` (in the caller's transaction); False when it already was."""
    if kind not in MARK_KINDS:
        raise MemoryRefused(f"not a kind of mark: {kind!r} ({', '.join(MARK_KINDS)})")
    value = clean_tag(value) if kind == "tag" else value.strip()
    if kind == "note" and not value:
        raise MemoryRefused("a note needs some text")
    cursor = conn.execute(
        "INSERT OR IGNORE INTO memory_marks (kind, target_type, target_id, value, session_id, uuid, author, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (kind, target.type, target.id, value, target.session_id, target.uuid, author, now_ms()),
    )
    return cursor.rowcount > 0


def remove_mark(conn: sqlite3.Connection, kind: str, target: Target, value: str | None = None) -> int:
    """Take a mark back (every one of its kind on the target when `value` is None)."""
    sql = "DELETE FROM memory_marks WHERE kind = ? AND target_type = ? AND target_id = ?"
    params: list[Any] = [kind, target.type, target.id]
    if value is not None:
        sql += " AND value = ?"
        params.append(clean_tag(value) if kind == "tag" else value.strip())
    return conn.execute(sql, params).rowcount


def follow_rebuild(conn: sqlite3.Connection) -> int:
    """Marks on a message or a turn put back on their message after a rebuild numbered a session's
    messages anew (a newer reader takes a record for a message, or no more for one: Codex's
    developer messages, a turn it stopped), found by the uuid kept beside them; a mark whose
    message has none stays at its place. In the rebuild's writer; returns how many moved."""
    try:
        rows = conn.execute(
            "SELECT m.rowid, m.target_id, m.session_id, (SELECT min(e.seq) FROM entries e WHERE "
            "e.session_id = m.session_id AND e.uuid = m.uuid AND e.seq IS NOT NULL) FROM memory_marks m "
            "WHERE m.target_type IN ('message', 'turn') AND m.uuid IS NOT NULL AND m.session_id IS NOT NULL"
        ).fetchall()
    except sqlite3.OperationalError:  # an archive from before memory: no marks
        return 0
    moved = 0
    for rowid, target, session_id, seq in rows:
        place = f"{session_id}#{seq}"
        if seq is not None and place != target:  # the same mark there already: this one stays
            moved += conn.execute(
                "UPDATE OR IGNORE memory_marks SET target_id = ? WHERE rowid = ?", (place, rowid)
            ).rowcount
    return moved


# ---------------------------------------------------------------------- reading marks


@dataclass(slots=True)
class Mark:
    kind: str
    target_type: str
    target_id: str
    value: str
    session_id: str | None
    uuid: str | None
    author: str
    created_at: int

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["show"] = show_ref(self.target_type, self.target_id)
        if self.target_type in ("turn", "message"):
            out["at"] = "#" + self.target_id.rpartition("#")[2]
        return out


def show_ref(target_type: str, target_id: str) -> str | None:
    """The command a person runs to open what a mark or relation points at."""
    if target_type == "entry":
        return f"threadloom memory show {target_id}"
    if target_type == "session":
        return f"threadloom show {target_id}"
    if target_type in ("turn", "message"):  # `SESSION#n`: show opens the turn holding message n
        return "threadloom show " + shlex.quote(target_id)
    return None


_MARK_COLUMNS = "kind, target_type, target_id, value, session_id, uuid, author, created_at"


def marks(
    conn: sqlite3.Connection,
    *,
    kind: str | None = None,
    session_id: str | None = None,
    target: Target | None = None,
    value: str | None = None,
    limit: int = -1,
) -> list[Mark]:
    """Marks, newest first, narrowed by kind, the session they are in, their target or value."""
    where, params = [], []
    if kind is not None:
        where.append("kind = ?")
        params.append(kind)
    if session_id is not None:
        where.append("(session_id = ? OR (target_type = 'session' AND target_id = ?))")
        params += [session_id, session_id]
    if target is not None:
        where.append("target_type = ? AND target_id = ?")
        params += [target.type, target.id]
    if value is not None:
        where.append("value = ?")
        params.append(value)
    sql = f"SELECT {_MARK_COLUMNS} FROM memory_marks"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
    return [Mark(*row) for row in _rows(conn, sql, [*params, limit])]


def tags_of(conn: sqlite3.Connection, session_ids: list[str]) -> dict[str, list[str]]:
    """The tags put on each of these sessions (on the session itself), in name order."""
    out: dict[str, list[str]] = {}
    if not session_ids:
        return out
    import orjson

    for sid, value in _rows(
        conn,
        "SELECT target_id, value FROM memory_marks WHERE kind = 'tag' AND target_type = 'session' "
        "AND target_id IN (SELECT value FROM json_each(?)) ORDER BY value",
        (orjson.dumps(session_ids).decode(),),
    ):
        out.setdefault(sid, []).append(value)
    return out


def message_tags(conn: sqlite3.Connection, session_id: str) -> dict[int, list[str]]:
    """The tags put on each message of a session, by its #seq, in name order (for the viewer's
    headers: read by the primary key's range of `SESSION#…` targets)."""
    out: dict[int, list[str]] = {}
    for target_id, value in _rows(
        conn,
        "SELECT target_id, value FROM memory_marks WHERE kind = 'tag' AND target_type = 'message' "
        "AND target_id >= ? AND target_id < ? ORDER BY value",
        (f"{session_id}#", f"{session_id}$"),  # '$' follows '#': every SESSION#seq, no other session's
    ):
        seq = target_id.rpartition("#")[2]
        if seq.isdigit():
            out.setdefault(int(seq), []).append(value)
    return out


def tag_counts(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    """Every tag with how many things carry it, most used first."""
    return [
        (r[0], r[1])
        for r in _rows(
            conn,
            "SELECT value, count(*) FROM memory_marks WHERE kind = 'tag' GROUP BY value ORDER BY 2 DESC, 1",
        )
    ]


# ---------------------------------------------------------------------- knowledge entries


@dataclass(slots=True)
class Version:
    version: int
    content: str
    reason: str | None
    author: str
    created_at: int
    conflict: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Entry:
    id: str
    kind: str
    scope: str
    scope_key: str
    title: str
    created_at: int
    created_by: str
    current: Version | None = None
    versions: int = 0
    open_conflicts: int = 0
    tags: list[str] = field(default_factory=list)

    @property
    def scope_label(self) -> str:
        return self.scope if self.scope == "global" else f"{self.scope} {self.scope_key}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "scope": self.scope,
            "scope_key": self.scope_key or None,
            "title": self.title,
            "content": self.current.content if self.current else "",
            "version": self.current.version if self.current else 0,
            "versions": self.versions,
            "updated_at": self.current.created_at if self.current else self.created_at,
            "updated_by": self.current.author if self.current else self.created_by,
            "created_at": self.created_at,
            "created_by": self.created_by,
            "open_conflicts": self.open_conflicts,
            "tags": self.tags,
            "show": f"threadloom memory show {self.id}",
        }


_ENTRY_SELECT = (
    "SELECT e.id, e.kind, e.scope, e.scope_key, e.title, e.created_at, e.created_by, "
    "v.version, v.content, v.reason, v.author, v.created_at, v.conflict, "
    "(SELECT count(*) FROM memory_versions x WHERE x.entry_id = e.id), "
    "(SELECT count(*) FROM memory_conflicts c WHERE c.entry_id = e.id AND c.resolved_at IS NULL) "
    "FROM memory_entries e LEFT JOIN memory_versions v ON v.entry_id = e.id AND v.version = "
    "(SELECT max(version) FROM memory_versions y WHERE y.entry_id = e.id)"
)


def _entry(row: tuple[Any, ...]) -> Entry:
    current = Version(row[7], row[8], row[9], row[10], row[11], bool(row[12])) if row[7] is not None else None
    return Entry(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        current=current,
        versions=row[13],
        open_conflicts=row[14],
    )


def _with_tags(conn: sqlite3.Connection, entries: list[Entry]) -> list[Entry]:
    if not entries:
        return entries
    by_id = {e.id: e for e in entries}
    for target_id, value in _rows(
        conn,
        "SELECT target_id, value FROM memory_marks WHERE kind = 'tag' AND target_type = 'entry' ORDER BY value",
    ):
        if target_id in by_id:
            by_id[target_id].tags.append(value)
    return entries


def check_scope(scope: str, key: str | None) -> str:
    """The key a scope is stored under: '' for global, a project's path, a session's id."""
    if scope not in SCOPES:
        raise MemoryRefused(f"not a scope: {scope!r} ({', '.join(SCOPES)})")
    if scope == "global":
        return ""
    if not key:
        raise MemoryRefused(
            f"a {scope} entry needs its {'project (a path)' if scope == 'project' else 'session'}"
        )
    return project_key(key) if scope == "project" else key


def project_key(path: str) -> str:
    """A project as memory keeps it: its path as sessions are grouped by it (`project_folder`),
    without a trailing slash."""
    text = project_folder(path.strip())
    return text.rstrip("/") or "/"


def project_scope(conn: sqlite3.Connection, given: str) -> str:
    """The project path an entry is kept (and recalled) under, from a full path, or a project's
    name or part of its path as the other project filters match it (`project = ? OR project_path
    LIKE %?%`): recall matches a path and the folders above it, so a name or `.` kept as written
    was never recalled. A relative path is refused (whose `.`?), as is a name of no project or
    several."""
    text = given.strip()
    if text in (".", "..") or text.startswith(("./", ".\\", "~")) or ".." in re.split(r"[\\/]", text):
        raise MemoryRefused(
            f"project {given!r} is a relative path: give the project's full path (your working folder), "
            "its name or part of its path"
        )
    if text.startswith("/") or WINDOWS_FOLDER.match(text):
        return project_key(text)
    rows = conn.execute(
        "SELECT DISTINCT project_path, project = ? OR project_path = ? FROM agent_sessions "
        "WHERE project_path > '' AND (project = ? OR project_path = ? OR project_path LIKE ? ESCAPE '\\')",
        (text, text, text, text, f"%{like_text(text)}%"),
    ).fetchall()
    exact = {project_key(path) for path, same in rows if same}
    found = sorted(exact or {project_key(path) for path, _ in rows})
    if len(found) == 1:
        return found[0]
    if not found:
        raise MemoryRefused(
            f"no project in the archive is named {given!r} or has it in its path: give the project's full path"
        )
    more = f" (and {len(found) - 5} more)" if len(found) > 5 else ""
    raise MemoryRefused(
        f"project {given!r} matches several projects: {', '.join(found[:5])}{more}; give more of its path"
    )


def resolve_entry(conn: sqlite3.Connection, ref: str) -> Entry:
    """An entry by its id or a unique prefix of it; clear errors otherwise."""
    ref = ref.strip()
    escaped = like_text(ref)
    found = [
        _entry(r)
        for r in _rows(conn, _ENTRY_SELECT + " WHERE e.id LIKE ? ESCAPE '\\' LIMIT 6", (escaped + "%",))
    ]
    exact = [e for e in found if e.id == ref]
    if exact:
        found = exact
    if not found:
        raise MemoryRefused(f"no memory entry {ref!r}: `threadloom memory list` lists them")
    if len(found) > 1:
        raise MemoryRefused(f"{ref!r} names several entries: {', '.join(e.id for e in found[:5])}")
    return _with_tags(conn, found)[0]


def add_entry(
    conn: sqlite3.Connection,
    *,
    kind: str,
    scope: str,
    scope_key: str | None,
    title: str,
    content: str,
    author: str,
    reason: str | None = None,
) -> tuple[Entry, bool]:
    """A new knowledge entry, or a new version of the one of that title in that scope (returned
    with False: not new)."""
    if kind not in ENTRY_KINDS:
        raise MemoryRefused(f"not a kind of entry: {kind!r} ({', '.join(ENTRY_KINDS)})")
    key = check_scope(scope, scope_key)
    if scope == "project":
        key = project_scope(conn, key)
    title = " ".join(title.split())
    if not title:
        raise MemoryRefused("an entry needs a title (a few words naming it)")
    if not content.strip():
        raise MemoryRefused("an entry needs its content")
    existing = conn.execute(
        "SELECT id FROM memory_entries WHERE scope = ? AND scope_key = ? AND title = ?", (scope, key, title)
    ).fetchone()
    if existing is not None:
        return edit_entry(conn, existing[0], content=content, author=author, reason=reason), False
    entry_id = entry_id_for(scope, key, title)
    at = now_ms()
    conn.execute(
        "INSERT INTO memory_entries (id, kind, scope, scope_key, title, created_at, created_by) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (entry_id, kind, scope, key, title, at, author),
    )
    conn.execute(
        "INSERT INTO memory_versions (entry_id, version, content, reason, author, created_at, conflict, vid) "
        "VALUES (?, 1, ?, ?, ?, ?, 0, ?)",
        (entry_id, content, reason, author, at, version_id(entry_id, 1, content, reason, author, at)),
    )
    return resolve_entry(conn, entry_id), True


def entry_id_for(scope: str, scope_key: str, title: str) -> str:
    """An entry's id: of its scope and title, so that the entry a person starts on two machines is
    one entry when they sync (its versions merged), never two of one title."""
    digest = hashlib.sha256(f"{scope}\0{scope_key}\0{title}".encode("utf-8", "surrogatepass")).hexdigest()
    return "k-" + digest[:10]


def version_id(
    entry_id: str, version: int, content: str, reason: str | None, author: str, created_at: int
) -> str:
    """A version's id, the same on every machine: of what it says, who wrote it and when (so a
    version that came by `memory import` and is then synced is still one version)."""
    text = orjson.dumps([entry_id, version, content, reason, author, created_at])
    return "v-" + hashlib.sha256(text).hexdigest()[:20]


def ensure_version_ids(conn: sqlite3.Connection) -> int:
    """Give the versions written before they had ids theirs (in the caller's transaction); returns
    how many."""
    rows = _rows(
        conn,
        "SELECT entry_id, version, content, reason, author, created_at FROM memory_versions WHERE vid IS NULL",
    )
    for entry_id, version, content, reason, author, created_at in rows:
        conn.execute(
            "UPDATE OR IGNORE memory_versions SET vid = ? WHERE entry_id = ? AND version = ?",
            (version_id(entry_id, version, content, reason, author, created_at), entry_id, version),
        )
    return len(rows)


def edit_entry(
    conn: sqlite3.Connection,
    ref: str,
    *,
    content: str,
    author: str,
    reason: str | None = None,
    base_version: int | None = None,
) -> Entry:
    """A new version of an entry (append-only: the earlier ones stay). It is flagged a conflict,
    and listed until resolved, when another writer changed the entry within CONFLICT_SECONDS
    before it, or when `base_version` (the version the writer read) is no longer the latest."""
    entry = resolve_entry(conn, ref)
    if not content.strip():
        raise MemoryRefused("a version needs its content")
    last = entry.current
    at = now_ms()
    number = (last.version if last else 0) + 1
    conflict = last is not None and (
        (last.author != author and at - last.created_at <= CONFLICT_SECONDS * 1000)
        or (base_version is not None and base_version < last.version)
    )
    conn.execute(
        "INSERT INTO memory_versions (entry_id, version, content, reason, author, created_at, conflict, vid) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            entry.id,
            number,
            content,
            reason,
            author,
            at,
            int(conflict),
            version_id(entry.id, number, content, reason, author, at),
        ),
    )
    if conflict and last is not None:
        conn.execute(
            "INSERT OR IGNORE INTO memory_conflicts (entry_id, version_a, version_b, detected_at) "
            "VALUES (?, ?, ?, ?)",
            (entry.id, last.version, number, at),
        )
    return resolve_entry(conn, entry.id)


def resolve_conflicts(conn: sqlite3.Connection, ref: str, *, author: str, resolution: str) -> int:
    """Mark an entry's open conflicts resolved (its latest version stands, or a new one was
    written to settle it); returns how many."""
    entry = resolve_entry(conn, ref)
    return conn.execute(
        "UPDATE memory_conflicts SET resolved_at = ?, resolved_by = ?, resolution = ? "
        "WHERE entry_id = ? AND resolved_at IS NULL",
        (now_ms(), author, resolution, entry.id),
    ).rowcount


def history(conn: sqlite3.Connection, ref: str) -> tuple[Entry, list[Version]]:
    """An entry and every version of it, oldest first."""
    entry = resolve_entry(conn, ref)
    versions = [
        Version(r[0], r[1], r[2], r[3], r[4], bool(r[5]))
        for r in _rows(
            conn,
            "SELECT version, content, reason, author, created_at, conflict FROM memory_versions "
            "WHERE entry_id = ? ORDER BY version",
            (entry.id,),
        )
    ]
    return entry, versions


def list_entries(
    conn: sqlite3.Connection,
    *,
    scope: str | None = None,
    scope_key: str | None = None,
    kind: str | None = None,
    text: str | None = None,
    conflicts_only: bool = False,
) -> list[Entry]:
    """Entries as stored (no inheritance), global first, then by scope and title."""
    where, params = [], []
    if scope is not None:
        where.append("e.scope = ?")
        params.append(scope)
        if scope_key is not None and scope != "global":
            where.append("e.scope_key = ?")
            params.append(check_scope(scope, scope_key))
    if kind is not None:
        where.append("e.kind = ?")
        params.append(kind)
    sql = _ENTRY_SELECT + (" WHERE " + " AND ".join(where) if where else "")
    sql += (
        " ORDER BY CASE e.scope WHEN 'global' THEN 0 WHEN 'project' THEN 1 ELSE 2 END, e.scope_key, e.title"
    )
    found = [_entry(r) for r in _rows(conn, sql, params)]
    if text:
        needle = text.lower()
        found = [
            e
            for e in found
            if needle in e.title.lower() or (e.current and needle in e.current.content.lower())
        ]
    if conflicts_only:
        found = [e for e in found if e.open_conflicts]
    return _with_tags(conn, found)


def project_chain(path: str) -> list[str]:
    """A project's path and each folder above it, nearest first: a project's entries are read in
    its subfolders' projects too (`/srv/api` holds for `/srv/api/billing`)."""
    key = project_key(path)
    pure = PurePosixPath(key)
    return [str(p) for p in (pure, *pure.parents) if str(p) not in ("/", ".")] or [key]


def recall(
    conn: sqlite3.Connection,
    *,
    project: str | None = None,
    session: str | None = None,
    kind: str | None = None,
    text: str | None = None,
) -> list[Entry]:
    """The entries that hold for a session and its project, inherited down the scopes: the
    session's own, then its project's (and the folders above it), then the global ones. Of entries
    with one title the most specific wins: a session's hides its project's, a project's the
    global one. `session` gives its project when `project` is not given."""
    if session is not None and project is None:
        row = conn.execute("SELECT project_path FROM agent_sessions WHERE id = ?", (session,)).fetchone()
        project = row[0] if row and row[0] else None
    elif project:
        project = project_scope(conn, project)
    layers: list[list[Entry]] = []
    if session is not None:
        layers.append(list_entries(conn, scope="session", scope_key=session, kind=kind))
    if project:
        for key in project_chain(project):
            layers.append(list_entries(conn, scope="project", scope_key=key, kind=kind))
    layers.append(list_entries(conn, scope="global", kind=kind))
    seen: set[str] = set()
    out: list[Entry] = []
    for layer in layers:
        for entry in layer:
            if entry.title.lower() in seen:
                continue
            seen.add(entry.title.lower())
            out.append(entry)
    if text:
        needle = text.lower()
        out = [
            e for e in out if needle in e.title.lower() or (e.current and needle in e.current.content.lower())
        ]
    return out


# ---------------------------------------------------------------------- relations


@dataclass(slots=True)
class Relation:
    source_type: str
    source_id: str
    relation: str
    target_type: str
    target_id: str
    author: str
    created_at: int | None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["show"] = show_ref(self.target_type, self.target_id)
        return out


def relate(conn: sqlite3.Connection, source: Target, relation: str, target: Target, author: str) -> bool:
    if relation not in RELATIONS:
        raise MemoryRefused(f"not a relation: {relation!r} ({', '.join(RELATIONS)})")
    if (source.type, source.id) == (target.type, target.id):
        raise MemoryRefused("a thing is not related to itself")
    cursor = conn.execute(
        "INSERT OR IGNORE INTO memory_relations (source_type, source_id, relation, target_type, target_id, "
        "author, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (source.type, source.id, relation, target.type, target.id, author, now_ms()),
    )
    return cursor.rowcount > 0


def relations(conn: sqlite3.Connection, target: Target) -> list[Relation]:
    """The relations from or to `target`, those written and, for a session, the fork the archive
    itself records (a fork's records name the session they were copied from)."""
    found = [
        Relation(*r)
        for r in _rows(
            conn,
            "SELECT source_type, source_id, relation, target_type, target_id, author, created_at "
            "FROM memory_relations WHERE (source_type = ? AND source_id = ?) OR (target_type = ? AND target_id = ?) "
            "ORDER BY created_at",
            (target.type, target.id, target.type, target.id),
        )
    ]
    if target.type == "session":
        have = {(r.source_id, r.relation, r.target_id) for r in found}
        for sid, source in _rows(
            conn,
            "SELECT id, forked_from_session_id FROM agent_sessions WHERE forked_from_session_id IS NOT NULL "
            "AND (id = ? OR forked_from_session_id = ?)",
            (target.id, target.id),
        ):
            if (sid, "forked_from", source) not in have:
                found.append(Relation("session", sid, "forked_from", "session", source, "archive", None))
    return found


def record_fork(conn: sqlite3.Connection, new_session_id: str, source_session_id: str) -> None:
    """A fork threadloom wrote, recorded as `forked_from` its source (in the caller's transaction)."""
    conn.execute(
        "INSERT OR IGNORE INTO memory_relations (source_type, source_id, relation, target_type, target_id, "
        "author, created_at) VALUES ('session', ?, 'forked_from', 'session', ?, 'threadloom', ?)",
        (new_session_id, source_session_id, now_ms()),
    )


# ---------------------------------------------------------------------- conflicts


@dataclass(slots=True)
class Conflict:
    entry_id: str
    title: str
    version_a: int
    version_b: int
    author_a: str
    author_b: str
    detected_at: int
    resolved_at: int | None
    resolved_by: str | None
    resolution: str | None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["show"] = f"threadloom memory history {self.entry_id}"
        return out


def conflicts(conn: sqlite3.Connection, *, include_resolved: bool = False) -> list[Conflict]:
    sql = (
        "SELECT c.entry_id, e.title, c.version_a, c.version_b, a.author, b.author, c.detected_at, c.resolved_at, "
        "c.resolved_by, c.resolution FROM memory_conflicts c JOIN memory_entries e ON e.id = c.entry_id "
        "JOIN memory_versions a ON a.entry_id = c.entry_id AND a.version = c.version_a "
        "JOIN memory_versions b ON b.entry_id = c.entry_id AND b.version = c.version_b"
    )
    if not include_resolved:
        sql += " WHERE c.resolved_at IS NULL"
    return [Conflict(*r) for r in _rows(conn, sql + " ORDER BY c.detected_at DESC")]


# ---------------------------------------------------------------------- renamed sessions


# ---------------------------------------------------------------------- export / import


def export_memory(conn: sqlite3.Connection) -> dict[str, Any]:
    """Everything people and agents wrote, as one JSON-ready object (every table's rows by column)."""
    out: dict[str, Any] = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "exported_at": now_ms()}
    for table, columns in TABLES.items():
        names = ", ".join(columns)
        out[table.removeprefix("memory_")] = [
            dict(zip(columns, row, strict=True))
            for row in _rows(conn, f"SELECT {names} FROM {table} ORDER BY rowid")
        ]
    return out


def import_memory(conn: sqlite3.Connection, data: Any) -> dict[str, int]:
    """Merge an export in (the caller's transaction): what is already here is kept, what is new is
    added (an entry's versions by their number). Returns the rows added per table."""
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise MemoryRefused(f'not a threadloom memory export (its "format" is not {EXPORT_FORMAT!r})')
    if not isinstance(data.get("version"), int) or data["version"] > EXPORT_VERSION:
        raise MemoryRefused(
            f"a memory export of version {data.get('version')!r}: this threadloom reads {EXPORT_VERSION}"
        )
    added: dict[str, int] = {}
    for table, columns in TABLES.items():
        rows = data.get(table.removeprefix("memory_"), [])
        if not isinstance(rows, list):
            raise MemoryRefused(f"{table.removeprefix('memory_')!r} is not a list of rows")
        names = ", ".join(columns)
        marks_ = ", ".join("?" * len(columns))
        count = 0
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise MemoryRefused(f"row {i} of {table.removeprefix('memory_')!r} is not an object")
            if (
                table in ("memory_versions", "memory_conflicts")
                and not conn.execute(
                    "SELECT 1 FROM memory_entries WHERE id = ?", (row.get("entry_id"),)
                ).fetchone()
            ):
                continue  # its entry was not taken (one of that title in that scope is here already)
            try:
                cursor = conn.execute(
                    f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({marks_})",
                    [row.get(c) for c in columns],
                )
            except sqlite3.IntegrityError as exc:
                raise MemoryRefused(
                    f"row {i} of {table.removeprefix('memory_')!r} lacks a field: {exc}"
                ) from exc
            count += cursor.rowcount
        added[table.removeprefix("memory_")] = count
    ensure_version_ids(conn)  # an export from before versions had ids
    return added
