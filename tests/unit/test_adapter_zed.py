"""Zed's agent threads (core/adapters/zed.py): every thread row read from a read-only threads.db,
its zstd JSON cut into messages that put together give it back exactly, calls joined to their
results, the title, folder, model and token totals, a subagent thread under its parent, edits from
`edit_file`'s output, and no resume command (Zed opens threads from its panel only)."""

from __future__ import annotations

import hashlib

import pytest
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import ForkError, ResumeTarget
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.zed import CHILD, CWD, MAIN, TID, _thread, zed_db
from tests.support import ingest


def test_zed_threads_are_read_whole_and_as_zed_s(tmp_path):
    path = zed_db(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert [a for a, adapter in ADAPTERS.items() if adapter.claims(path)] == ["zed"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".local")
        refresh_pending(conn)
        raws = [
            bytes(r)
            for (r,) in conn.execute(
                "SELECT raw FROM entries WHERE session_id = ? ORDER BY byte_offset", (TID,)
            )
        ]
        assert b"".join(raws[1:]) == _thread("Fix the cart total", MAIN)
        row = conn.execute(
            "SELECT source, project_path, title, created_at FROM agent_sessions WHERE id = ?", (TID,)
        ).fetchone()
        assert row == ("zed", CWD, "Fix the cart total", 1775037600000)
        shown = messages(conn, TID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        assert any(m.thinking == "look at cart.py" for m in shown)
        assert {c.name: c.status for m in shown for c in m.tool_calls} == {
            "edit_file": "completed",
            "terminal": "failed",
        }
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (TID,)
        ).fetchone()
        assert tuple(tokens) == (500, 60, 400)
        child = conn.execute("SELECT parent_session_id FROM agent_sessions WHERE id = ?", (CHILD,)).fetchone()
        assert child == (TID,)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("shop/cart.py", 1, 1)
        ]
    finally:
        conn.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest  # never written


def test_a_zed_thread_has_no_resume_command():
    with pytest.raises(ForkError):
        ADAPTERS["zed"].resume_command(ResumeTarget("zed", TID, TID, CWD))
