"""Crush's project database (core/adapters/crush.py): read without a byte of it changed, every row
kept (a message's parts and a file version's content exact), the session's folder from where the
database sits, messages, reasoning, tool calls joined to the results in the tool messages, the user's
! commands, an agent subagent under the call that started it, the cost crush recorded, edits, and its
resume command."""

from __future__ import annotations

import json
import sqlite3

import pytest
from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import ForkError
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.crush import CHILD, SID, crush_db, part
from tests.support import ingest, run_printed


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


def test_the_go_opencode_s_database_is_read_as_its_own(tmp_path):
    """OpenCode's Go release (mid-2025, which became Crush) kept the same database as
    `<project>/.opencode/opencode.db` (77 public repositories hold one): a folder walked skipped it
    ("not the database of an agent threadloom reads"), and named on its own it was read as Crush's
    with no project. It is OpenCode (Go)'s now, its project the folder holding `.opencode/`; its CLI
    opens no session by id, which its resume says."""
    path = crush_db(tmp_path, ".opencode", "opencode.db")
    assert [a for a, adapter in ADAPTERS.items() if adapter.claims(path)] == ["opencode-go"]
    assert [
        a for a in ("crush", "opencode-go", "opencode-db") if ADAPTERS[a].claims(path, explicit=True)
    ] == ["opencode-go"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path)
        row = conn.execute(
            "SELECT source, project_path, title FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert row == ("opencode-go", str(tmp_path / "shop"), "Fix the cart total")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role == "user"] == [
            ("user", "fix the cart total")
        ]
        with pytest.raises(ForkError, match="no command that opens a session by id"):
            resume_plan(conn, SID)
    finally:
        conn.close()
    crush = crush_db(tmp_path / "other")
    assert [
        a for a in ("crush", "opencode-go", "opencode-db") if ADAPTERS[a].claims(crush, explicit=True)
    ] == ["crush"]


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


def test_an_empty_file_version_and_a_request_that_failed(tmp_path):
    """Crush keeps a new file's first version empty: that empty value took the next record's place
    and the whole database was refused (no session kept; real databases of 2025-2026). A request
    that failed or was cancelled answers with a `finish` part alone: shown where it happened."""
    path = crush_db(tmp_path)
    source = sqlite3.connect(path)
    source.execute("INSERT INTO files VALUES ('f0', ?, 'NOTES.md', '', 0, 1772359212, 1772359212)", (SID,))
    error = part(
        "finish", reason="error", message="API Error", details="400: the organization must be verified"
    )
    for n, (mid, parts) in enumerate(
        [
            ("msg-6", [error]),
            ("msg-7", [part("finish", reason="canceled", time=1772359299)]),
            ("msg-8", [part("text", text="still shown"), part("finish", reason=["error"])]),  # an odd reason
        ]
    ):
        source.execute(
            "INSERT INTO messages (id, session_id, role, parts, created_at, updated_at) "
            "VALUES (?, ?, 'assistant', ?, ?, ?)",
            (mid, SID, json.dumps(parts), 1772359290 + n, 1772359290 + n),
        )
    source.commit()
    source.close()
    conn = db.connect(tmp_path / "ledger.db")
    try:
        report = ingest(conn, tmp_path)
        assert not report.errors
        assert b"" in [
            bytes(r[0]) for r in conn.execute("SELECT raw FROM entries")
        ]  # the empty version, kept
        shown = [(m.role, m.content) for m in messages(conn, SID) if m.role == "system"]
        assert shown == [
            ("system", "API Error: 400: the organization must be verified"),
            ("system", "request canceled"),
        ]
        assert messages(conn, SID)[-1].content == "still shown"
    finally:
        conn.close()
