"""The one way the screens read the archive off the interface's thread: a connection of its own,
closed after, and a failure said in the screen's own words rather than raised."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from threadloom.tui.workers import read_archive


def test_posts_what_was_read_and_closes_its_connection(demo_db: Path) -> None:
    posted: list[object] = []
    used: list[sqlite3.Connection] = []

    def read(conn: sqlite3.Connection) -> int:
        used.append(conn)
        return conn.execute("SELECT count(*) FROM agent_sessions").fetchone()[0]

    read_archive(posted.append, demo_db, read, lambda why: f"failed: {why}")
    assert len(posted) == 1 and isinstance(posted[0], int) and posted[0] > 0
    try:
        used[0].execute("SELECT 1")
        raise AssertionError("the connection was left open")
    except sqlite3.ProgrammingError:
        pass


def test_a_file_that_is_no_archive_or_a_failing_read_is_said_not_raised(
    tmp_path: Path, demo_db: Path
) -> None:
    posted: list[object] = []
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    read_archive(posted.append, junk, lambda conn: "read", lambda why: f"failed: {why}")
    read_archive(
        posted.append, tmp_path / "missing" / "gone.db", lambda conn: "read", lambda why: f"failed: {why}"
    )

    def broken(conn: sqlite3.Connection) -> str:
        conn.execute("SELECT * FROM no_such_table")
        return "read"

    read_archive(posted.append, demo_db, broken, lambda why: f"failed: {why}")
    assert len(posted) == 3 and all(str(p).startswith("failed: ") for p in posted)
    assert "no_such_table" in str(posted[2])
    assert not (tmp_path / "missing").exists()  # reading never creates a database
