"""The smallest SQL helpers, the lowest piece of the store that anything may use: one transaction
with its rollback, and `ledger_meta`, the small named values every layer keeps in the database
(versions, positions, the sync's machine)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


def record_digest(raw: bytes) -> str:
    """`entries.hash`: the sha256 of a record's bytes, its first 32 hex digits (what `verify` checks
    the stored bytes against)."""
    return hashlib.sha256(raw).hexdigest()[:32]


def like_text(text: str) -> str:
    """`text` for a LIKE pattern with `ESCAPE '\\'`: its `%`, `_` and `\\` matched as themselves (a
    project named `p%x` is not every project with a `p` before an `x`)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM ledger_meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: sqlite3.Connection, key: str, value: str | None) -> None:
    if value is None:
        conn.execute("DELETE FROM ledger_meta WHERE key = ?", (key,))
    else:
        conn.execute("INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)", (key, value))


@contextmanager
def transaction(conn: sqlite3.Connection, *, immediate: bool = False) -> Iterator[None]:
    """BEGIN … COMMIT on a connection in explicit-transaction mode; ROLLBACK on any error.
    `immediate`: take the write lock at BEGIN (a transaction that reads, then writes, would
    otherwise fail busy where another writer came in between)."""
    conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


# What passes over the whole archive once (the search index's build, the episodes a first load left)
# reads each page once: a page cache of 16 MB served them as fast as the usual 64 MB (core.store.db),
# and the 48 MB it leaves unfilled were most of a first load's peak (100 MB bench archive, one
# process: 180 -> 134 MiB).
ONE_PASS_CACHE_KIB = 16 * 1024


@contextmanager
def page_cache(conn: sqlite3.Connection, kib: int = ONE_PASS_CACHE_KIB) -> Iterator[None]:
    """The connection's page cache at most `kib` KiB meanwhile, then as it was."""
    before = int(conn.execute("PRAGMA cache_size").fetchone()[0])
    conn.execute(f"PRAGMA cache_size = -{int(kib)}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {before}")
