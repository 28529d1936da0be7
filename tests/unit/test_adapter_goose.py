"""Goose's sessions database (core/adapters/goose.py): read without a byte of it changed, every row
stored, a session's folder, name, model and running tokens, messages with thinking, tool requests
joined to the responses in the next message, edits, and its resume command."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.conftest import ingest
from tests.support import run_printed

SID = "20260301_4"
CWD = "/home/dev/shop"

SCHEMA = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user',
    working_dir TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
    schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT,
    model_config_json TEXT, tenant_id TEXT, user_id TEXT);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
"""


def goose_db(root: Path) -> Path:
    path = root / ".local" / "share" / "goose" / "sessions" / "sessions.db"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO schema_version (version) VALUES (9)")
    conn.execute(
        "INSERT INTO sessions (id, name, user_set_name, working_dir, created_at, updated_at, "
        "accumulated_input_tokens, accumulated_output_tokens, provider_name, model_config_json) "
        "VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, ?)",
        (
            SID,
            "Fix the cart total",
            CWD,
            "2026-03-01T10:00:00Z",
            "2026-03-01T10:05:00Z",
            1500,
            90,
            "anthropic",
            json.dumps({"model_name": "claude-sonnet-4-5", "context_limit": 200000}),
        ),
    )
    edit = {"path": "cart.py", "before": "total = None", "after": "total = 0"}
    rows = [
        ("user", [{"type": "text", "text": "fix the cart total"}], None),
        (
            "assistant",
            [
                {"type": "thinking", "thinking": "look at cart.py", "signature": "sig"},
                {"type": "text", "text": "Fixing it."},
                {
                    "type": "toolRequest",
                    "id": "toolu_1",
                    "toolCall": {"status": "success", "value": {"name": "edit", "arguments": edit}},
                },
                {
                    "type": "toolRequest",
                    "id": "toolu_2",
                    "toolCall": {
                        "status": "success",
                        "value": {"name": "shell", "arguments": {"command": "pytest"}},
                    },
                },
            ],
            None,
        ),
        (
            "user",
            [
                {
                    "type": "toolResponse",
                    "id": "toolu_1",
                    "toolResult": {
                        "status": "success",
                        "value": {"content": [{"type": "text", "text": "edited"}], "isError": False},
                    },
                },
                {
                    "type": "toolResponse",
                    "id": "toolu_2",
                    "toolResult": {"status": "error", "error": "pytest: not found"},
                },
            ],
            None,
        ),
        ("assistant", [{"type": "text", "text": "Done."}], None),
        (
            "user",
            [{"type": "text", "text": "summary of earlier turns"}],
            {"userVisible": False, "agentVisible": True},
        ),
        ("assistant", [{"type": "somethingNew", "x": 1}], None),
    ]
    for n, (role, content, meta) in enumerate(rows):
        conn.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (f"msg_{n}", SID, role, json.dumps(content), 1772359200 + n, json.dumps(meta) if meta else None),
        )
    conn.commit()
    conn.close()
    return path


def test_a_goose_database_is_read_whole_and_left_as_it_was(tmp_path):
    path = goose_db(tmp_path)
    before = path.read_bytes()
    assert [a for a, adapter in ADAPTERS.items() if adapter.claims(path)] == ["goose"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".local" / "share" / "goose")
        refresh_pending(conn)
        assert path.read_bytes() == before
        assert sorted(p.name for p in path.parent.iterdir()) == ["sessions.db"]
        contents = [
            bytes(r[0])
            for r in conn.execute(
                "SELECT raw FROM entries WHERE entry_type NOT IN ('row') ORDER BY byte_offset"
            )
        ]
        source = sqlite3.connect(path)
        stored = [r[0].encode() for r in source.execute("SELECT content_json FROM messages ORDER BY id")]
        source.close()
        assert [c for c in contents if c.startswith(b"[")] == stored
        row = conn.execute(
            "SELECT source, project_path, created_at, title, model, input_tokens, output_tokens "
            "FROM agent_sessions WHERE id = ?",
            (SID,),
        ).fetchone()
        assert row == ("goose", CWD, 1772359200000, "Fix the cart total", "claude-sonnet-4-5", 1500, 90)
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
            ("user", "summary of earlier turns"),
        ]
        assert any(m.thinking == "look at cart.py" for m in shown)
        assert {c.name: c.status for m in shown for c in m.tool_calls} == {
            "edit": "completed",
            "shell": "failed",
        }
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_a_goose_session_resumes_with_its_own_command(tmp_path, fake_agents, sandbox):
    goose_db(tmp_path)
    (fake_agents / "goose").write_text((fake_agents / "claude").read_text())
    (fake_agents / "goose").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".local" / "share" / "goose")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == f"cd {CWD} && goose session --resume --session-id {SID}"
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["goose", str(sandbox), "session", "--resume", "--session-id", SID]
    ]
