"""An older database opened with --no-ingest: its sessions are still rebuilt, by the worker."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from threadloom.core.adapters.claude_demo import write_demo_archive
from threadloom.core.store import db
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.panes import ProjectList
from threadloom.tui.screens import ErrorScreen

from tests.conftest import ingest


async def test_an_older_database_opened_without_ingest_is_rebuilt_by_the_worker(tmp_path: Path) -> None:
    root = write_demo_archive(tmp_path / "archive", long_turns=3)
    path = tmp_path / "t.db"
    conn = db.connect(path)
    ingest(conn, root)
    conn.close()
    old = sqlite3.connect(path)
    old.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    old.close()
    (tmp_path / "archive").rename(tmp_path / "gone")  # --no-ingest reads no logs: none are there
    app = ThreadloomApp(db_path=path, ingest=False)
    async with app.run_test(size=(140, 40)) as pilot:
        assert app.conn is None  # neither opened nor rebuilt on the interface's thread
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one(ProjectList).border_title == "Projects (4)"
        assert not isinstance(app.screen, ErrorScreen)
    assert db.upgrade_due(path) is None
