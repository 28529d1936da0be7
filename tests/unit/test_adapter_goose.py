"""Goose's sessions database (core/adapters/goose.py): read without a byte of it changed, every row
stored, a session's folder, name, model and running tokens, messages with thinking, tool requests
joined to the responses in the next message, edits, and its resume command."""

from __future__ import annotations

import json
import sqlite3

from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.goose import CWD, SID, goose_db
from tests.support import ingest, run_printed, stored_bytes


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


def test_goose_s_projects_file_is_kept_whole(tmp_path):
    """The CLI's `projects.json` (the folders goose ran in, each one's last prompt and session) lies
    beside `sessions/` in its data folder: never archived from the default folders, and listed as
    a file no reader takes when that folder was given. Kept byte for byte from both; Gemini CLI's
    `projects.json` (its project folders' slugs) stays Gemini's."""
    from threadloom.core.ingest.pipeline import run_ingest

    data = goose_db(tmp_path / "home").parent.parent
    projects = data / "projects.json"
    entry = {"path": CWD, "last_accessed": "2026-03-01T10:05:00Z", "last_instruction": "fix it"}
    projects.write_text(json.dumps({"projects": {CWD: {**entry, "last_session_id": SID}}}, indent=2))
    gemini = tmp_path / "home" / ".gemini" / "projects.json"
    gemini.parent.mkdir()
    gemini.write_text(json.dumps({"projects": {CWD: "shop"}}))
    assert [a for a, adapter in ADAPTERS.items() if adapter.claims(projects)] == ["goose"]
    assert [a for a, adapter in ADAPTERS.items() if adapter.claims(gemini)] == ["gemini"]
    for source in ("defaults", "given"):
        conn = db.connect(tmp_path / f"{source}.db")
        try:
            if source == "defaults":
                report = run_ingest(conn, [], include_defaults=True)
                assert not report.errors
            else:
                report = ingest(conn, data)
                assert report.unclaimed == []
            assert stored_bytes(conn, projects) == projects.read_bytes(), source
            kept = conn.execute(
                "SELECT f.kind, e.subtype FROM source_files f JOIN entries e ON e.source_file_id = f.id "
                "WHERE f.path = ?",
                (str(projects),),
            ).fetchall()
            assert kept == [("side", "projects")]
            assert messages(conn, SID)  # the sessions read as before
        finally:
            conn.close()
