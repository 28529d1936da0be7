"""Zed's agent threads (core/adapters/zed.py): every thread row read from a read-only threads.db,
its zstd JSON cut into messages that put together give it back exactly, calls joined to their
results, the title, folder, model and token totals, a subagent thread under its parent, edits from
`edit_file`'s output, and no resume command (Zed opens threads from its panel only)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
import zstandard
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import ForkError, ResumeTarget
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.conftest import ingest

TID = "8c1f3e2a-6b4d-4f7e-9a0b-1c2d3e4f5a6b"
CHILD = "0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d"
CWD = "/home/dev/shop"


def _thread(title: str, messages_: list, **extra) -> bytes:
    thread = {
        "title": title,
        "messages": messages_,
        "updated_at": "2026-04-01T10:05:00Z",
        "detailed_summary": None,
        "initial_project_snapshot": None,
        "cumulative_token_usage": {
            "input_tokens": 500,
            "output_tokens": 60,
            "cache_creation_input_tokens": 10,
            "cache_read_input_tokens": 400,
        },
        "request_token_usage": {},
        "model": {"provider": "zed.dev", "model": "claude-sonnet-4-5"},
        "profile": "write",
        **extra,
        "version": "0.3.0",
    }
    return json.dumps(thread, separators=(",", ":")).encode()


MAIN = [
    {"User": {"id": "u-1", "content": [{"Text": "fix the cart total"}]}},
    {
        "Agent": {
            "content": [
                {"Thinking": {"text": "look at cart.py", "signature": "sig"}},
                {"Text": "Fixing it."},
                {
                    "ToolUse": {
                        "id": "toolu_1",
                        "name": "edit_file",
                        "raw_input": "{}",
                        "input": {"path": "shop/cart.py", "mode": "edit", "display_description": "fix"},
                        "is_input_complete": True,
                    }
                },
                {
                    "ToolUse": {
                        "id": "toolu_2",
                        "name": "terminal",
                        "raw_input": "{}",
                        "input": {"command": "pytest", "cd": "shop"},
                        "is_input_complete": True,
                    }
                },
            ],
            "tool_results": {
                "toolu_1": {
                    "tool_use_id": "toolu_1",
                    "tool_name": "edit_file",
                    "is_error": False,
                    "content": {"Text": "Edited shop/cart.py"},
                    "output": {
                        "input_path": "shop/cart.py",
                        "old_text": "total = None\n",
                        "new_text": "total = 0\n",
                        "diff": "",
                    },
                },
                "toolu_2": {
                    "tool_use_id": "toolu_2",
                    "tool_name": "terminal",
                    "is_error": True,
                    "content": {"Text": "1 failed"},
                    "output": None,
                },
            },
        }
    },
    "Resume",
    {"Agent": {"content": [{"Text": "Done."}], "tool_results": {}}},
    {"Something": 1},
]


def zed_db(root: Path) -> Path:
    folder = root / ".local" / "share" / "zed" / "threads"
    folder.mkdir(parents=True)
    path = folder / "threads.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL,"
        " data_type TEXT NOT NULL, data BLOB NOT NULL, parent_id TEXT, folder_paths TEXT,"
        " folder_paths_order TEXT, created_at TEXT)"
    )
    main = _thread("Fix the cart total", MAIN)
    child = _thread("Run the tests", [{"User": {"id": "u-2", "content": [{"Text": "run the tests"}]}}])
    rows = [
        (TID, "Fix the cart total", "2026-04-01T10:05:00Z", "zstd", zstandard.compress(main), None, CWD, "0"),
        (CHILD, "Run the tests", "2026-04-01T10:03:00Z", "json", child, TID, CWD, "0"),
    ]
    for tid, title, updated, kind, data, parent, folders, order in rows:
        conn.execute(
            "INSERT INTO threads VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (tid, title, updated, kind, data, parent, folders, order, "2026-04-01T10:00:00Z"),
        )
    conn.commit()
    conn.close()
    return path


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
