"""Crush's project database (core/adapters/crush.py): read without a byte of it changed, every row
kept (a message's parts and a file version's content exact), the session's folder from where the
database sits, messages, reasoning, tool calls joined to the results in the tool messages, the user's
! commands, an agent subagent under the call that started it, the cost crush recorded, edits, and its
resume command."""

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

SID = "6f1d2c3b-4a5e-4f60-8172-93a4b5c6d7e8"
CHILD = "msg-2$$call_agent"

SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
    updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT, todos TEXT);
CREATE TABLE files (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, path TEXT NOT NULL, content TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
    parts TEXT NOT NULL default '[]', model TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    finished_at INTEGER, provider TEXT, is_summary_message INTEGER DEFAULT 0 NOT NULL);
CREATE TABLE read_files (session_id TEXT NOT NULL, path TEXT NOT NULL, read_at INTEGER NOT NULL);
"""


def part(kind: str, **data) -> dict:
    return {"type": kind, "data": data}


def crush_db(root: Path) -> Path:
    project = root / "shop"
    path = project / ".crush" / "crush.db"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute(
        "INSERT INTO sessions (id, title, prompt_tokens, completion_tokens, cost, updated_at, created_at) "
        "VALUES (?, 'Fix the cart total', 9000, 80, 0.42, 1772359300, 1772359200)",
        (SID,),
    )
    conn.execute(
        "INSERT INTO sessions (id, parent_session_id, title, cost, updated_at, created_at) "
        "VALUES (?, ?, 'run the tests', 0.1, 1772359260, 1772359230)",
        (CHILD, SID),
    )
    edit = {"file_path": "cart.py", "old_string": "total = None", "new_string": "total = 0"}
    rows = [
        ("msg-1", SID, "user", [part("text", text="fix the cart total")]),
        (
            "msg-2",
            SID,
            "assistant",
            [
                part("reasoning", thinking="look at cart.py", signature=""),
                part("text", text="Fixing it."),
                part("tool_call", id="call_edit", name="edit", input=json.dumps(edit), finished=True),
                part(
                    "tool_call",
                    id="call_agent",
                    name="agent",
                    input=json.dumps({"prompt": "run the tests"}),
                    finished=True,
                ),
                part("finish", reason="tool_use", time=1772359210),
            ],
        ),
        ("msg-c1", CHILD, "user", [part("text", text="run the tests")]),
        ("msg-c2", CHILD, "assistant", [part("text", text="3 passed")]),
        (
            "msg-3",
            SID,
            "tool",
            [
                part("tool_result", tool_call_id="call_edit", name="edit", content="edited", is_error=False),
                part(
                    "tool_result", tool_call_id="call_agent", name="agent", content="3 passed", is_error=False
                ),
            ],
        ),
        ("msg-4", SID, "user", [part("shell_command", command="git status", output="clean", exit_code=0)]),
        ("msg-5", SID, "assistant", [part("text", text="Done."), part("something_new", x=1)]),
    ]
    for n, (mid, sid, role, parts) in enumerate(rows):
        conn.execute(
            "INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at, provider) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 'anthropic')",
            (
                mid,
                sid,
                role,
                json.dumps(parts),
                "claude-sonnet-4-5" if role == "assistant" else None,
                1772359200 + 10 * n,
                1772359200 + 10 * n,
            ),
        )
    conn.execute(
        "INSERT INTO files VALUES ('f1', ?, 'cart.py', 'total = 0\n', 1, 1772359215, 1772359215)", (SID,)
    )
    conn.execute("INSERT INTO read_files VALUES (?, 'cart.py', 1772359205)", (SID,))
    conn.commit()
    conn.close()
    return path


def test_a_crush_database_is_read_whole_and_left_as_it_was(tmp_path):
    path = crush_db(tmp_path)
    before = path.read_bytes()
    assert [a for a, adapter in ADAPTERS.items() if adapter.claims(path)] == ["crush"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path)
        refresh_pending(conn)
        assert path.read_bytes() == before
        assert sorted(p.name for p in path.parent.iterdir()) == ["crush.db"]
        raws = [bytes(r[0]) for r in conn.execute("SELECT raw FROM entries ORDER BY byte_offset")]
        source = sqlite3.connect(path)
        parts = [r[0].encode() for r in source.execute("SELECT parts FROM messages ORDER BY created_at")]
        source.close()
        assert [r for r in raws if r.startswith(b"[")] == parts
        assert b"total = 0\n" in raws  # the file version, kept
        assert any(r.startswith(b'{"$row":"read_files"') for r in raws)
        row = conn.execute(
            "SELECT source, project_path, created_at, title, model, cost_usd FROM agent_sessions WHERE id = ?",
            (SID,),
        ).fetchone()
        assert row[:5] == (
            "crush",
            str(tmp_path / "shop"),
            1772359200000,
            "Fix the cart total",
            "claude-sonnet-4-5",
        )
        assert abs(row[5] - 0.42) < 1e-9
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        assert any(m.thinking == "look at cart.py" for m in shown)
        calls = {c.name: c.status for m in shown for c in m.tool_calls}
        assert calls == {"edit": "completed", "agent": "completed", "bash": "completed"}
        child = conn.execute(
            "SELECT id, parent_session_id, tool_call_id FROM agent_sessions WHERE is_subagent = 1"
        ).fetchone()
        assert child == (CHILD, SID, "call_agent")
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_a_crush_session_resumes_with_its_own_command(tmp_path, fake_agents, sandbox):
    crush_db(tmp_path)
    (fake_agents / "crush").write_text((fake_agents / "claude").read_text())
    (fake_agents / "crush").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path)
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == f"cd {tmp_path / 'shop'} && crush --session {SID}"
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["crush", str(sandbox), "--session", SID]
    ]
