"""Sessions and projects the user is done with, hidden from the lists (the TUI's projects and
sessions, `threadloom sessions`) but never from the archive: search, stats, `show` and the jump
palette still find them, and `H` (or `sessions --hidden`) lists them again, marked.

User data, not derived (core.store.derived.USER_DATA): kept in the `hidden` table, which no record holds,
so an upgrade never empties it and `ingest --rebuild` carries it over to the new database."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store.sql import transaction

SESSION, PROJECT = "session", "project"
MARK = "⊘"  # what marks a hidden session or project when hidden ones are shown


@dataclass(frozen=True, slots=True)
class Hidden:
    """The ids of the hidden sessions and the paths of the hidden projects."""

    sessions: frozenset[str] = field(default_factory=frozenset)
    projects: frozenset[str] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.sessions or self.projects)

    def hides(self, session: Any, owners: dict[str, Any] | None = None) -> bool:
        """Whether `session` is out of the lists: hidden itself, a subagent of a hidden session (up
        through `owners`, the listed sessions by id), or a main session of a hidden project."""
        from ..read.query import owner_of

        seen: set[str] = set()
        current = session
        while current is not None and current.id not in seen:
            if current.id in self.sessions:
                return True
            seen.add(current.id)
            owner = owner_of(current)
            if owner is None:
                return (current.project_path or "") in self.projects
            if owner in self.sessions:
                return True
            current = (owners or {}).get(owner)
        return False


def read_hidden(conn: sqlite3.Connection) -> Hidden:
    """What is hidden; nothing for a database from before hiding (its table is added on the next
    write), read as it is by a command that only reads."""
    try:
        rows = conn.execute('SELECT kind, "key" FROM hidden').fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return Hidden()
        raise
    return Hidden(
        frozenset(k for kind, k in rows if kind == SESSION),
        frozenset(k for kind, k in rows if kind == PROJECT),
    )


def set_hidden(conn: sqlite3.Connection, kind: str, keys: Iterable[str], hidden: bool) -> int:
    """Hide (or show again) these sessions or projects, in one transaction of the caller's writer
    (see `write_hidden`); returns how many changed."""
    if kind not in (SESSION, PROJECT):
        raise ValueError(f"not a kind of hidden item: {kind!r}")
    now = int(time.time() * 1000)
    changed = 0
    with transaction(conn):
        for key in keys:
            if hidden:
                cursor = conn.execute(
                    'INSERT OR IGNORE INTO hidden (kind, "key", hidden_at) VALUES (?, ?, ?)', (kind, key, now)
                )
            else:
                cursor = conn.execute('DELETE FROM hidden WHERE kind = ? AND "key" = ?', (kind, key))
            changed += cursor.rowcount
    return changed


def show_all(conn: sqlite3.Connection) -> int:
    """Show every hidden session and project again, in the caller's writer; returns how many."""
    with transaction(conn):
        changed = conn.execute("DELETE FROM hidden").rowcount
    return changed


def write_hidden(
    db_path: Path,
    kind: str,
    keys: list[str],
    hidden: bool,
    *,
    on_wait: Callable[[str], None] | None = None,
) -> int:
    """`set_hidden` as the database's one writer: waits for an ingest that holds the lock."""
    from ..store.db import connect
    from ..store.writer_lock import writer_lock

    with writer_lock(db_path, on_wait=on_wait):
        conn = connect(db_path)
        try:
            return set_hidden(conn, kind, keys, hidden)
        finally:
            conn.close()
