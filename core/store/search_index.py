"""The full-text search index (`search_fts`): the one module that writes it.

Ingest asks it to add or forget a file's entries as they are written; a bulk load or a schema
upgrade leaves it behind, and this module catches it up in resumable chunks.

A first load of a big archive is browsable long before its search index is complete (at 1 GB the
index is a quarter of the work), so a bulk load leaves the index behind and this module catches it
up: in the TUI's worker while the user browses, or in `threadloom index` / before a CLI search.
Entries are indexed in id order and the highest indexed id is saved with each chunk, so a build
that is cancelled or killed continues where it stopped. New entries always get higher ids, which
is why ingest can simply leave them to the builder while the index is behind.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .sql import get_meta, page_cache, set_meta
from .writer_lock import WriterBusy, writer_lock

STATE_KEY = "search_index"  # "stale" while the index is behind the entries table
UPTO_KEY = "search_index_upto"  # every entry with an id <= this is indexed
CHUNK_ROWS = 20_000  # ~0.5 s per chunk on a 1 GB archive: cancel is prompt, commits are few


@dataclass
class IndexProgress:
    done: int  # entry ids covered so far
    total: int  # the highest entry id to cover
    elapsed: float

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


def indexed_upto(conn: sqlite3.Connection) -> int | None:
    """The highest entry id known to be indexed, or None when the index is complete."""
    if get_meta(conn, STATE_KEY) != "stale":
        return None
    value = get_meta(conn, UPTO_KEY)
    return int(value) if value and value.isdigit() else 0


def pending(conn: sqlite3.Connection) -> IndexProgress | None:
    """How far an incomplete index is (None when it is complete)."""
    upto = indexed_upto(conn)
    if upto is None:
        return None
    total = conn.execute("SELECT COALESCE(max(id), 0) FROM entries").fetchone()[0]
    return IndexProgress(min(upto, total), total, 0.0)


def mark_behind(conn: sqlite3.Connection) -> None:
    """Declare that entries from now on are not indexed as they are written (a bulk load)."""
    if indexed_upto(conn) is not None:
        return
    upto = conn.execute("SELECT COALESCE(max(id), 0) FROM entries").fetchone()[0]
    set_meta(conn, UPTO_KEY, str(upto))
    set_meta(conn, STATE_KEY, "stale")


def recreate(conn: sqlite3.Connection) -> None:
    """Drop the index and create it empty as the current schema defines it (a schema upgrade, in
    its transaction); the entries it covered are indexed again by `build`."""
    conn.execute("DROP TABLE IF EXISTS search_vocab")
    conn.execute("DROP TABLE IF EXISTS search_fts")
    for ddl in SEARCH_DDL:
        conn.execute(ddl)
    reset(conn)


def reset(conn: sqlite3.Connection) -> None:
    """Declare that no entry is known to be indexed (a schema upgrade recreated the index, or
    re-derived the text it covers): the builder clears it and indexes every entry again."""
    if conn.execute("SELECT EXISTS (SELECT 1 FROM entries)").fetchone()[0]:
        set_meta(conn, UPTO_KEY, "0")
        set_meta(conn, STATE_KEY, "stale")


def add_file(conn: sqlite3.Connection, source_file_id: int, first_id: int, upto: int | None = None) -> None:
    """Index one file's entries from `first_id` on, in the caller's transaction (an index that
    is complete is kept so as new records arrive); `upto`: only the ids the index covers."""
    conn.execute(
        "INSERT INTO search_fts(rowid, content, thinking, tool_text) "
        "SELECT id, content, thinking, tool_text FROM entries WHERE source_file_id = ? AND id >= ? AND id <= ?",
        (source_file_id, first_id, upto if upto is not None else 1 << 62),
    )


def forget_file(conn: sqlite3.Connection, source_file_id: int, upto: int | None) -> None:
    """Take one file's entries out of the index before they are deleted (an external-content
    index must be told the text it indexed); `upto`: only the ids the index covers (None: all)."""
    conn.execute(
        "INSERT INTO search_fts(search_fts, rowid, content, thinking, tool_text) "
        "SELECT 'delete', id, content, thinking, tool_text FROM entries WHERE source_file_id = ? "
        "AND id <= ?",
        (source_file_id, upto if upto is not None else 1 << 62),
    )


def build(
    conn: sqlite3.Connection,
    progress: Callable[[IndexProgress], None] | None = None,
    cancel: threading.Event | None = None,
    chunk_rows: int = CHUNK_ROWS,
    *,
    wait: bool = True,
    on_wait: Callable[[str], None] | None = None,
) -> bool:
    """Index every entry not yet indexed; returns True when the index is complete.

    Only the holder of the writer lock builds (see core.store.writer_lock): without `wait`, a build that
    finds another writer at work leaves the index to it and returns False."""
    if indexed_upto(conn) is None:
        return True
    try:
        with writer_lock(conn, wait=wait, on_wait=on_wait, cancel=cancel), page_cache(conn):
            return _build(conn, progress, cancel, chunk_rows)
    except WriterBusy:
        return False


def _build(
    conn: sqlite3.Connection,
    progress: Callable[[IndexProgress], None] | None,
    cancel: threading.Event | None,
    chunk_rows: int,
) -> bool:
    """Chunk by chunk, each read and advanced in its own write transaction: where the index stands
    is read under the same lock that moves it on, so no chunk is ever indexed twice."""
    started = time.perf_counter()
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            upto = indexed_upto(conn)
            total = conn.execute("SELECT COALESCE(max(id), 0) FROM entries").fetchone()[0]
            if progress is not None:
                progress(
                    IndexProgress(
                        total if upto is None else min(upto, total), total, time.perf_counter() - started
                    )
                )
            if upto is None or upto >= total:
                set_meta(conn, STATE_KEY, None)
                set_meta(conn, UPTO_KEY, None)
                conn.execute("COMMIT")
                return True
            if cancel is not None and cancel.is_set():
                conn.execute("COMMIT")
                return False
            if upto == 0:
                # nothing is known to be indexed: clear whatever an older version may have left half-done
                conn.execute("INSERT INTO search_fts(search_fts) VALUES ('delete-all')")
            high = min(upto + chunk_rows, total)
            conn.execute(
                "INSERT INTO search_fts(rowid, content, thinking, tool_text) "
                "SELECT id, content, thinking, tool_text FROM entries WHERE id > ? AND id <= ?",
                (upto, high),
            )
            set_meta(conn, UPTO_KEY, str(high))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


# Full-text index over entries (external content: the text is stored once, in entries). Columns:
# message text, thinking, tool inputs/outputs; filters pick columns (`in:tools`, `in:thinking`).
SEARCH_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5("
    "content, thinking, tool_text, content='entries', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_vocab USING fts5vocab(search_fts, 'row')",
)
