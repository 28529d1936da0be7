"""`ledger_meta`: the small named values every layer keeps in the database (versions, positions,
the sync's machine); the lowest piece of the store, so anything may use it."""

from __future__ import annotations

import sqlite3


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM ledger_meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: sqlite3.Connection, key: str, value: str | None) -> None:
    if value is None:
        conn.execute("DELETE FROM ledger_meta WHERE key = ?", (key,))
    else:
        conn.execute("INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)", (key, value))
