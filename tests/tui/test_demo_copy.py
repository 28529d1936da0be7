"""The demo database the TUI tests share is built once a process and copied: a copy must read as
the same archive moved, or a test's own ingest would see every file as rewritten."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.store import db

from tests.tui_support import build_demo_db


def _texts(path: Path) -> list[str]:
    """Every text value of every table but the search index's own."""
    conn = sqlite3.connect(path)
    try:
        found: list[str] = []
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in (t for t in tables if not t.startswith("search_fts")):
            for row in conn.execute(f"SELECT * FROM '{table}'"):
                found += [v for v in row if isinstance(v, str)]
        return found
    finally:
        conn.close()


def test_a_copied_demo_database_is_the_demo_archive_moved(tmp_path: Path) -> None:
    build_demo_db(tmp_path / "first", long_turns=4)  # the process's build of this length, copied
    copy = build_demo_db(tmp_path / "second", long_turns=4)  # and copied again
    texts = _texts(copy)
    assert not [t for t in texts if "threadloom-demo-" in t or str(tmp_path / "first") in t]
    here = str(tmp_path / "second" / "archive")
    kinds = {kind for (kind,) in sqlite3.connect(copy).execute("SELECT kind FROM source_files")}
    assert sum(here in t for t in texts) > len(kinds) > 0
    conn = db.connect(copy)
    try:
        report = run_ingest(conn, [tmp_path / "second" / "archive" / "projects"], include_defaults=False)
        assert (report.errors, report.files_read, report.records_added) == ([], 0, 0)
        for table in ("source_roots", "ledger_meta"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > 0
    finally:
        conn.close()
