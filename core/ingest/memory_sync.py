"""What of memory (core.insight.memory) a sync moves, and how what comes from other machines is merged.

The SQLite side only: core.ingest.sync carries the items to and from the hub (its `shared_rows`).

An item is one thing a person wrote, named the same on every machine:
- a version of a knowledge entry, by its id (`memory.version_id`), carrying its entry (id, kind,
  scope and title) and the ids of the versions its writer had (those numbered before it there:
  numbers only grow, and a version pulled later is numbered after);
- a tag, note or bookmark, by what it is on and what it says;
- a relation, by its two ends and its kind.
An end that is an entry carries that entry's scope and title too: an entry two machines started
apart (before entry ids came from them) is found here by its scope and title, whatever its id.

What is shared goes by scope, with the sync's sharing rules (core.ingest.sync.Sharing): a project's entries
go with that project; a session's entries, and the marks and relations on a session, with the
session (its project and agent); global entries only when everything is shared (`--share all`).

Merging keeps everything and never overwrites: a version already here is passed over; one whose
writer had every version here is the next version; one whose writer lacked some (another machine
edited the entry at the same time) is kept too, flagged as a conflict and listed until resolved, as
two writers on one machine are (`memory list --conflicts`). A version written to settle a conflict,
by a writer who had both sides, is no conflict anywhere. Conflicts and their resolution stay on the machine
that finds them; version numbers are each archive's own (the ids are what is shared).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from ..insight import memory
from ..store.memory_tables import ENTRY_KINDS, MARK_KINDS, RELATIONS, SCOPES, TARGET_TYPES

# the kinds of item on the hub (shared_rows.tbl)
VERSION, MARK, RELATION = "memory.version", "memory.mark", "memory.relation"
KINDS = (VERSION, MARK, RELATION)
SESSION_LIKE = ("session", "turn", "message")


def what(kind: str, payload: Any) -> str:
    """What an item is to the person syncing (the sync's report counts them so): an entry version,
    a tag, a note, a bookmark, a relation."""
    if kind == MARK and isinstance(payload, dict) and payload.get("kind") in MARK_KINDS:
        return str(payload["kind"])
    return {VERSION: "entry version", RELATION: "relation"}.get(kind, "item")


# (agent, projects) -> shared? (core.ingest.sync.Sharing.takes)
Takes = Callable[[str, set[str]], bool]


@dataclass(frozen=True)
class Item:
    kind: str
    key: str  # the same on every machine: the hub keeps it once per machine
    project: str | None  # the project the hub files it under (its grants are per project)
    payload: dict[str, Any]


def _key(*values: Any) -> str:
    return hashlib.sha256(orjson.dumps(list(values))).hexdigest()[:32]


def key_of(kind: str, payload: dict[str, Any]) -> str:
    if kind == VERSION:
        return str(payload["vid"])
    if kind == MARK:
        return _key(kind, payload["kind"], payload["target_type"], payload["target_id"], payload["value"])
    return _key(
        kind,
        payload["source_type"],
        payload["source_id"],
        payload["relation"],
        payload["target_type"],
        payload["target_id"],
    )


class _Scopes:
    """Where things sit, for the sharing rules: a session's agent and projects, an entry's scope."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.known: dict[str, tuple[str, set[str]] | None] = {}
        self.entries = {
            eid: {
                "id": eid,
                "kind": kind,
                "scope": scope,
                "scope_key": key,
                "title": title,
                "created_at": at,
                "created_by": by,
            }
            for eid, kind, scope, key, title, at, by in memory._rows(
                conn, "SELECT id, kind, scope, scope_key, title, created_at, created_by FROM memory_entries"
            )
        }

    def session(self, session_id: str | None) -> tuple[str, set[str]] | None:
        sid = session_id or ""
        if sid not in self.known:
            row = self.conn.execute(
                "SELECT source, project_path, project FROM agent_sessions WHERE id = ?", (sid,)
            ).fetchone()
            self.known[sid] = None if row is None else (row[0] or "", {p for p in row[1:] if p})
        return self.known[sid]

    def of_entry(self, entry: dict[str, Any]) -> tuple[str, set[str]] | None:
        """(agent, projects) of an entry's scope; None for a global entry (shared with `all` only)."""
        if entry["scope"] == "project":
            return "", {entry["scope_key"]}
        if entry["scope"] == "session":
            return self.session(entry["scope_key"]) or ("", set())
        return None

    def of(self, end_type: str, end_id: str, session_id: str | None = None) -> tuple[str, set[str]] | None:
        if end_type == "entry":
            entry = self.entries.get(end_id)
            return self.of_entry(entry) if entry else ("", set())
        return self.session(session_id or end_id.partition("#")[0]) or ("", set())


def _shared(where: tuple[str, set[str]] | None, takes: Takes, everything: bool) -> bool:
    return everything if where is None else takes(*where)  # a global entry: with `--share all` only


def _project(where: tuple[str, set[str]] | None) -> str | None:
    if not where:
        return None
    projects = sorted(where[1])
    return next((p for p in projects if p.startswith("/")), projects[0] if projects else None)


def outgoing(conn: sqlite3.Connection, takes: Takes, everything: bool) -> Iterator[Item]:
    """Every memory item the sharing rules take (`everything`: `--share all`, which global entries
    need), as it would go to the hub (the caller skips those the hub already had from here).
    Version ids are filled in first by the caller (`memory.ensure_version_ids`)."""
    scopes = _Scopes(conn)
    seen: list[str] = []  # the ids of the versions of this entry numbered before this one
    last_entry = None
    for entry_id, content, reason, author, created_at, vid in memory._rows(
        conn,
        "SELECT entry_id, content, reason, author, created_at, vid FROM memory_versions "
        "WHERE vid IS NOT NULL ORDER BY entry_id, version",
    ):
        if entry_id != last_entry:
            seen, last_entry = [], entry_id
        had, seen = seen, [*seen, vid]
        entry = scopes.entries.get(entry_id)
        if entry is None:
            continue
        where = scopes.of_entry(entry)
        if not _shared(where, takes, everything):
            continue
        payload = {
            "vid": vid,
            "seen": had,
            "entry": entry,
            "content": content,
            "reason": reason,
            "author": author,
            "created_at": created_at,
        }
        yield Item(VERSION, vid, _project(where), payload)
    for row in memory._rows(conn, f"SELECT {memory._MARK_COLUMNS} FROM memory_marks ORDER BY rowid"):
        mark = dict(
            zip(
                ("kind", "target_type", "target_id", "value", "session_id", "uuid", "author", "created_at"),
                row,
                strict=True,
            )
        )
        where = scopes.of(mark["target_type"], mark["target_id"], mark["session_id"])
        if not _shared(where, takes, everything):
            continue
        if mark["target_type"] == "entry":
            mark["entry"] = scopes.entries.get(mark["target_id"])
        yield Item(MARK, key_of(MARK, mark), _project(where), mark)
    for row in memory._rows(
        conn,
        "SELECT source_type, source_id, relation, target_type, target_id, author, created_at "
        "FROM memory_relations ORDER BY rowid",
    ):
        rel = dict(
            zip(
                ("source_type", "source_id", "relation", "target_type", "target_id", "author", "created_at"),
                row,
                strict=True,
            )
        )
        where = scopes.of(rel["source_type"], rel["source_id"])
        if not (
            _shared(where, takes, everything)
            and _shared(scopes.of(rel["target_type"], rel["target_id"]), takes, everything)
        ):
            continue
        for end in ("source", "target"):
            if rel[f"{end}_type"] == "entry":
                rel[f"{end}_entry"] = scopes.entries.get(rel[f"{end}_id"])
        yield Item(RELATION, key_of(RELATION, rel), _project(where), rel)


# ---------------------------------------------------------------------------------------- merging


class Refused(ValueError):
    """An item from the hub of a shape this archive does not take (said, never forced in)."""


def _text(value: Any, name: str, *, words: bool = False) -> str:
    """A string field of an item; an id, a name or a key holds no NUL, what a person or an agent
    wrote (`words`: a note, a title, an entry's content) may, as it may here."""
    if not isinstance(value, str) or (not words and "\0" in value) or len(value) > 1_000_000:
        raise Refused(f"a memory item whose {name} is not text")
    return value


def _maybe_text(value: Any, name: str) -> str | None:
    return None if value is None else _text(value, name)


def _int(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or abs(value) >= 1 << 62:
        raise Refused(f"a memory item whose {name} is not a number")
    return value


def _local_entry(conn: sqlite3.Connection, entry: Any, *, create: bool) -> str | None:
    """This archive's id of the entry an item names: the same id, else the entry of that scope and
    title; created (with the item's id) when `create` and neither is here."""
    if not isinstance(entry, dict):
        return None
    eid = _text(entry.get("id"), "entry id")
    if conn.execute("SELECT 1 FROM memory_entries WHERE id = ?", (eid,)).fetchone():
        return eid
    scope = _text(entry.get("scope"), "scope")
    if scope not in SCOPES:
        raise Refused(f"a memory entry of an unknown scope: {scope[:40]!r}")
    key, title = _text(entry.get("scope_key"), "scope key"), _text(entry.get("title"), "title", words=True)
    row = conn.execute(
        "SELECT id FROM memory_entries WHERE scope = ? AND scope_key = ? AND title = ?", (scope, key, title)
    ).fetchone()
    if row is not None:
        return str(row[0])
    if not create:
        return None
    kind = _text(entry.get("kind"), "kind")
    if kind not in ENTRY_KINDS:
        raise Refused(f"a memory entry of an unknown kind: {kind[:40]!r}")
    conn.execute(
        "INSERT INTO memory_entries (id, kind, scope, scope_key, title, created_at, created_by) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            eid,
            kind,
            scope,
            key,
            title,
            _int(entry.get("created_at"), "time"),
            _text(entry.get("created_by"), "author"),
        ),
    )
    return eid


def merge(conn: sqlite3.Connection, kind: str, payload: Any) -> tuple[str, str]:
    """Merge one item from another machine (in the caller's transaction). Returns (what became of
    it: 'added', 'conflict' or 'known', the key it has here: the caller notes it as pulled, so it
    is never pushed back)."""
    if not isinstance(payload, dict):
        raise Refused("a memory item that is not an object")
    if kind == VERSION:
        return _merge_version(conn, payload)
    if kind == MARK:
        return _merge_mark(conn, payload)
    if kind == RELATION:
        return _merge_relation(conn, payload)
    raise Refused(f"a memory item of an unknown kind: {kind[:40]!r}")


def _merge_version(conn: sqlite3.Connection, p: dict[str, Any]) -> tuple[str, str]:
    vid = _text(p.get("vid"), "version id")
    if conn.execute("SELECT 1 FROM memory_versions WHERE vid = ?", (vid,)).fetchone():
        return "known", vid
    entry_id = _local_entry(conn, p.get("entry"), create=True)
    if entry_id is None:
        raise Refused("a memory version without its entry")
    had = p.get("seen")
    if not (isinstance(had, list) and all(isinstance(v, str) for v in had)):
        raise Refused("a memory version without the versions its writer had")
    content, author = _text(p.get("content"), "content", words=True), _text(p.get("author"), "author")
    reason, at = _maybe_text(p.get("reason"), "reason"), _int(p.get("created_at"), "time")
    memory.ensure_version_ids(conn)
    here = conn.execute(
        "SELECT version, vid FROM memory_versions WHERE entry_id = ? ORDER BY version", (entry_id,)
    ).fetchall()
    last = here[-1] if here else None
    number = (last[0] if last else 0) + 1
    # its writer had every version here: the next one; else it was written beside one: a conflict
    conflict = last is not None and bool({v for _, v in here} - set(had))
    conn.execute(
        "INSERT INTO memory_versions (entry_id, version, content, reason, author, created_at, conflict, vid) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (entry_id, number, content, reason, author, at, int(conflict), vid),
    )
    if conflict and last is not None:
        conn.execute(
            "INSERT OR IGNORE INTO memory_conflicts (entry_id, version_a, version_b, detected_at) "
            "VALUES (?, ?, ?, ?)",
            (entry_id, last[0], number, memory.now_ms()),
        )
    return ("conflict" if conflict else "added"), vid


def _end(conn: sqlite3.Connection, end_type: Any, end_id: Any, entry: Any) -> tuple[str, str]:
    end_type = _text(end_type, "target type")
    if end_type not in TARGET_TYPES:
        raise Refused(f"a memory item on an unknown kind of thing: {end_type[:40]!r}")
    end_id = _text(end_id, "target")
    if end_type == "entry":
        end_id = _local_entry(conn, entry, create=False) or end_id
    return end_type, end_id


def _merge_mark(conn: sqlite3.Connection, p: dict[str, Any]) -> tuple[str, str]:
    kind = _text(p.get("kind"), "kind")
    if kind not in MARK_KINDS:
        raise Refused(f"a mark of an unknown kind: {kind[:40]!r}")
    target_type, target_id = _end(conn, p.get("target_type"), p.get("target_id"), p.get("entry"))
    mark = {
        "kind": kind,
        "target_type": target_type,
        "target_id": target_id,
        "value": _text(p.get("value"), "value", words=True),
        "session_id": _maybe_text(p.get("session_id"), "session"),
        "uuid": _maybe_text(p.get("uuid"), "uuid"),
        "author": _text(p.get("author"), "author"),
        "created_at": _int(p.get("created_at"), "time"),
    }
    done = conn.execute(
        f"INSERT OR IGNORE INTO memory_marks ({', '.join(mark)}) VALUES ({', '.join('?' * len(mark))})",
        list(mark.values()),
    ).rowcount
    return ("added" if done else "known"), key_of(MARK, mark)


def _merge_relation(conn: sqlite3.Connection, p: dict[str, Any]) -> tuple[str, str]:
    relation = _text(p.get("relation"), "relation")
    if relation not in RELATIONS:
        raise Refused(f"a relation of an unknown kind: {relation[:40]!r}")
    source_type, source_id = _end(conn, p.get("source_type"), p.get("source_id"), p.get("source_entry"))
    target_type, target_id = _end(conn, p.get("target_type"), p.get("target_id"), p.get("target_entry"))
    rel = {
        "source_type": source_type,
        "source_id": source_id,
        "relation": relation,
        "target_type": target_type,
        "target_id": target_id,
        "author": _text(p.get("author"), "author"),
        "created_at": _int(p.get("created_at"), "time"),
    }
    done = conn.execute(
        f"INSERT OR IGNORE INTO memory_relations ({', '.join(rel)}) VALUES ({', '.join('?' * len(rel))})",
        list(rel.values()),
    ).rowcount
    return ("added" if done else "known"), key_of(RELATION, rel)
